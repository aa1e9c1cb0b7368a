package sema

import (
	"github.com/neoflow/neoflow/core/ir"
)

// checkCasts allows a cast to an integer type (int32(...), int64(...))
// only as the whole right-hand side of an '=' statement, which makes the
// statement's tensor an integer tensor: an integer sum or a cast inside
// arithmetic would compute in the float type and round where the user
// expects integers.
func (c *checker) checkCasts(s *ir.Stmt) error {
	var err error
	ir.Walk(s.RHS, func(e ir.Expr) bool {
		call, ok := e.(*ir.Call)
		if !ok || call.Fn.CastType() == ir.InvalidDType || err != nil {
			return err == nil
		}
		switch {
		case e != s.RHS:
			err = c.op.Errorf(call.Pos, "%s(...) may only be a statement's whole right-hand side (it makes %s an integer tensor); inside an expression use trunc(...)",
				call.Fn, s.Tensor)
		case s.Reduce != ir.Assign:
			err = c.op.Errorf(call.Pos, "an integer tensor is written with = only: %s %s %s(...) would sum in floating point; reduce first, then cast",
				s.Tensor, s.Reduce, call.Fn)
		}
		return err == nil
	})
	return err
}

// castType is the integer type statement s writes (its right-hand side is
// a cast), InvalidDType when it writes the op's float dtype.
func castType(s *ir.Stmt) ir.DType {
	if call, ok := s.RHS.(*ir.Call); ok {
		return call.Fn.CastType()
	}
	return ir.InvalidDType
}
