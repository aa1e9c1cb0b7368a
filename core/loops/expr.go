package loops

import (
	"github.com/neoflow/neoflow/core/ir"
)

// Lit is an integer literal.
func Lit(v int64) ir.Expr { return &ir.IntLit{Value: v} }

// Var is a use of a loop variable.
func Var(name string) ir.Expr { return &ir.Index{Name: name} }

// Add is x + y, simplified when both are indices.
func Add(x, y ir.Expr) ir.Expr { return simplify(&ir.Binary{Op: ir.Add, X: x, Y: y}, Kinds{}) }

// Mul is x * y, simplified when both are indices.
func Mul(x, y ir.Expr) ir.Expr { return simplify(&ir.Binary{Op: ir.Mul, X: x, Y: y}, Kinds{}) }

// Kinds memoizes ir.KindOf by node pointer. ir.KindOf recurses into the
// whole expression, so asking it at every node of a long expression is
// quadratic; with the memo each node's kind is computed once, from its
// operands' kinds. The expressions must not change while it is in use.
type Kinds map[ir.Expr]ir.Kind

// Of is ir.KindOf(e).
func (m Kinds) Of(e ir.Expr) ir.Kind {
	if k, ok := m[e]; ok {
		return k
	}
	var k ir.Kind
	switch e := e.(type) {
	case *ir.Unary:
		k = ir.KindBool
		if e.Op != ir.Not {
			k = m.Of(e.X)
		}
	case *ir.Binary:
		k = ir.KindBool
		if !e.Op.IsCompare() && !e.Op.IsLogic() {
			k = ir.JoinKinds(m.Of(e.X), m.Of(e.Y))
		}
	case *ir.Call:
		k = ir.KindValue
		switch e.Fn {
		case ir.FuncMin, ir.FuncMax, ir.FuncAbs:
			k = ir.KindIndex
			for _, a := range e.Args {
				k = ir.JoinKinds(k, m.Of(a))
			}
		}
	case *ir.Where:
		k = ir.JoinKinds(m.Of(e.Then), m.Of(e.Else))
	default:
		k = ir.KindOf(e) // a leaf or an access: no recursion
	}
	m[e] = k
	return k
}

// Subst returns e with every index variable replaced by env[name] (names
// missing from env are kept), constants replaced by literals and index
// arithmetic simplified. e is not modified.
func Subst(e ir.Expr, env map[string]ir.Expr) ir.Expr {
	return subst(e, env, Kinds{})
}

func subst(e ir.Expr, env map[string]ir.Expr, k Kinds) ir.Expr {
	switch e := e.(type) {
	case *ir.IntLit:
		return &ir.IntLit{Pos: e.Pos, Value: e.Value}
	case *ir.FloatLit:
		return &ir.FloatLit{Pos: e.Pos, Value: e.Value}
	case *ir.Const:
		if e.IsFloat {
			return &ir.FloatLit{Pos: e.Pos, Value: e.Float}
		}
		return &ir.IntLit{Pos: e.Pos, Value: e.Int}
	case *ir.Index:
		if r, ok := env[e.Name]; ok {
			return r
		}
		return &ir.Index{Pos: e.Pos, Name: e.Name}
	case *ir.Access:
		out := &ir.Access{Pos: e.Pos, Tensor: e.Tensor, Indices: make([]ir.Expr, len(e.Indices))}
		for i, x := range e.Indices {
			out.Indices[i] = subst(x, env, k)
		}
		return out
	case *ir.Unary:
		return simplify(&ir.Unary{Pos: e.Pos, Op: e.Op, X: subst(e.X, env, k)}, k)
	case *ir.Binary:
		return simplify(&ir.Binary{Pos: e.Pos, Op: e.Op, X: subst(e.X, env, k), Y: subst(e.Y, env, k)}, k)
	case *ir.Call:
		out := &ir.Call{Pos: e.Pos, Fn: e.Fn, Args: make([]ir.Expr, len(e.Args))}
		for i, a := range e.Args {
			out.Args[i] = subst(a, env, k)
		}
		return out
	case *ir.Where:
		return &ir.Where{Pos: e.Pos, Cond: subst(e.Cond, env, k), Then: subst(e.Then, env, k), Else: subst(e.Else, env, k)}
	}
	return e
}

// simplify folds integer literals and the identities x+0, x-0, x*1, x*0,
// x/1 and x%1 in index arithmetic. Values are left alone: x+0 is not x for
// x = -0.0, and x*0 is not 0 for NaN. k memoizes kinds.
func simplify(e ir.Expr, k Kinds) ir.Expr {
	switch e := e.(type) {
	case *ir.Unary:
		if l, ok := e.X.(*ir.IntLit); ok && e.Op == ir.Neg {
			return &ir.IntLit{Pos: e.Pos, Value: -l.Value}
		}
	case *ir.Binary:
		x, xok := e.X.(*ir.IntLit)
		y, yok := e.Y.(*ir.IntLit)
		if !xok && !yok {
			return e // every rule below needs a literal operand
		}
		if k.Of(e) != ir.KindIndex {
			return e
		}
		if xok && yok {
			switch e.Op {
			case ir.Add:
				return &ir.IntLit{Pos: e.Pos, Value: x.Value + y.Value}
			case ir.Sub:
				return &ir.IntLit{Pos: e.Pos, Value: x.Value - y.Value}
			case ir.Mul:
				return &ir.IntLit{Pos: e.Pos, Value: x.Value * y.Value}
			case ir.Div:
				if y.Value != 0 {
					return &ir.IntLit{Pos: e.Pos, Value: ir.FloorDiv(x.Value, y.Value)}
				}
			case ir.Mod:
				if y.Value != 0 {
					return &ir.IntLit{Pos: e.Pos, Value: ir.FloorMod(x.Value, y.Value)}
				}
			}
			return e
		}
		switch {
		case e.Op == ir.Add && xok && x.Value == 0:
			return e.Y
		case (e.Op == ir.Add || e.Op == ir.Sub) && yok && y.Value == 0:
			return e.X
		case e.Op == ir.Mul && xok && x.Value == 1:
			return e.Y
		case (e.Op == ir.Mul || e.Op == ir.Div) && yok && y.Value == 1:
			return e.X
		case e.Op == ir.Mul && ((xok && x.Value == 0) || (yok && y.Value == 0)):
			return &ir.IntLit{Pos: e.Pos, Value: 0}
		case e.Op == ir.Mod && yok && y.Value == 1:
			return &ir.IntLit{Pos: e.Pos, Value: 0}
		}
	}
	return e
}

// Walk calls fn on e and its sub-expressions in pre-order.
func Walk(e ir.Expr, fn func(ir.Expr)) {
	if e == nil {
		return
	}
	fn(e)
	switch e := e.(type) {
	case *ir.Access:
		for _, x := range e.Indices {
			Walk(x, fn)
		}
	case *ir.Unary:
		Walk(e.X, fn)
	case *ir.Binary:
		Walk(e.X, fn)
		Walk(e.Y, fn)
	case *ir.Call:
		for _, a := range e.Args {
			Walk(a, fn)
		}
	case *ir.Where:
		Walk(e.Cond, fn)
		Walk(e.Then, fn)
		Walk(e.Else, fn)
	}
}
