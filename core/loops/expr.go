package loops

import (
	"github.com/neoflow/neoflow/core/ir"
)

// Lit is an integer literal.
func Lit(v int64) ir.Expr { return &ir.IntLit{Value: v} }

// Var is a use of a loop variable.
func Var(name string) ir.Expr { return &ir.Index{Name: name} }

// Add is x + y, simplified when both are indices.
func Add(x, y ir.Expr) ir.Expr { return simplify(&ir.Binary{Op: ir.Add, X: x, Y: y}, ir.KindMemo{}) }

// Mul is x * y, simplified when both are indices.
func Mul(x, y ir.Expr) ir.Expr { return simplify(&ir.Binary{Op: ir.Mul, X: x, Y: y}, ir.KindMemo{}) }

// Subst returns e with every index variable replaced by env[name] (names
// missing from env are kept), constants replaced by literals and index
// arithmetic simplified. e is not modified.
func Subst(e ir.Expr, env map[string]ir.Expr) ir.Expr {
	return subst(e, env, ir.KindMemo{})
}

func subst(e ir.Expr, env map[string]ir.Expr, k ir.KindMemo) ir.Expr {
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
		out := &ir.Access{Pos: e.Pos, Tensor: e.Tensor, Indices: make([]ir.Expr, len(e.Indices)), Indirect: e.Indirect}
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
func simplify(e ir.Expr, k ir.KindMemo) ir.Expr {
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
