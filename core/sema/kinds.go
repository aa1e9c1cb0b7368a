package sema

import (
	"github.com/neoflow/neoflow/core/bounds"
	"github.com/neoflow/neoflow/core/ir"
)

// kindNoun describes a kind for messages: "an index", "a value", "a bool".
func kindNoun(k ir.Kind) string {
	switch k {
	case ir.KindIndex:
		return "an integer expression"
	case ir.KindValue:
		return "a value"
	}
	return "a bool"
}

// checkKinds verifies the kinds of e and its sub-terms and returns e's kind.
func (c *checker) checkKinds(e ir.Expr) (ir.Kind, error) {
	switch e := e.(type) {
	case *ir.IntLit, *ir.FloatLit, *ir.Const, *ir.Index:
		return ir.KindOf(e), nil
	case *ir.Access:
		return c.accessKinds(e)
	case *ir.Unary:
		return c.unaryKinds(e)
	case *ir.Binary:
		return c.binaryKinds(e)
	case *ir.Call:
		return c.callKinds(e)
	case *ir.Where:
		return c.whereKinds(e)
	case nil:
		return 0, c.op.Errorf(ir.Pos{}, "missing expression")
	}
	return 0, c.op.Errorf(e.At(), "unsupported expression node %T", e)
}

// accessKinds checks that every index of the access e is an integer
// expression; an access is a value, an indirect one an index.
func (c *checker) accessKinds(e *ir.Access) (ir.Kind, error) {
	for _, x := range e.Indices {
		k, err := c.checkKinds(x)
		if err != nil {
			return 0, err
		}
		if k != ir.KindIndex {
			hint := ""
			if readsAny(x) {
				hint = " (a tensor read as an index must stand alone as the whole index, as in E[I[b], d], and be an int32 or int64 tensor)"
			}
			return 0, c.op.Errorf(x.At(), "index expression of %s must be an integer expression, got %s: %s%s",
				e.Tensor, kindNoun(k), ir.ExprString(x), hint)
		}
		if err := c.indexOperands(x); err != nil {
			return 0, err
		}
	}
	return ir.KindOf(e), nil
}

// unaryKinds checks the operand of ! (a bool) or of unary - (a number)
// and returns the kind of e.
func (c *checker) unaryKinds(e *ir.Unary) (ir.Kind, error) {
	k, err := c.checkKinds(e.X)
	if err != nil {
		return 0, err
	}
	if e.Op == ir.Not {
		if k != ir.KindBool {
			return 0, c.op.Errorf(e.X.At(), "operand of ! must be a bool (a comparison), got %s: %s", kindNoun(k), ir.ExprString(e.X))
		}
		return ir.KindBool, nil
	}
	if err := c.numeric(e.X, k, "operand of unary -"); err != nil {
		return 0, err
	}
	if k == ir.KindIndex {
		if err := c.indexOperands(e.X); err != nil {
			return 0, err
		}
	}
	return k, nil
}

// binaryKinds checks the operands of a logic, comparison or arithmetic
// operator and returns the kind of e.
func (c *checker) binaryKinds(e *ir.Binary) (ir.Kind, error) {
	kx, err := c.checkKinds(e.X)
	if err != nil {
		return 0, err
	}
	ky, err := c.checkKinds(e.Y)
	if err != nil {
		return 0, err
	}
	what := "operand of " + e.Op.String()
	if e.Op.IsLogic() {
		for _, p := range []struct {
			x ir.Expr
			k ir.Kind
		}{{e.X, kx}, {e.Y, ky}} {
			if p.k != ir.KindBool {
				return 0, c.op.Errorf(p.x.At(), "%s must be a bool (a comparison), got %s: %s", what, kindNoun(p.k), ir.ExprString(p.x))
			}
		}
		return ir.KindBool, nil
	}
	if err := c.numeric(e.X, kx, what); err != nil {
		return 0, err
	}
	if err := c.numeric(e.Y, ky, what); err != nil {
		return 0, err
	}
	if e.Op.IsCompare() {
		if kx == ir.KindIndex && ky == ir.KindIndex {
			if err := c.indexOperands(e.X, e.Y); err != nil {
				return 0, err
			}
		}
		return ir.KindBool, nil
	}
	k := ir.JoinKinds(kx, ky)
	if k == ir.KindIndex {
		if err := c.indexOperands(e.X, e.Y); err != nil {
			return 0, err
		}
	}
	if k == ir.KindIndex && (e.Op == ir.Div || e.Op == ir.Mod) {
		if _, ok := bounds.ConstDivisor(e.Y); !ok {
			return 0, c.op.Errorf(e.Y.At(), "divisor of %s in an index expression must be a positive integer constant, got %s",
				e.Op, ir.ExprString(e.Y))
		}
	}
	return k, nil
}

// callKinds checks the arity and the numeric arguments of a call and
// returns its kind.
func (c *checker) callKinds(e *ir.Call) (ir.Kind, error) {
	if len(e.Args) != e.Fn.Arity() {
		return 0, c.op.Errorf(e.Pos, "%s takes %d argument(s), got %d", e.Fn, e.Fn.Arity(), len(e.Args))
	}
	k := ir.KindValue
	if e.Fn == ir.FuncMin || e.Fn == ir.FuncMax || e.Fn == ir.FuncAbs {
		k = ir.KindIndex // unless an argument is a value
	}
	for _, a := range e.Args {
		ka, err := c.checkKinds(a)
		if err != nil {
			return 0, err
		}
		if err := c.numeric(a, ka, "argument of "+e.Fn.String()); err != nil {
			return 0, err
		}
		k = ir.JoinKinds(k, ka)
	}
	if k == ir.KindIndex {
		if err := c.indexOperands(e.Args...); err != nil {
			return 0, err
		}
	}
	return k, nil
}

// whereKinds checks that the condition of a where is a bool and its
// branches numbers, and returns its kind.
func (c *checker) whereKinds(e *ir.Where) (ir.Kind, error) {
	k, err := c.checkKinds(e.Cond)
	if err != nil {
		return 0, err
	}
	if k != ir.KindBool {
		return 0, c.op.Errorf(e.Cond.At(), "condition of where must be a bool (a comparison), got %s: %s", kindNoun(k), ir.ExprString(e.Cond))
	}
	k = ir.KindIndex
	for _, b := range []ir.Expr{e.Then, e.Else} {
		kb, err := c.checkKinds(b)
		if err != nil {
			return 0, err
		}
		if err := c.numeric(b, kb, "branch of where"); err != nil {
			return 0, err
		}
		k = ir.JoinKinds(k, kb)
	}
	if k == ir.KindIndex {
		if err := c.indexOperands(e.Then, e.Else); err != nil {
			return 0, err
		}
	}
	return k, nil
}

// indexOperands rejects an integer literal or constant operand of index
// arithmetic (an access index, an operand of an integer operation, a
// branch of an integer where, an operand of a comparison of integers)
// whose magnitude is 2^62 or more: the kernels compute index arithmetic in
// int64, and Specialize proves it free of overflow only within ±2^62.
func (c *checker) indexOperands(es ...ir.Expr) error {
	for _, e := range es {
		var v int64
		what := ""
		switch e := e.(type) {
		case *ir.IntLit:
			v, what = e.Value, "integer literal"
		case *ir.Const:
			if e.IsFloat {
				continue
			}
			v, what = e.Int, "integer constant "+e.Name+" ="
		default:
			continue
		}
		if v <= -indexLimit || v >= indexLimit {
			return c.op.Errorf(e.At(), "index arithmetic may overflow int64: %s %d is too large for index arithmetic (its magnitude must be below 2^62)", what, v)
		}
	}
	return nil
}

// numeric rejects a bool used where a number (index or value) is needed.
func (c *checker) numeric(e ir.Expr, k ir.Kind, what string) error {
	if k == ir.KindBool {
		return c.op.Errorf(e.At(), "%s must be a number, got a bool: %s (a bool can only be the condition of where)", what, ir.ExprString(e))
	}
	return nil
}

// readsAny reports whether e reads a tensor.
func readsAny(e ir.Expr) bool {
	found := false
	ir.Walk(e, func(e ir.Expr) bool {
		if _, ok := e.(*ir.Access); ok {
			found = true
		}
		return !found
	})
	return found
}
