package cgen

import (
	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/loops"
)

// blend renders where(C, T, E) inside a lane loop as the branch-free
// nf_blend(C, T', E): both operands are computed for every lane and the
// bits of one are kept, which GCC vectorizes, where the lazy C ? T : E
// with a read in T leaves the whole lane loop scalar. T' is T with each
// tensor read that may lie outside its tensor replaced by
// (C ? read : 0), which GCC turns into a masked load, so no lane reads
// memory its guard excludes. The value is exactly the where's: T' equals
// T wherever C holds, and the arithmetic on the zeros read elsewhere has
// no side effect (no traps, no errno under -fno-math-errno) and is
// discarded.
//
// ok is false, and the caller renders the lazy form, outside lane loops,
// for index and bool wheres, when C reads a tensor where it may lie
// outside it (its && may guard the read), and when E has a read that may
// lie outside its tensor. A C that reads only in bounds (a ReLU's mask in
// its gradient, where(M[i] != 0, 0, G[i])) blends: lazily, the lane loop
// stayed scalar, and ShuffleNet's batch-norm backward ran 3x slower.
func (r *renderer) blend(e *ir.Where) (c cexpr, ok bool, err error) {
	if r.lanes == 0 || r.kind(e) != ir.KindValue || !r.safeReads(e.Cond) || !r.safeReads(e.Else) {
		return cexpr{}, false, nil
	}
	cond, err := r.expr(e.Cond)
	if err != nil {
		return cond, true, err
	}
	r.masks = append(r.masks, cond.at(precBitAn))
	a, err := r.expr(e.Then)
	r.masks = r.masks[:len(r.masks)-1]
	if err != nil {
		return a, true, err
	}
	b, err := r.expr(e.Else)
	if err != nil {
		return b, true, err
	}
	if a, err = r.convert(e.Then, a, ir.KindValue); err != nil {
		return a, true, err
	}
	if b, err = r.convert(e.Else, b, ir.KindValue); err != nil {
		return b, true, err
	}
	r.used["nf_blend"] = true
	return cexpr{cat("nf_blend(", cond.s, ", ", a.s, ", ", b.s, ")"), precAtom, ir.KindValue}, true, nil
}

// maskText is the conjunction of the blend conditions in scope.
func (r *renderer) maskText() *code {
	if len(r.masks) == 1 {
		return r.masks[0]
	}
	parts := make([]any, 0, 2*len(r.masks)+1)
	parts = append(parts, "(")
	for i, m := range r.masks {
		if i > 0 {
			parts = append(parts, " & ")
		}
		parts = append(parts, m)
	}
	parts = append(parts, ")")
	return cat(parts...)
}

// inBounds reports whether every index of the tensor read a provably lies
// within its dimension, whatever the loop variables in scope are.
func (r *renderer) inBounds(a *ir.Access) bool {
	t := r.tensors[a.Tensor]
	if t == nil || len(a.Indices) != len(t.Shape) {
		return false
	}
	for d, x := range a.Indices {
		if t.Sizes != nil && t.Sizes[d] != "" || !loops.IndexWithin(x, t.Shape[d], r.vars) {
			return false
		}
	}
	return true
}

// safeReads reports whether every tensor read in e is in bounds.
func (r *renderer) safeReads(e ir.Expr) bool {
	safe := true
	ir.Walk(e, func(x ir.Expr) bool {
		if a, ok := x.(*ir.Access); ok && !loops.IsLocal(a.Tensor) && !r.inBounds(a) {
			safe = false
		}
		return true
	})
	return safe
}
