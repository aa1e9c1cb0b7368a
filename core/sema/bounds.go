package sema

import (
	"github.com/neoflow/neoflow/core/ir"
)

// proveBounds proves every access of statement s in bounds for the extents
// ext, or returns a user error naming the first access and dimension it
// cannot prove. See the package documentation for the method.
func proveBounds(op *ir.Op, s *ir.Stmt, ext map[string]int64, shapes map[string][]int64) error {
	vars := map[string]interval{}
	for v, n := range ext {
		vars[v] = interval{0, n - 1}
	}
	return proveExpr(op, s.RHS, newScope(vars), shapes)
}

func proveExpr(op *ir.Op, e ir.Expr, sc *scope, shapes map[string][]int64) error {
	if sc.dead {
		return nil // the guards contradict each other: never evaluated
	}
	switch e := e.(type) {
	case *ir.Where:
		if err := proveExpr(op, e.Cond, sc, shapes); err != nil {
			return err
		}
		if err := proveExpr(op, e.Then, sc.guard(e.Cond, false), shapes); err != nil {
			return err
		}
		return proveExpr(op, e.Else, sc.guard(e.Cond, true), shapes)
	case *ir.Access:
		shape := shapes[e.Tensor]
		for d, x := range e.Indices {
			size := shape[d]
			l := linearize(x)
			r := sc.intervalOf(x).intersect(sc.eval(l))
			lowOK := r.lo >= 0 || sc.proveNonneg(l)
			highOK := r.hi <= size-1 || sc.proveNonneg(constLinear(size-1).sub(l))
			if !lowOK || !highOK {
				// Show the range as far as it is known.
				if lowOK {
					r.lo = max(r.lo, 0)
				}
				if highOK {
					r.hi = min(r.hi, size-1)
				}
				return op.Errorf(e.Pos, "access %s may be out of bounds: dimension %d index %s ranges over %v but %s has size %d there",
					ir.ExprString(e), d, ir.ExprString(x), r, e.Tensor, size)
			}
		}
		return nil
	}
	for _, c := range children(e) {
		if err := proveExpr(op, c, sc, shapes); err != nil {
			return err
		}
	}
	return nil
}
