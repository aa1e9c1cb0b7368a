package loops

import (
	"github.com/neoflow/neoflow/core/bounds"
	"github.com/neoflow/neoflow/core/ir"
)

// LaneAxis chooses the lane axis of statement st for v lanes, by the
// contiguity of the memory accesses along each candidate axis (see
// laneScore):
//
//  1. The innermost left-hand-side axis, when its extent fills at least
//     half the lanes and every access that uses it (the store included)
//     is contiguous in it.
//  2. Otherwise the candidate with the highest score, when that score is
//     positive and above the innermost axis's (0 when its extent is 1),
//     or equal to it where the innermost axis is contiguous but fills
//     fewer than half the lanes: a depthwise 3x3 convolution's weight
//     gradient d_K[c, r, s] += d_Y[n, c, p, q] * X[n, c, p + r - 1, q + s
//     - 1] reduces in 16 lanes over q instead of 3 over s (2-core Xeon:
//     ShuffleNet's, 16 x 60 x 28 x 28, as its own op under NEOFLOW_TUNE=off:
//     2.3 ms against 4.3 ms).
//     Candidates are the reduction axes ('=' statements have none) and the
//     other spatial axes, those with an extent of at least v; ties go to
//     the first in the order: reduction axes innermost first, then spatial
//     axes innermost first.
//  3. Otherwise the innermost left-hand-side axis; ok is false when the
//     statement has no spatial axis (the nest stays scalar).
func LaneAxis(spec *ir.Spec, st *ir.BoundStmt, v int64) (ir.Var, bool) {
	acc := stmtAccesses(st)
	n := len(st.Spatial)
	var inner ir.Var
	innerScore, narrow := int64(0), false
	if n > 0 {
		inner = st.Spatial[n-1]
		if inner.Extent > 1 {
			sc, contiguous := laneScore(spec, acc, inner.Name, v)
			if contiguous && 2*inner.Extent >= v {
				return inner, true
			}
			innerScore, narrow = sc, contiguous
		}
	}
	var cands []ir.Var
	for i := len(st.Reduction) - 1; i >= 0; i-- {
		cands = append(cands, st.Reduction[i])
	}
	for i := n - 2; i >= 0; i-- {
		cands = append(cands, st.Spatial[i])
	}
	var best ir.Var
	bestScore := int64(0)
	for _, c := range cands {
		if c.Extent < max(v, 2) {
			continue
		}
		if sc, _ := laneScore(spec, acc, c.Name, v); sc > bestScore {
			best, bestScore = c, sc
		}
	}
	if bestScore > 0 && (bestScore > innerScore || narrow && bestScore == innerScore) {
		return best, true
	}
	return inner, n > 0
}

// laneScore scores axis as the lane axis of v lanes over the accesses acc
// (the statement's store and the distinct tensor reads of its right-hand
// side): an access in which the axis moves the flat (row-major) offset by
// exactly 1 is contiguous and counts +1; an access that does not use the
// axis is a broadcast and counts 0; any other access is strided and counts
// -(min(|stride|, v) - 1), the extra cache lines a vector of v lanes
// touches, with v - 1 when the stride is not constant (the axis occurs
// under '/', '%', a function, a where or a product with a variable).
// contiguous reports that every access using the axis is contiguous and
// at least one does.
func laneScore(spec *ir.Spec, acc []*ir.Access, axis string, v int64) (score int64, contiguous bool) {
	uses, contig := 0, 0
	for _, a := range acc {
		s, ok := flatStride(spec, a, axis)
		switch {
		case ok && s == 0:
			continue
		case ok && s == 1:
			score++
			contig++
		case ok:
			score -= min(max(s, -s), v) - 1
		default:
			score -= v - 1
		}
		uses++
	}
	return score, uses > 0 && contig == uses
}

// flatStride is how far one step of axis moves the flat row-major offset
// of access a; ok is false when that is not a constant.
func flatStride(spec *ir.Spec, a *ir.Access, axis string) (int64, bool) {
	t := spec.Tensor(a.Tensor)
	if t == nil || len(t.Shape) != len(a.Indices) {
		return 0, false
	}
	total := int64(0)
	for _, term := range flatTerms(a, t.Shape) {
		c, ok := Coefficient(term.index, axis)
		if !ok {
			return 0, false
		}
		total += c * term.stride
	}
	return total, true
}

// Coefficient is the constant c with e = c*axis + (terms without axis),
// read from e's linear form (bounds.Linearize); ok is false when axis
// occurs in a non-linear term.
func Coefficient(e ir.Expr, axis string) (int64, bool) {
	if !Uses(e, axis) {
		return 0, true
	}
	return bounds.Linearize(e).Coef(axis)
}

func intConst(e ir.Expr) (int64, bool) {
	switch e := e.(type) {
	case *ir.IntLit:
		return e.Value, true
	case *ir.Const:
		return e.Int, !e.IsFloat
	}
	return 0, false
}
