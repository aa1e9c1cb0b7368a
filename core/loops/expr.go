package loops

import (
	"github.com/neoflow/neoflow/core/ir"
)

// Lit is an integer literal.
func Lit(v int64) ir.Expr { return &ir.IntLit{Value: v} }

// Var is a use of a loop variable.
func Var(name string) ir.Expr { return &ir.Index{Name: name} }

// Add is x + y, simplified (ir.SimplifyNode).
func Add(x, y ir.Expr) ir.Expr {
	return ir.SimplifyNode(&ir.Binary{Op: ir.Add, X: x, Y: y}, ir.KindMemo{})
}

// Mul is x * y, simplified (ir.SimplifyNode).
func Mul(x, y ir.Expr) ir.Expr {
	return ir.SimplifyNode(&ir.Binary{Op: ir.Mul, X: x, Y: y}, ir.KindMemo{})
}

// Subst returns e with every index variable replaced by env[name] (names
// missing from env are kept; a replacement is not substituted again),
// named constants replaced by literals, and the result simplified
// (ir.Simplify's rules). e is not modified.
func Subst(e ir.Expr, env map[string]ir.Expr) ir.Expr {
	k := ir.KindMemo{}
	return ir.Rewrite(e, func(n ir.Expr) ir.Expr {
		switch x := n.(type) {
		case *ir.Index:
			if r, ok := env[x.Name]; ok {
				return r
			}
			return nil
		case *ir.Const:
			if x.IsFloat {
				return &ir.FloatLit{Pos: x.Pos, Value: x.Float}
			}
			return &ir.IntLit{Pos: x.Pos, Value: x.Int}
		}
		if s := ir.SimplifyNode(n, k); s != n {
			return s
		}
		return nil
	})
}
