package sema

import (
	"github.com/neoflow/neoflow/core/bounds"
	"github.com/neoflow/neoflow/core/ir"
)

// indexLimit bounds every value of index arithmetic: integer literals and
// constants used in it (Check) and every integer sub-expression
// (Specialize) must stay strictly between -indexLimit and indexLimit. The
// kernels compute index expressions in int64 (C's int64_t, where overflow
// is undefined behaviour); the margin below 2^63 leaves room for the
// rearrangements of lowering (x*2 + y*2 for (x + y)*2, offsets).
const indexLimit = int64(1) << 62

// prover proves the accesses of one statement in bounds.
type prover struct {
	op     *ir.Op
	shapes map[string][]int64
	info   *bounds.Info
	// dims, when set, gives each tensor's dimensions as index expressions
	// over size variables (symbolic.go), which the accesses are proven
	// below for every size.
	dims map[string][]ir.Expr
	// guards collects the launch guards of the accesses proven for the
	// sizes that meet them only (accessSymbolic).
	guards []bounds.Guard
}

// proveBounds proves every access of statement s in bounds for the extents
// ext, and every integer sub-expression free of int64 overflow, or returns
// a user error naming the first access and dimension (or expression) it
// cannot prove. See the package documentation for the method.
func proveBounds(op *ir.Op, s *ir.Stmt, ext map[string]int64, shapes map[string][]int64) error {
	vars := map[string]bounds.Interval{}
	for v, n := range ext {
		vars[v] = bounds.Interval{Lo: 0, Hi: n - 1}
	}
	p := &prover{op: op, shapes: shapes, info: bounds.NewInfo()}
	return p.expr(s.RHS, bounds.NewScopeInfo(vars, p.info))
}

// expr proves e where it is evaluated, in scope sc: its sub-expressions
// first, then e itself.
func (p *prover) expr(e ir.Expr, sc *bounds.Scope) error {
	if sc.Dead() {
		return nil // the guards contradict each other: never evaluated
	}
	switch e := e.(type) {
	case *ir.Where:
		if err := p.expr(e.Cond, sc); err != nil {
			return err
		}
		if err := p.expr(e.Then, sc.Guard(e.Cond, false)); err != nil {
			return err
		}
		if err := p.expr(e.Else, sc.Guard(e.Cond, true)); err != nil {
			return err
		}
	case *ir.Binary:
		if e.Op != ir.And && e.Op != ir.Or || !readsTensor(e) {
			return p.children(e, sc)
		}
		// && and || that read a tensor evaluate their right side only
		// where the left side does not settle the value (the renderers
		// and the interpreter keep the branch there; without a read they
		// may evaluate both sides): b > 0 && I[b - 1] == e0 reads I only
		// where b > 0.
		if err := p.expr(e.X, sc); err != nil {
			return err
		}
		if err := p.expr(e.Y, sc.Guard(e.X, e.Op == ir.Or)); err != nil {
			return err
		}
	case *ir.Access:
		// The indices are evaluated before the read: the reads and the
		// arithmetic inside them must be sound too.
		for _, x := range e.Indices {
			if err := p.expr(x, sc); err != nil {
				return err
			}
		}
		return p.access(e, sc)
	default:
		return p.children(e, sc)
	}
	return p.overflow(e, sc)
}

// readsTensor reports whether e reads a tensor.
func readsTensor(e ir.Expr) bool {
	return ir.Contains(e, func(x ir.Expr) bool { _, ok := x.(*ir.Access); return ok })
}

// children proves e's sub-expressions, then e.
func (p *prover) children(e ir.Expr, sc *bounds.Scope) error {
	for _, c := range children(e) {
		if err := p.expr(c, sc); err != nil {
			return err
		}
	}
	return p.overflow(e, sc)
}

// overflow rejects an integer operation whose value may leave
// (-indexLimit, indexLimit). The operands of e are already known to lie
// within it, so e is computed exactly when its own range does.
func (p *prover) overflow(e ir.Expr, sc *bounds.Scope) error {
	switch e.(type) {
	case *ir.Unary, *ir.Binary, *ir.Call, *ir.Where:
	default:
		return nil // leaves: literals are checked by Check, variables are below their extents
	}
	if p.info.Kind(e) != ir.KindIndex {
		return nil
	}
	if r := sc.Bound(e); r.Lo <= -indexLimit || r.Hi >= indexLimit {
		return p.op.Errorf(e.At(), "index arithmetic may overflow int64: %s ranges over %v, beyond the limit of ±2^62 for index values",
			ir.ExprString(e), r)
	}
	return nil
}

// access proves each index of e within its dimension. An index read from
// an index tensor is not proven: the tensor is checked before each launch
// against the extents it indexes (ir.TensorDecl.Limit).
func (p *prover) access(e *ir.Access, sc *bounds.Scope) error {
	if p.dims != nil {
		return p.accessSymbolic(e, sc)
	}
	shape := p.shapes[e.Tensor]
	for d, x := range e.Indices {
		if ir.IsIndirect(x) {
			continue
		}
		size := shape[d]
		r, lowOK, highOK := sc.Within(x, size)
		if !lowOK || !highOK {
			// The range as far as it is known.
			return p.op.Errorf(e.Pos, "access %s may be out of bounds: dimension %d index %s ranges over %v but %s has size %d there",
				ir.ExprString(e), d, ir.ExprString(x), r, e.Tensor, size)
		}
	}
	return nil
}
