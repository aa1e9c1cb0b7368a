package sema

import (
	"github.com/neoflow/neoflow/core/ir"
)

// checkInputTypes checks the integer element types given for inputs: each
// names an input, and every tensor read as an index is one of them, an
// int32 or int64 tensor.
func checkInputTypes(op *ir.Op, dtype ir.DType, ints map[string]ir.DType) error {
	isInput := map[string]bool{}
	for _, in := range op.Inputs {
		isInput[in] = true
	}
	for name, t := range ints {
		if !isInput[name] {
			return op.Errorf(ir.Pos{}, "integer type given for %s, which is not an input of the op", name)
		}
		if !t.Integer() {
			return op.Errorf(ir.Pos{}, "input %s: %s is not an integer type", name, t)
		}
	}
	var err error
	for _, s := range op.Stmts {
		ir.Walk(s.RHS, func(e ir.Expr) bool {
			a, ok := e.(*ir.Access)
			if !ok || !a.Indirect || err != nil {
				return err == nil
			}
			switch t, isInt := ints[a.Tensor]; {
			case !isInput[a.Tensor]:
				err = op.Errorf(a.Pos, "%s is read as an index, so it must be an input of the op (an int32 or int64 tensor); it is written by the op", a.Tensor)
			case !isInt:
				err = op.Errorf(a.Pos, "%s is read as an index, so it must be an int32 or int64 tensor, got %s", a.Tensor, dtype)
			case t == ir.Bool:
				err = op.Errorf(a.Pos, "%s is read as an index, so it must be an int32 or int64 tensor, got bool", a.Tensor)
			}
			return err == nil
		})
	}
	return err
}

// indexLimits lowers limits[T] for each index tensor T that statement s
// reads as an index to the least extent it indexes there: the size of the
// dimension of the access it stands in, or the extent of the variable it
// is compared with (the scatter form where(z == T[...], ...)). An indirect
// access anywhere else is an error: nothing would keep it in bounds.
func indexLimits(op *ir.Op, s *ir.Stmt, ext map[string]int64, shapes map[string][]int64, limits map[string]int64) error {
	lower := func(t string, n int64) {
		if old, ok := limits[t]; !ok || n < old {
			limits[t] = n
		}
	}
	placed := map[*ir.Access]bool{}
	ir.Walk(s.RHS, func(e ir.Expr) bool {
		switch e := e.(type) {
		case *ir.Access:
			for d, x := range e.Indices {
				if ir.IsIndirect(x) {
					placed[x.(*ir.Access)] = true
					lower(x.(*ir.Access).Tensor, shapes[e.Tensor][d])
				}
			}
		case *ir.Binary:
			for _, p := range ir.EqOperands(e) {
				v, isVar := p[1].(*ir.Index)
				if a, ok := p[0].(*ir.Access); ok && a.Indirect && isVar {
					placed[a] = true
					lower(a.Tensor, ext[v.Name])
				}
			}
		}
		return true
	})
	var err error
	ir.Walk(s.RHS, func(e ir.Expr) bool {
		if a, ok := e.(*ir.Access); ok && a.Indirect && !placed[a] && err == nil {
			err = op.Errorf(a.Pos, "index tensor read %s must stand alone as an index of an access, as in E[%s, d]", ir.ExprString(a), ir.ExprString(a))
		}
		return err == nil
	})
	return err
}
