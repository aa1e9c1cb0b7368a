package cgen

import (
	"fmt"
	"strings"

	"github.com/pkg/errors"

	"github.com/neoflow/neoflow/core/bounds"
	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/loops"
)

// Launch is one __global__ function of a CUDA module. A module's launches
// run in order on one stream, so each sees everything the ones before it
// wrote: statements run in order, as on the CPU.
type Launch struct {
	// Entry names the __global__ function.
	Entry string
	// Nest is the position in Func.Nests of the statement it computes
	// (part of).
	Nest int
	// Blocks and Threads are the grid and block sizes (x only).
	Blocks  int64
	Threads int
}

// CUDAModule is the CUDA C source of a lowered kernel and its launches.
type CUDAModule struct {
	Source   string
	Launches []Launch
	// Aligned says that the kernels load vectors (16 bytes, or 8 of a
	// 16-bit dtype) from the tensors: every pointer passed must be
	// 16-byte aligned.
	Aligned bool
	// Sizes, for a kernel with symbolic extents (loops.Func.Sizes), names
	// its size variables: every function takes their values after the
	// tensors' pointers, as long long parameters in this order. A launch's
	// Blocks then covers the sizes the kernel was lowered at; its
	// grid-stride loops cover any other.
	Sizes []string
}

// SizedBlocks is the least grid of a grid-stride launch whose iteration
// count follows from sizes (CUDAModule.Sizes): enough blocks to fill a
// large GPU several times whatever the sizes; a block past the iterations
// exits at once.
const SizedBlocks = 1024

// MaxBlocks caps the grid of a launch: a grid-stride loop covers any
// iteration count, and 65536 blocks fill any current GPU many times.
const MaxBlocks = 1 << 16

// maxInt32Index bounds the sizes for which index arithmetic is 32-bit:
// with headroom for the sums of products an index expression forms.
const maxInt32Index = 1 << 30

// RenderCUDA renders fn as CUDA C: one __global__ function per phase of
// each nest, named <symbol>_k<n>. A phase is a parallel loop at the top
// of a nest (or of a block at its top), rendered as a grid-stride loop
// over its collapsed iteration space, one iteration per thread; any other
// run of nodes is a phase of one thread. Every function takes one pointer
// per entry of fn.Spec.Tensors, in order.
func RenderCUDA(fn *loops.Func, symbol string) (*CUDAModule, error) {
	r, err := newRenderer(fn, symbol, true)
	if err != nil {
		return nil, err
	}
	wide := false
	params := make([]string, len(fn.Spec.Tensors))
	for i, t := range fn.Spec.Tensors {
		name, err := tensorName(t.Name)
		if err != nil {
			return nil, errors.Wrap(err, "cgen")
		}
		elem := r.elemType(t)
		if t.Role == ir.RoleInput {
			params[i] = fmt.Sprintf("const %s *__restrict__ %s", elem, name)
		} else {
			params[i] = fmt.Sprintf("%s *__restrict__ %s", elem, name)
		}
		wide = wide || t.Elems() > maxInt32Index
	}
	for _, s := range fn.Sizes {
		params = append(params, "long long "+sizeName(s))
		wide = true // a size may be up to bounds.MaxSize
	}
	sig := strings.Join(params, ", ")
	mod := &CUDAModule{Sizes: fn.Sizes}
	var body strings.Builder
	r.b = &body
	all := make([][]phase, len(fn.Nests))
	for k, n := range fn.Nests {
		if mmaNode(n) != nil {
			continue // one launch of its own, below
		}
		if all[k], err = phases(n.Body); err != nil {
			return nil, errors.Wrapf(err, "cgen: statement %d", n.Index)
		}
	}
	for k := 0; k < len(fn.Nests); {
		if m := horizontalRun(fn.Spec, fn.Nests, all, k); m > 1 && !r.sized {
			phs := make([]phase, m)
			for j := range phs {
				phs[j] = all[k+j][0]
			}
			l, err := r.horizontal(fn.Nests[k:k+m], phs, fmt.Sprintf("%s_k%d", symbol, len(mod.Launches)), sig)
			if err != nil {
				return nil, errors.Wrapf(err, "cgen: statements %d to %d", fn.Nests[k].Index, fn.Nests[k+m-1].Index)
			}
			mod.Launches = append(mod.Launches, l)
			k += m
			continue
		}
		n := fn.Nests[k]
		if m := mmaNode(n); m != nil {
			l, err := r.mmaLaunch(n, m, fmt.Sprintf("%s_k%d", symbol, len(mod.Launches)), sig)
			if err != nil {
				return nil, errors.Wrapf(err, "cgen: statement %d", n.Index)
			}
			mod.Launches = append(mod.Launches, l)
			k++
			continue
		}
		for _, ph := range all[k] {
			l, w, err := r.phaseLaunch(n, ph, fmt.Sprintf("%s_k%d", symbol, len(mod.Launches)), sig)
			if err != nil {
				return nil, errors.Wrapf(err, "cgen: statement %d", n.Index)
			}
			wide = wide || w
			mod.Launches = append(mod.Launches, l)
		}
		k++
	}
	var b strings.Builder
	r.headerComment(&b, false, 0)
	itype := "int"
	if wide {
		itype = "long long"
	}
	fmt.Fprintf(&b, "typedef %s nf_i;\n", itype)
	b.WriteString("#define NAN __int_as_float(0x7fffffff)\n#define INFINITY __int_as_float(0x7f800000)\n\n")
	b.WriteString(r.halfText())
	b.WriteString(r.helperText())
	b.WriteString(body.String())
	mod.Source = b.String()
	mod.Aligned = r.vectors
	return mod, nil
}

// mmaNode is the MMA node that makes up nest n's body, nil when it has
// none.
func mmaNode(n *loops.Nest) *loops.MMA {
	if len(n.Body) != 1 {
		return nil
	}
	m, _ := n.Body[0].(*loops.MMA)
	return m
}

// phaseLaunch renders phase ph of nest n as the __global__ function
// entry; wide reports a grid-stride space past 32-bit indices.
func (r *renderer) phaseLaunch(n *loops.Nest, ph phase, entry, sig string) (l Launch, wide bool, err error) {
	l = Launch{Entry: entry, Nest: n.Index, Blocks: 1, Threads: 1}
	switch {
	case ph.blocks:
		l.Threads = int(ph.threads)
		l.Blocks = min(ph.iters, MaxBlocks)
	case ph.loops != nil:
		wide = ph.iters > maxInt32Index
		l.Threads = n.Schedule.Threads
		if l.Threads == 0 {
			l.Threads = loops.DefaultThreads
		}
		l.Blocks = min((ph.iters+int64(l.Threads)-1)/int64(l.Threads), MaxBlocks)
		if r.sized && sizedLoops(ph.loops) {
			l.Blocks = max(l.Blocks, SizedBlocks) // the sizes of a launch may be larger
		}
	}
	fmt.Fprintf(r.b, "\n// %s\nextern \"C\" __global__ void __launch_bounds__(%d) %s(%s)\n{\n", commentSafe(ir.StmtString(n.Stmt.Stmt)), l.Threads, entry, sig)
	switch {
	case ph.blocks:
		err = r.blockStride(ph.loops, ph.iters)
	case ph.loops != nil:
		err = r.gridStride(ph.loops, r.iterText(ph.loops, ph.iters))
	default:
		err = r.nodes(ph.nodes, 1)
	}
	r.b.WriteString("}\n")
	return l, wide, err
}

// phase is a parallel loop, as the perfectly nested loops it collapses
// (outermost first) and their iteration count, or a block-bound loop
// (blocks set, threads its block size), or nodes run by one thread.
type phase struct {
	loops   []*loops.Loop
	iters   int64
	nodes   []loops.Node
	blocks  bool
	threads int64
}

// phases splits a nest's body into launches. A block at the top is a
// scope only, so the phases of its body are taken, unless a local
// declared before it must stay visible; after a local at one level the
// rest of that level is one thread's phase.
func phases(body []loops.Node) ([]phase, error) {
	var out []phase
	var serial []loops.Node
	flush := func() {
		if len(serial) > 0 {
			out = append(out, phase{nodes: serial})
			serial = nil
		}
	}
	declared := false
	for _, n := range body {
		switch n := n.(type) {
		case *loops.Loop:
			if n.Bind == loops.BindBlock {
				if declared {
					return nil, errors.Errorf("block loop %s follows a local", n.Var)
				}
				flush()
				ph, err := blockPhase(n)
				if err != nil {
					return nil, err
				}
				out = append(out, ph)
				continue
			}
			if n.Parallel && !declared {
				flush()
				ls, iters, err := collapsedSpace(n)
				if err != nil {
					return nil, err
				}
				out = append(out, phase{loops: ls, iters: iters})
				continue
			}
		case *loops.Block:
			if !declared && hasParallel(n.Body) {
				flush()
				inner, err := phases(n.Body)
				if err != nil {
					return nil, err
				}
				out = append(out, inner...)
				continue
			}
		case *loops.Local:
			declared = true
		}
		serial = append(serial, n)
	}
	flush()
	return out, nil
}

// blockPhase is the phase of block loop l: its collapsed loops, whose
// body holds shared Locals and then one thread loop, the block.
func blockPhase(l *loops.Loop) (phase, error) {
	ls, iters, err := collapsedSpace(l)
	if err != nil {
		return phase{}, err
	}
	ph := phase{loops: ls, iters: iters, blocks: true}
	for _, n := range ls[len(ls)-1].Body {
		switch n := n.(type) {
		case *loops.Local:
			if n.Shared {
				continue
			}
		case *loops.Loop:
			if n.Bind == loops.BindThread && ph.threads == 0 {
				_, ph.threads, err = collapsedSpace(n)
				if err != nil {
					return phase{}, err
				}
				if ph.threads > loops.MaxGPUThreads {
					return phase{}, errors.Errorf("thread loop %s has %d threads, more than a block's %d", n.Var, ph.threads, loops.MaxGPUThreads)
				}
				continue
			}
		}
		return phase{}, errors.Errorf("block loop %s: its body must be shared locals and one thread loop, not %T", l.Var, n)
	}
	if ph.threads == 0 {
		return phase{}, errors.Errorf("block loop %s has no thread loop", l.Var)
	}
	return ph, nil
}

// collapsedSpace is the loops that loop l collapses and their iteration
// count.
func collapsedSpace(l *loops.Loop) ([]*loops.Loop, int64, error) {
	ls := collapsed(l)
	if len(ls) != max(l.Collapse, 1) {
		return nil, 0, errors.Errorf("loop %s collapses %d loops, but only %d are perfectly nested", l.Var, l.Collapse, len(ls))
	}
	iters := int64(1)
	for _, x := range ls {
		iters *= x.Extent
	}
	return ls, iters, nil
}

func hasParallel(nodes []loops.Node) bool {
	for _, n := range nodes {
		switch n := n.(type) {
		case *loops.Loop:
			if n.Parallel || n.Bind != loops.BindNone || hasParallel(n.Body) {
				return true
			}
		case *loops.Block:
			if hasParallel(n.Body) {
				return true
			}
		case *loops.If:
			if hasParallel(n.Body) {
				return true
			}
		}
	}
	return false
}

// collapsed lists the loops a parallel loop collapses, outermost first.
func collapsed(l *loops.Loop) []*loops.Loop {
	out := []*loops.Loop{l}
	for len(out) < max(l.Collapse, 1) {
		inner := out[len(out)-1]
		if len(inner.Body) != 1 {
			break
		}
		next, ok := inner.Body[0].(*loops.Loop)
		if !ok {
			break
		}
		out = append(out, next)
	}
	return out
}

// gridStride renders the collapsed loops ls of a parallel loop, n
// iterations in all (C text), as a grid-stride loop, one iteration per
// thread.
func (r *renderer) gridStride(ls []*loops.Loop, n string) error {
	r.line(1, "for (nf_i nf_g = (nf_i)blockIdx.x * blockDim.x + threadIdx.x; nf_g < %s; nf_g += (nf_i)gridDim.x * blockDim.x) {", n)
	err := r.flat(ls, "nf_g", 2)
	r.line(1, "}")
	return err
}

// blockStride renders the collapsed loops ls of a block loop, n
// iterations in all, as a loop over the grid's blocks, one iteration per
// block: every thread of a block runs it, so a barrier inside is reached
// by all of them.
func (r *renderer) blockStride(ls []*loops.Loop, n int64) error {
	if err := fixedLoops(ls); err != nil {
		return err
	}
	r.line(1, "for (nf_i nf_blk = blockIdx.x; nf_blk < %d; nf_blk += gridDim.x) {", n)
	err := r.flat(ls, "nf_blk", 2)
	r.line(1, "}")
	return err
}

// threads renders thread loop l: each thread of the block takes one
// iteration of its collapsed loops, all at once.
func (r *renderer) threads(l *loops.Loop, depth int) error {
	ls, n, err := collapsedSpace(l)
	if err == nil {
		err = fixedLoops(ls)
	}
	if err != nil {
		return err
	}
	if r.block != 0 {
		return errors.Errorf("thread loop %s inside another", l.Var)
	}
	r.line(depth, "{ // %d threads", n)
	r.line(depth+1, "const nf_i nf_tid = threadIdx.x;")
	r.block = n
	err = r.flat(ls, "nf_tid", depth+1)
	r.block = 0
	r.line(depth, "}")
	return err
}

// blockCombine renders a BlockCombine: each warp folds its threads'
// values by shuffles (offsets 16, 8, ..., 1), lane 0 of each warp puts
// its warp's result in the scratch array, and after a barrier the first
// warp folds those the same way and its lane 0 stores the result, then
// runs the combine's Then nodes (a reduction's epilogue). A last barrier
// lets the scratch array be reused.
func (r *renderer) blockCombine(c *loops.BlockCombine, depth int) error {
	if !r.cuda || r.block == 0 {
		return errors.New("a block combine: only CUDA renders it, inside a thread loop")
	}
	if r.block%32 != 0 {
		return errors.Errorf("a block combine over %d threads: shuffles need whole warps", r.block)
	}
	val, err := r.access(c.Value)
	if err != nil {
		return err
	}
	dst, err := r.ref(c.Dst)
	if err != nil {
		return err
	}
	result := "nf_v"
	if r.stored16(c.Dst.Tensor) {
		r.used["nf_st"] = true
		result = "nf_st(nf_v)"
	}
	scratch, err := localName(c.Scratch)
	if err != nil {
		return err
	}
	var op func(a, b string) string
	switch c.Op { // Max and Min fold by the exact rule of package ir
	case ir.Sum:
		op = func(a, b string) string { return a + " + " + b }
	case ir.Prod:
		op = func(a, b string) string { return a + " * " + b }
	case ir.Max, ir.Min:
		h := "nf_min"
		if c.Op == ir.Max {
			h = "nf_max"
		}
		r.used[h] = true
		op = func(a, b string) string { return h + "(" + a + ", " + b + ")" }
	default:
		return errors.Errorf("a block combine by %s", c.Op)
	}
	shuffle := func(d int) {
		r.line(d, "for (int nf_o = 16; nf_o > 0; nf_o /= 2)")
		r.line(d+1, "nf_v = %s;", op("nf_v", "__shfl_down_sync(0xffffffffu, nf_v, nf_o)"))
	}
	r.line(depth, "{ // combine over the block")
	r.line(depth+1, "%s nf_v = %s;", r.ctype, val.s)
	shuffle(depth + 1)
	r.line(depth+1, "if (nf_tid %% 32 == 0)")
	r.line(depth+2, "%s[nf_tid / 32] = nf_v;", scratch)
	r.line(depth+1, "__syncthreads();")
	r.line(depth+1, "if (nf_tid < 32) {")
	r.line(depth+2, "nf_v = nf_tid < %d ? %s[nf_tid] : %s;", r.block/32, scratch, r.floatLit(loops.Identity(c.Op)).s)
	shuffle(depth + 2)
	r.line(depth+2, "if (nf_tid == 0) {")
	r.line(depth+3, "%s = %s;", dst.s, result)
	if err := r.nodes(c.Then, depth+3); err != nil {
		return err
	}
	r.line(depth+2, "}")
	r.line(depth+1, "}")
	r.line(depth+1, "__syncthreads();")
	r.line(depth, "}")
	return nil
}

// vecTypes are the 16-byte vector types of the value types, with their
// zero.
var vecTypes = map[string][2]string{
	"float":  {"float4", "make_float4(0.0f, 0.0f, 0.0f, 0.0f)"},
	"double": {"double2", "make_double2(0.0, 0.0)"},
}

// vecStore renders a vector copy (loops.Store.Vec): one 16-byte load and
// store, or a vector of zeros where the copy's condition fails. A 16-bit
// kernel loads 8 bytes (4 elements, as a uint2) and stores them widened
// to a float4, its shared arrays holding the compute type.
func (r *renderer) vecStore(s *loops.Store, depth int) error {
	vt, ok := vecTypes[r.ctype]
	if r.stype != "" {
		vt, ok = [2]string{"uint2", "make_uint2(0u, 0u)"}, s.Vec == 4
	} else if ok {
		ok = int64(s.Vec)*int64(r.spec.DType.Size()) == 16
	}
	if !r.cuda || !ok || s.Op != ir.Assign {
		return errors.Errorf("a %d-wide vector %s store of %s: only CUDA renders vector copies (16 bytes, or 4 16-bit elements)", s.Vec, s.Op, r.spec.DType)
	}
	dst, err := r.ref(s.Dst)
	if err != nil {
		return err
	}
	src, cond := s.Value, ir.Expr(nil)
	if w, ok := src.(*ir.Where); ok {
		if lit, isLit := w.Else.(*ir.FloatLit); !isLit || lit.Value != 0 {
			return errors.Errorf("a vector store of %s: the else branch must be 0", ir.ExprString(src))
		}
		src, cond = w.Then, w.Cond
	}
	a, ok := src.(*ir.Access)
	if !ok || loops.IsLocal(a.Tensor) {
		return errors.Errorf("a vector store of %s: not a tensor element", ir.ExprString(src))
	}
	from, err := r.ref(a)
	if err != nil {
		return err
	}
	load := fmt.Sprintf("*(const %s *)&%s", vt[0], from.s)
	if cond != nil {
		c, err := r.expr(cond)
		if err != nil {
			return err
		}
		load = fmt.Sprintf("%s ? %s : %s", c.s, load, vt[1])
	}
	r.vectors = true
	if r.stype == "" {
		r.line(depth, "*(%s *)&%s = %s;", vt[0], dst.s, load)
		return nil
	}
	// The zero bits are +0 in both 16-bit formats; the lower half of each
	// word is the element at the lower address (the GPU is little-endian).
	r.used["nf_ld"] = true
	r.line(depth, "{")
	r.line(depth+1, "const uint2 nf_w = %s;", load)
	r.line(depth+1, "*(float4 *)&%s = make_float4(nf_ld((%[2]s)(nf_w.x & 0xffffu)), nf_ld((%[2]s)(nf_w.x >> 16)), nf_ld((%[2]s)(nf_w.y & 0xffffu)), nf_ld((%[2]s)(nf_w.y >> 16)));", dst.s, r.stype)
	r.line(depth, "}")
	return nil
}

// flat binds the variables of the collapsed loops ls from the flat index
// g (the last loop varying fastest, so consecutive threads or blocks take
// consecutive iterations of the innermost loop) and renders the innermost
// body.
func (r *renderer) flat(ls []*loops.Loop, g string, depth int) error {
	inner, sized := int64(1), []string(nil) // the iterations of the loops inside: a constant times sizes
	for i := len(ls) - 1; i >= 0; i-- {
		lp := ls[i]
		v, err := varName(lp.Var)
		if err != nil {
			return err
		}
		if _, dup := r.vars[lp.Var]; dup {
			return errors.Errorf("loop variable %s shadows an enclosing loop", lp.Var)
		}
		one, ext, in := lp.Extent == 1 && lp.Size == "", r.extent(lp), innerText(inner, sized)
		x := g
		switch {
		case one:
			x = "0"
		case i > 0 && in != "1":
			x = fmt.Sprintf("(%s / %s) %% %s", g, in, ext)
		case i > 0:
			x = fmt.Sprintf("%s %% %s", g, ext)
		case in != "1":
			x = fmt.Sprintf("%s / %s", g, in)
		}
		r.line(depth, "const nf_i %s = %s;", v, x)
		if one {
			r.line(depth, "(void)%s; // a single iteration, which the body may not use", v)
		}
		r.vars[lp.Var] = lp.Extent
		if lp.Size != "" {
			r.vars[lp.Var] = bounds.MaxSize
			sized = append(sized, sizeName(lp.Size))
		} else {
			inner *= lp.Extent
		}
	}
	err := r.nodes(ls[len(ls)-1].Body, depth)
	for _, lp := range ls {
		delete(r.vars, lp.Var)
	}
	return err
}
