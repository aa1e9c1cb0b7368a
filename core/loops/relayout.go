package loops

import (
	"fmt"
	"slices"

	"github.com/pkg/errors"

	"github.com/neoflow/neoflow/core/ir"
)

// Relayout is the layout transformation of a whole tensor that a tiled
// statement reads (Tiling.Relayouts): before the statement's loops, the
// tensor is copied into a buffer with dimension Dim moved innermost (the
// other dimensions keep their order), and every read of the tensor in the
// statement, guarded reads included, reads the copy at the same indices,
// permuted. Where a Pack copies what one read touches, which excludes a
// read under a where (it may lie outside the tensor where its guard
// fails), a Relayout copies the tensor, so any read of it may use the
// copy: the lanes of a lane loop over Dim's index then read consecutive
// elements. The copy is filled once, its outermost copy loop parallel
// when the nest has parallel loops, and every thread reads it; like a
// shared Pack it lives on the launching thread's stack, and the
// relayouts and shared packs of a statement hold at most
// MaxSharedPackElems elements together.
type Relayout struct {
	Tensor string
	Dim    int
}

// relayoutPlan is a checked Relayout.
type relayoutPlan struct {
	local  string
	tensor string
	shape  []int64
	perm   []int // the buffer's dimensions, outermost first, as tensor dimensions
	len    int64
	shared bool
}

// planRelayouts checks t.Relayouts against st and the tensors of spec;
// packed is the number of elements t's shared packs hold.
func planRelayouts(spec *ir.Spec, st *ir.BoundStmt, t *Tiling, packed int64) ([]relayoutPlan, error) {
	var out []relayoutPlan
	total := packed
	for i, r := range t.Relayouts {
		td := spec.Tensor(r.Tensor)
		if td == nil || r.Tensor == st.Stmt.Tensor || !readsTensor(st.Stmt.RHS, r.Tensor) {
			return nil, errors.Errorf("relayout of %s: the statement reads no such tensor", r.Tensor)
		}
		if IndirectlyRead(st.Stmt.RHS, r.Tensor) {
			return nil, errors.Errorf("relayout of %s: the statement reads it as an index, or through one", r.Tensor)
		}
		if r.Dim < 0 || r.Dim >= len(td.Shape)-1 {
			return nil, errors.Errorf("relayout of %s: dimension %d is not one of the %d outer dimensions", r.Tensor, r.Dim, len(td.Shape)-1)
		}
		if slices.ContainsFunc(out, func(p relayoutPlan) bool { return p.tensor == r.Tensor }) {
			return nil, errors.Errorf("relayout of %s: the tensor is relaid twice", r.Tensor)
		}
		pl := relayoutPlan{local: fmt.Sprintf("%srelayout%d", LocalPrefix, i), tensor: r.Tensor, shape: td.Shape, len: 1, shared: t.Parallel > 0}
		for d := range td.Shape {
			if d != r.Dim {
				pl.perm = append(pl.perm, d)
			}
			pl.len *= td.Shape[d]
		}
		pl.perm = append(pl.perm, r.Dim)
		if total += pl.len; total > MaxSharedPackElems {
			return nil, errors.Errorf("relayout of %s: %d elements with the other shared buffers exceed %d", r.Tensor, total, MaxSharedPackElems)
		}
		out = append(out, pl)
	}
	return out, nil
}

// sharedPackElems is the number of elements the packs at position 0 hold.
func sharedPackElems(plans []packPlan) int64 {
	n := int64(0)
	for _, p := range plans {
		if p.at == 0 {
			n += p.len
		}
	}
	return n
}

// index is the buffer element of the tensor element at idx.
func (p *relayoutPlan) index(idx []ir.Expr) ir.Expr {
	at, ext := make([]ir.Expr, len(p.perm)), make([]int64, len(p.perm))
	for i, d := range p.perm {
		at[i], ext[i] = idx[d], p.shape[d]
	}
	return rowMajor(at, ext, 1)
}

// emit appends the buffer and its copy loops to *body. The loop
// variables are named d<k>.rl_<tensor>, a suffix no tile loop has.
func (p *relayoutPlan) emit(body *[]Node) {
	*body = append(*body, &Local{Name: p.local, Len: p.len, Copy: true})
	idx := make([]ir.Expr, len(p.shape))
	c := body
	for i, d := range p.perm {
		v := fmt.Sprintf("d%d.rl_%s", d, p.tensor)
		idx[d] = Var(v)
		if p.shape[d] == 1 {
			idx[d] = Lit(0)
			continue
		}
		lp := &Loop{Var: v, Extent: p.shape[d]}
		if p.shared && i == 0 {
			lp.Parallel, lp.Collapse = true, 1
		}
		*c = append(*c, lp)
		c = &lp.Body
	}
	src := &ir.Access{Tensor: p.tensor, Indices: idx}
	*c = append(*c, &Store{Dst: &ir.Access{Tensor: p.local, Indices: []ir.Expr{p.index(idx)}}, Op: ir.Assign, Value: src})
}

// useRelayouts replaces every read of a relaid tensor in rhs (in loop
// variables), in any position, by the read of its copy. A read under a
// where may lie outside its tensor where the guard fails, and the lane
// code loads it anyway (cgen's blend; GCC may load a local array
// unmasked), so its index into the copy is clamped to the buffer: the
// value loaded there is discarded, and no load leaves the buffer.
func useRelayouts(rhs ir.Expr, plans []relayoutPlan) ir.Expr {
	if len(plans) == 0 {
		return rhs
	}
	var rw func(e ir.Expr, guarded bool) ir.Expr
	list := func(es []ir.Expr, guarded bool) []ir.Expr {
		out := make([]ir.Expr, len(es))
		for i, x := range es {
			out[i] = rw(x, guarded)
		}
		return out
	}
	rw = func(e ir.Expr, guarded bool) ir.Expr {
		switch e := e.(type) {
		case *ir.Access:
			idx := list(e.Indices, guarded)
			for i := range plans {
				if p := &plans[i]; p.tensor == e.Tensor && len(idx) == len(p.shape) {
					at := p.index(idx)
					if guarded {
						at = clampIndex(at, p.len)
					}
					return &ir.Access{Pos: e.Pos, Tensor: p.local, Indices: []ir.Expr{at}}
				}
			}
			return &ir.Access{Pos: e.Pos, Tensor: e.Tensor, Indices: idx, Indirect: e.Indirect}
		case *ir.Unary:
			return &ir.Unary{Pos: e.Pos, Op: e.Op, X: rw(e.X, guarded)}
		case *ir.Binary:
			return &ir.Binary{Pos: e.Pos, Op: e.Op, X: rw(e.X, guarded), Y: rw(e.Y, guarded)}
		case *ir.Call:
			return &ir.Call{Pos: e.Pos, Fn: e.Fn, Args: list(e.Args, guarded)}
		case *ir.Where:
			return &ir.Where{Pos: e.Pos, Cond: rw(e.Cond, guarded), Then: rw(e.Then, true), Else: rw(e.Else, true)}
		}
		return e
	}
	return rw(rhs, false)
}

// clampIndex is min(max(i, 0), n - 1).
func clampIndex(i ir.Expr, n int64) ir.Expr {
	return &ir.Call{Fn: ir.FuncMin, Args: []ir.Expr{&ir.Call{Fn: ir.FuncMax, Args: []ir.Expr{i, Lit(0)}}, Lit(n - 1)}}
}

// IndirectlyRead reports whether e reads tensor name as an index
// (ir.Access.Indirect) or through an index that reads a tensor: such reads
// are not copied into locals, whose elements are values at positions
// known without the data.
func IndirectlyRead(e ir.Expr, name string) bool {
	found := false
	ir.Walk(e, func(x ir.Expr) bool {
		if a, ok := x.(*ir.Access); ok && a.Tensor == name &&
			(a.Indirect || slices.ContainsFunc(a.Indices, func(ix ir.Expr) bool { return readsTensor(ix, "") })) {
			found = true
		}
		return !found
	})
	return found
}
