package cgen

import (
	"fmt"
	"strings"

	"github.com/pkg/errors"

	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/loops"
)

// mmaStep is the positions of K per step; mmaRow the elements from one
// row of a shared tile to the next, 8 more than a step:
// rows 40 elements (20 words) apart put the eight rows a warp's fragment
// loads read in distinct banks.
const (
	mmaStep = 32
	mmaRow  = mmaStep + 8
)

// mmaLaunch renders the contraction of nest n (an MMA node, see
// loops.MMATiling) as the __global__ function entry: a grid-stride loop
// over the output tiles, batch entry outermost.
func (r *renderer) mmaLaunch(n *loops.Nest, m *loops.MMA, entry, sig string) (Launch, error) {
	if r.stype == "" {
		return Launch{}, errors.New("a Tensor Core contraction needs a 16-bit dtype")
	}
	t := m.Tiling
	threads, wn := 32*t.WarpCount(), t.WarpCount()/2
	me, ne, ke := loops.GroupExtent(m.M), loops.GroupExtent(m.N), loops.GroupExtent(m.K)
	mb, nb, tiles := m.TileCounts(t)
	l := Launch{Entry: entry, Nest: n.Index, Blocks: min(tiles, MaxBlocks), Threads: int(threads)}
	names := map[string]string{}
	for _, x := range []string{m.A, m.B, m.C} {
		c, err := tensorName(x)
		if err != nil {
			return Launch{}, err
		}
		names[x] = c
	}
	sa := func(a loops.MMAAxis) int64 { return a.SA }
	sb := func(a loops.MMAAxis) int64 { return a.SB }
	sc := func(a loops.MMAAxis) int64 { return a.SC }
	// Offset functions of the flattened groups, one per operand and group.
	offs := []struct {
		name   string
		axes   []loops.MMAAxis
		stride func(loops.MMAAxis) int64
	}{{"am", m.M, sa}, {"ak", m.K, sa}, {"bn", m.N, sb}, {"bk", m.K, sb}, {"cm", m.M, sc}, {"cn", m.N, sc}}
	for _, o := range offs {
		fmt.Fprintf(r.b, "\nstatic __device__ __forceinline__ nf_i %s_%s(nf_i q)\n{\n\t%s\n}\n", entry, o.name, offsetBody(o.axes, o.stride))
	}
	fmt.Fprintf(r.b, "\n// %s\n// %s\nextern \"C\" __global__ void __launch_bounds__(%d) %s(%s)\n{\n",
		commentSafe(ir.StmtString(n.Stmt.Stmt)), t.String(), threads, entry, sig)
	mt, nt := t.BM/32, t.BN/wn/8
	ca := r.newMMACopy("a", names[m.A], "nf_oa", entry+"_am", entry+"_ak", "nf_m0", t.BM, me, ke, threads, m.M, m.K, sa)
	cb := r.newMMACopy("b", names[m.B], "nf_ob", entry+"_bn", entry+"_bk", "nf_n0", t.BN, ne, ke, threads, m.N, m.K, sb)
	r.line(1, "__shared__ __align__(16) unsigned short nf_sa[2][%d], nf_sb[2][%d];", t.BM*mmaRow, t.BN*mmaRow)
	r.line(1, "const int nf_lane = threadIdx.x & 31, nf_g = nf_lane >> 2, nf_t = nf_lane & 3;")
	r.line(1, "const int nf_wm = (threadIdx.x >> 5) / %d, nf_wn = (threadIdx.x >> 5) %% %d;", wn, wn)
	r.line(1, "for (nf_i nf_tile = blockIdx.x; nf_tile < %d; nf_tile += gridDim.x) {", tiles)
	r.line(2, "nf_i nf_q = nf_tile;")
	r.line(2, "const nf_i nf_n0 = nf_q %% %d * %d;", nb, t.BN)
	r.line(2, "nf_q /= %d;", nb)
	r.line(2, "const nf_i nf_m0 = nf_q %% %d * %d;", mb, t.BM)
	r.line(2, "nf_q /= %d;", mb)
	r.line(2, "nf_i nf_oa = 0, nf_ob = 0, nf_oc = 0;")
	for i := len(m.Batch) - 1; i >= 0; i-- {
		a := m.Batch[i]
		r.line(2, "{ const nf_i c = nf_q %% %d; nf_q /= %d; nf_oa += c * %d; nf_ob += c * %d; nf_oc += c * %d; }", a.Extent, a.Extent, a.SA, a.SB, a.SC)
	}
	r.line(2, "float nf_acc[%d][%d][4];", mt, nt)
	r.line(2, "for (int i = 0; i < %d; i++) for (int j = 0; j < %d; j++) for (int e = 0; e < 4; e++) nf_acc[i][j][e] = 0.0f;", mt, nt)
	// Software pipeline: the next step's tiles are loaded into registers
	// while this step's are multiplied from one of two shared buffers,
	// then stored into the other; one barrier per step.
	ca.declare(2)
	cb.declare(2)
	ca.load(2, "0")
	cb.load(2, "0")
	ca.store(2, "0")
	cb.store(2, "0")
	r.line(2, "__syncthreads();")
	r.line(2, "for (nf_i nf_k0 = 0, nf_buf = 0; nf_k0 < %d; nf_k0 += %d, nf_buf ^= 1) {", ke, mmaStep)
	r.line(3, "const bool nf_more = nf_k0 + %d < %d;", mmaStep, ke)
	r.line(3, "if (nf_more) {")
	ca.load(4, fmt.Sprintf("nf_k0 + %d", mmaStep))
	cb.load(4, fmt.Sprintf("nf_k0 + %d", mmaStep))
	r.line(3, "}")
	r.mmaMultiply(t, mt, nt, wn)
	r.line(3, "if (nf_more) {")
	ca.store(4, "nf_buf ^ 1")
	cb.store(4, "nf_buf ^ 1")
	r.line(3, "}")
	r.line(3, "__syncthreads();")
	r.line(2, "}")
	r.mmaStore(m, t, mt, nt, wn, names[m.C], entry)
	r.line(1, "}")
	r.b.WriteString("}\n")
	r.used["nf_mma"], r.used["nf_st"] = true, true
	return l, nil
}

// mmaMultiply renders one step's multiplication: per 16 positions of K,
// each warp loads its A and B fragments from the current shared buffers
// and issues mt x nt mma instructions.
func (r *renderer) mmaMultiply(t loops.MMATiling, mt, nt, wn int64) {
	r.line(3, "const unsigned short *nf_ta = nf_sa[nf_buf], *nf_tb = nf_sb[nf_buf];")
	r.line(3, "#pragma unroll")
	r.line(3, "for (int nf_kk = 0; nf_kk < %d; nf_kk += 16) {", mmaStep)
	r.line(4, "unsigned nf_fa[%d][4], nf_fb[%d][2];", mt, nt)
	r.line(4, "#pragma unroll")
	r.line(4, "for (int i = 0; i < %d; i++) {", mt)
	r.line(5, "const unsigned short *p = &nf_ta[(nf_wm * %d + i * 16 + nf_g) * %d + nf_kk + 2 * nf_t];", t.BM/2, mmaRow)
	r.line(5, "nf_fa[i][0] = *(const unsigned *)p;")
	r.line(5, "nf_fa[i][1] = *(const unsigned *)(p + %d);", 8*mmaRow)
	r.line(5, "nf_fa[i][2] = *(const unsigned *)(p + 8);")
	r.line(5, "nf_fa[i][3] = *(const unsigned *)(p + %d);", 8*mmaRow+8)
	r.line(4, "}")
	r.line(4, "#pragma unroll")
	r.line(4, "for (int j = 0; j < %d; j++) {", nt)
	r.line(5, "const unsigned short *p = &nf_tb[(nf_wn * %d + j * 8 + nf_g) * %d + nf_kk + 2 * nf_t];", t.BN/wn, mmaRow)
	r.line(5, "nf_fb[j][0] = *(const unsigned *)p;")
	r.line(5, "nf_fb[j][1] = *(const unsigned *)(p + 8);")
	r.line(4, "}")
	r.line(4, "#pragma unroll")
	r.line(4, "for (int i = 0; i < %d; i++)", mt)
	r.line(5, "#pragma unroll")
	r.line(5, "for (int j = 0; j < %d; j++) nf_mma(nf_acc[i][j], nf_fa[i], nf_fb[j]);", nt)
	r.line(3, "}")
}

// mmaStore renders the stores of a thread's accumulators into c, each
// rounded once, guarded by the M and N extents.
func (r *renderer) mmaStore(m *loops.MMA, t loops.MMATiling, mt, nt, wn int64, c, entry string) {
	me, ne := loops.GroupExtent(m.M), loops.GroupExtent(m.N)
	r.line(2, "for (int i = 0; i < %d; i++)", mt)
	r.line(3, "for (int j = 0; j < %d; j++)", nt)
	r.line(4, "for (int h = 0; h < 2; h++) {")
	r.line(5, "const nf_i m = nf_m0 + nf_wm * %d + i * 16 + nf_g + 8 * h, n = nf_n0 + nf_wn * %d + j * 8 + 2 * nf_t;", t.BM/2, t.BN/wn)
	r.line(5, "if (m >= %d) continue;", me)
	r.line(5, "const nf_i o = nf_oc + %s_cm(m);", entry)
	r.line(5, "if (n < %d) %s[o + %s_cn(n)] = nf_st(nf_acc[i][j][2 * h]);", ne, c, entry)
	r.line(5, "if (n + 1 < %d) %s[o + %s_cn(n + 1)] = nf_st(nf_acc[i][j][2 * h + 1]);", ne, c, entry)
	r.line(4, "}")
}

// offsetBody is the body of an offset function: the element offset of
// position q of a flattened axis group (last axis fastest), by stride.
func offsetBody(axes []loops.MMAAxis, stride func(loops.MMAAxis) int64) string {
	var terms []string
	for i := len(axes) - 1; i >= 0; i-- {
		a := axes[i]
		if i == 0 {
			terms = append(terms, fmt.Sprintf("o += q * %d;", stride(a)))
			break
		}
		terms = append(terms, fmt.Sprintf("o += q %% %d * %d; q /= %d;", a.Extent, stride(a), a.Extent))
	}
	return "nf_i o = 0;\n\t" + strings.Join(terms, "\n\t") + "\n\treturn o;"
}

// mmaCopy copies one operand's tile (rows rows from row0 of its row
// group, 32 positions from a step's start in K) into a shared buffer,
// row-major with rows mmaRow apart, zeros past the extents re and ke, in
// two parts: load, into each thread's registers, and store, from them. A
// 16-byte vector at a time along K or along the rows where that group's
// innermost axis is contiguous in the operand (extent a multiple of 8 and
// every other stride too, so a vector never straddles an edge or a
// misaligned address); else an element at a time, consecutive threads
// along the operand's smaller stride. In a copy of vectors along the rows
// consecutive threads take consecutive positions of K, so that the eight
// elements each stores land in distinct banks.
type mmaCopy struct {
	r                           *renderer
	reg, sh                     string // register array, shared array
	x, base, rowOff, kOff, row0 string
	rows, re, ke, threads       int64
	mode                        int // mmaKVec, mmaRowVec or mmaScalar
	rowFastest                  bool
	items                       int64 // elements or vectors of a tile
	per                         int64 // of them per thread
}

const (
	mmaKVec = iota
	mmaRowVec
	mmaScalar
)

func (r *renderer) newMMACopy(op, x, base, rowOff, kOff, row0 string, rows, re, ke, threads int64, rg, kg []loops.MMAAxis, stride func(loops.MMAAxis) int64) *mmaCopy {
	c := &mmaCopy{r: r, reg: "nf_r" + op, sh: "nf_s" + op, x: x, base: base, rowOff: rowOff, kOff: kOff, row0: row0, rows: rows, re: re, ke: ke, threads: threads}
	innerR, innerK := rg[len(rg)-1], kg[len(kg)-1]
	aligned := func(inner loops.MMAAxis) bool {
		if stride(inner) != 1 || inner.Extent%8 != 0 {
			return false
		}
		for _, g := range [][]loops.MMAAxis{rg, kg} {
			for _, a := range g {
				if a != inner && stride(a)%8 != 0 {
					return false
				}
			}
		}
		return true
	}
	switch {
	case aligned(innerK):
		c.mode = mmaKVec
	case aligned(innerR):
		c.mode = mmaRowVec
	default:
		c.mode = mmaScalar
		c.rowFastest = stride(innerR) < stride(innerK)
	}
	c.items = rows * mmaStep
	if c.mode != mmaScalar {
		c.items /= 8
		r.vectors = true
	}
	c.per = (c.items + threads - 1) / threads
	return c
}

// coords declares rr and cc, the tile row and K position of item e.
func (c *mmaCopy) coords(depth int) {
	switch {
	case c.mode == mmaKVec:
		c.r.line(depth, "const int rr = e >> 2, cc = (e & 3) * 8;")
	case c.mode == mmaRowVec:
		c.r.line(depth, "const int cc = e & 31, rr = (e >> 5) * 8;")
	case c.rowFastest:
		c.r.line(depth, "const int rr = e %% %d, cc = e / %d;", c.rows, c.rows)
	default:
		c.r.line(depth, "const int rr = e >> 5, cc = e & 31;")
	}
}

func (c *mmaCopy) declare(depth int) {
	typ := "uint4"
	if c.mode == mmaScalar {
		typ = "unsigned short"
	}
	c.r.line(depth, "%s %s[%d];", typ, c.reg, c.per)
}

// each opens the loop over a thread's items (u its index, e the item's).
func (c *mmaCopy) each(depth int, body func(depth int)) {
	c.r.line(depth, "#pragma unroll")
	c.r.line(depth, "for (int u = 0; u < %d; u++) {", c.per)
	c.r.line(depth+1, "const int e = threadIdx.x + u * %d;", c.threads)
	if c.per*c.threads > c.items {
		c.r.line(depth+1, "if (e >= %d) break;", c.items)
	}
	c.coords(depth + 1)
	body(depth + 1)
	c.r.line(depth, "}")
}

// load reads the step starting at K position k0 into the registers.
func (c *mmaCopy) load(depth int, k0 string) {
	c.each(depth, func(d int) {
		c.r.line(d, "const nf_i m = %s + rr, k = %s + cc;", c.row0, k0)
		in := fmt.Sprintf("m < %d && k < %d", c.re, c.ke)
		src := fmt.Sprintf("%s[%s + %s(m) + %s(k)]", c.x, c.base, c.rowOff, c.kOff)
		if c.mode == mmaScalar {
			c.r.line(d, "%s[u] = %s ? %s : (unsigned short)0;", c.reg, in, src)
			return
		}
		c.r.line(d, "%s[u] = %s ? *(const uint4 *)&%s : make_uint4(0, 0, 0, 0);", c.reg, in, src)
	})
}

// store writes the registers into shared buffer buf.
func (c *mmaCopy) store(depth int, buf string) {
	c.each(depth, func(d int) {
		switch c.mode {
		case mmaKVec:
			c.r.line(d, "*(uint4 *)&%s[%s][rr * %d + cc] = %s[u];", c.sh, buf, mmaRow, c.reg)
		case mmaRowVec:
			c.r.line(d, "const unsigned short *h = (const unsigned short *)&%s[u];", c.reg)
			c.r.line(d, "for (int j = 0; j < 8; j++) %s[%s][(rr + j) * %d + cc] = h[j];", c.sh, buf, mmaRow)
		default:
			c.r.line(d, "%s[%s][rr * %d + cc] = %s[u];", c.sh, buf, mmaRow, c.reg)
		}
	})
}

// mmaText is nf_mma of a 16-bit type: D += A x B for one m16n8k16 tile of
// a warp, in the fragment layout of PTX's mma.sync (A row-major: a[0] row
// g, k 2t and 2t+1; a[1] row g+8; a[2] and a[3] the same rows at k+8;
// B column-major: b[0] column g, k 2t and 2t+1; b[1] at k+8; D: d[0..1]
// row g, columns 2t and 2t+1, d[2..3] row g+8; g = lane/4, t = lane%4).
// From sm_80 it is the instruction; elsewhere (and in the host emulator)
// each lane gathers the rows and columns it needs by warp shuffles.
func mmaText(d ir.DType) string {
	kind := "f16"
	if d == ir.BFloat16 {
		kind = "bf16"
	}
	return strings.ReplaceAll(mmaTemplate, "$K", kind)
}

const mmaTemplate = `#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ < 800
static __device__ __forceinline__ float nf_lo(unsigned x) { return nf_ld((unsigned short)(x & 0xffffu)); }
static __device__ __forceinline__ float nf_hi(unsigned x) { return nf_ld((unsigned short)(x >> 16)); }
#endif

static __device__ __forceinline__ void nf_mma(float *d, const unsigned *a, const unsigned *b)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
	asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.$K.$K.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
		: "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
		: "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#else
	const int g = (threadIdx.x & 31) >> 2, t = threadIdx.x & 3;
	for (int s = 0; s < 4; s++) {
		const int ra = g * 4 + s, rb0 = 2 * t * 4 + s, rb1 = (2 * t + 1) * 4 + s;
		const unsigned a0 = __shfl_sync(0xffffffffu, a[0], ra), a1 = __shfl_sync(0xffffffffu, a[1], ra);
		const unsigned a2 = __shfl_sync(0xffffffffu, a[2], ra), a3 = __shfl_sync(0xffffffffu, a[3], ra);
		const unsigned b00 = __shfl_sync(0xffffffffu, b[0], rb0), b01 = __shfl_sync(0xffffffffu, b[1], rb0);
		const unsigned b10 = __shfl_sync(0xffffffffu, b[0], rb1), b11 = __shfl_sync(0xffffffffu, b[1], rb1);
		d[0] += nf_lo(a0) * nf_lo(b00) + nf_hi(a0) * nf_hi(b00) + nf_lo(a2) * nf_lo(b01) + nf_hi(a2) * nf_hi(b01);
		d[1] += nf_lo(a0) * nf_lo(b10) + nf_hi(a0) * nf_hi(b10) + nf_lo(a2) * nf_lo(b11) + nf_hi(a2) * nf_hi(b11);
		d[2] += nf_lo(a1) * nf_lo(b00) + nf_hi(a1) * nf_hi(b00) + nf_lo(a3) * nf_lo(b01) + nf_hi(a3) * nf_hi(b01);
		d[3] += nf_lo(a1) * nf_lo(b10) + nf_hi(a1) * nf_hi(b10) + nf_lo(a3) * nf_lo(b11) + nf_hi(a3) * nf_hi(b11);
	}
#endif
}

`
