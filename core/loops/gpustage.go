package loops

import (
	"maps"
	"slices"
	"strings"

	"github.com/pkg/errors"

	"github.com/neoflow/neoflow/core/ir"
)

// stagePlan is one staged read: its box, origin and shared buffer.
type stagePlan struct {
	local string
	src   *ir.Access // the read in loop variables
	sub   string     // its text
	lo    []ir.Expr  // the box's origin: src's indices at inner variables 0
	box   []int64
	off   []ir.Expr // src's indices minus lo, in inner variables
	n     int64     // elements of the box
	len   int64     // n rounded up to the block size
	// vec is the elements each thread copies at once (vecWidth, which
	// divides n), rounds how many times each thread copies.
	vec, rounds int64
}

// stage plans the shared copy of read (in statement variables).
func (p *gpuPlan) stage(spec *ir.Spec, local string, read *ir.Access) (stagePlan, error) {
	if t := spec.Tensor(read.Tensor); t != nil && t.DType.Integer() {
		// The shared copy holds values of the compute type; the copy's
		// vector loads assume the tensor's elements are of the kernel's.
		return stagePlan{}, errors.Errorf("stage of %s: an integer tensor", ir.ExprString(read))
	}
	src := Subst(read, p.env).(*ir.Access)
	sp := stagePlan{local: local, src: src, sub: ir.ExprString(src), n: 1}
	zero := map[string]ir.Expr{}
	for v := range p.inner {
		zero[v] = Lit(0)
	}
	vars := slices.Sorted(maps.Keys(p.inner))
	for _, x := range src.Indices {
		box := int64(1)
		var off ir.Expr = Lit(0)
		for _, v := range vars {
			c, ok := Coefficient(x, v)
			if !ok || c < 0 {
				return stagePlan{}, errors.Errorf("stage of %s: index %s is not affine with non-negative coefficients in the tile's loop variable %s", ir.ExprString(read), ir.ExprString(x), v)
			}
			box += c * (p.inner[v] - 1)
			off = Add(off, Mul(Var(v), Lit(c)))
		}
		sp.lo = append(sp.lo, Subst(x, zero))
		sp.box = append(sp.box, box)
		sp.off = append(sp.off, off)
		sp.n *= box
	}
	sp.len = (sp.n + p.threads - 1) / p.threads * p.threads
	t := spec.Tensor(read.Tensor)
	if t == nil || len(t.Shape) != len(sp.box) {
		return stagePlan{}, errors.Errorf("stage of %s: no such tensor", ir.ExprString(read))
	}
	sp.vec = vecWidth(spec, sp, t, p.ext)
	sp.rounds = (sp.n/sp.vec + p.threads - 1) / p.threads
	return sp, nil
}

// access is the staged copy's element that src reads.
func (sp *stagePlan) access() *ir.Access {
	return &ir.Access{Tensor: sp.local, Indices: []ir.Expr{flatten(sp.off, sp.box)}}
}

// flatten is the row-major offset of coordinates xs in a box of extents
// ext: sum of xs[d] * prod(ext[d+1:]).
func flatten(xs []ir.Expr, ext []int64) ir.Expr {
	var x ir.Expr = Lit(0)
	stride := int64(1)
	for d := len(xs) - 1; d >= 0; d-- {
		x = Add(Mul(xs[d], Lit(stride)), x)
		stride *= ext[d]
	}
	return x
}

// unflatten is flatten's inverse: the coordinates of row-major offset q
// in a box of extents ext, (q / prod(ext[d+1:])) % ext[d]. bounded says
// that q lies in the box, so the outermost coordinate needs no modulo.
func unflatten(q ir.Expr, ext []int64, bounded bool) []ir.Expr {
	out := make([]ir.Expr, len(ext))
	stride := int64(1)
	for d := len(ext) - 1; d >= 0; d-- {
		x := ir.SimplifyNode(&ir.Binary{Op: ir.Div, X: q, Y: Lit(stride)}, ir.KindMemo{})
		if d > 0 || !bounded {
			x = ir.SimplifyNode(&ir.Binary{Op: ir.Mod, X: x, Y: Lit(ext[d])}, ir.KindMemo{})
		}
		out[d] = x
		stride *= ext[d]
	}
	return out
}

// copyStage appends the cooperative copy of sp to *body: the block's
// threads copy the box's elements e = tid, tid + T, ... (T threads), each
// from the tensor element lo + the box coordinates of e, or 0 where that
// may lie outside the tensor.
func (p *gpuPlan) copyStage(spec *ir.Spec, body *[]Node, sp stagePlan, threads []ir.Var) {
	ts := make([]ir.Expr, len(threads))
	ext := make([]int64, len(threads))
	for i, v := range threads {
		ts[i], ext[i] = Var(v.Name), v.Extent
	}
	tid := flatten(ts, ext)
	around := map[string]int64{} // the loops around the copy
	for v, n := range p.ext {
		if !p.perThread[v] {
			around[v] = n
		}
	}
	t := spec.Tensor(sp.src.Tensor)
	vec, rounds := sp.vec, sp.rounds
	e := tid // the vector this thread copies
	if rounds > 1 {
		c := strings.TrimPrefix(sp.local, LocalPrefix) + ".c"
		lp := &Loop{Var: c, Extent: rounds}
		*body = append(*body, lp)
		body = &lp.Body
		e = Add(Mul(Var(c), Lit(p.threads)), tid)
		around[c] = rounds
	}
	nv := sp.n / vec
	guarded := rounds*p.threads > nv
	ve := e
	if guarded && vec > 1 {
		// Only vectors ve < nv are copied (the guard below); ve % nv keeps
		// the index within the array where the guard does not count.
		e = &ir.Binary{Op: ir.Mod, X: e, Y: Lit(nv)}
	}
	e = Mul(e, Lit(vec))
	src := &ir.Access{Tensor: sp.src.Tensor}
	var inside []ir.Expr
	for d, coord := range unflatten(e, sp.box, !guarded || vec > 1) {
		x := Add(sp.lo[d], coord)
		src.Indices = append(src.Indices, x)
		lo, hi, ok := IndexRange(x, around)
		if !ok || lo < 0 {
			inside = append(inside, &ir.Binary{Op: ir.Ge, X: x, Y: Lit(0)})
		}
		if !ok || hi >= t.Shape[d] {
			inside = append(inside, &ir.Binary{Op: ir.Lt, X: x, Y: Lit(t.Shape[d])})
		}
	}
	var val ir.Expr = src
	if c := ir.AndAll(inside); c != nil {
		val = &ir.Where{Cond: c, Then: src, Else: &ir.FloatLit{Value: 0}}
	}
	var n Node = &Store{Dst: &ir.Access{Tensor: sp.local, Indices: []ir.Expr{e}}, Op: ir.Assign, Value: val, Vec: int(vec)}
	if guarded {
		n = &If{Cond: &ir.Binary{Op: ir.Lt, X: ve, Y: Lit(nv)}, Body: []Node{n}}
	}
	*body = append(*body, n)
}

// vecWidth is the elements each thread of a cooperative copy moves at
// once: a vector (4 float32, 2 float64, or 4 float16/bfloat16, which
// widen to the 16 bytes of 4 float32 in shared memory) when the box's rows are
// whole vectors of the tensor's innermost dimension at vector-aligned
// offsets, for every value of the variables in around (the block and
// step loops that the box's origin depends on); 1 otherwise.
// Every vector then lies wholly inside or wholly outside the tensor,
// since its bounds on the innermost dimension are vector multiples too.
func vecWidth(spec *ir.Spec, sp stagePlan, t *ir.TensorDecl, around map[string]int64) int64 {
	v := map[ir.DType]int64{ir.Float32: 4, ir.Float64: 2, ir.Float16: 4, ir.BFloat16: 4}[spec.DType]
	last := len(sp.box) - 1
	if v == 0 || last < 0 || sp.box[last]%v != 0 || t.Shape[last]%v != 0 {
		return 1
	}
	lo := sp.lo[last]
	if _, _, ok := IndexRange(lo, around); !ok {
		return 1
	}
	zero := map[string]ir.Expr{}
	for x := range around {
		c, ok := Coefficient(lo, x)
		if !ok || c%v != 0 {
			return 1
		}
		zero[x] = Lit(0)
	}
	if k, _, ok := IndexRange(Subst(lo, zero), nil); !ok || k%v != 0 {
		return 1
	}
	return v
}
