package autodiff

import (
	"math"

	"github.com/neoflow/neoflow/core/ir"
)

// Expression builders with light algebraic simplification. A nil factor
// stands for 1; the literal 0 (integer or float) is a structural zero: a
// product with it is dropped, which is what lets zero derivatives (of
// comparisons, of index expressions) vanish from the generated statements.
// They build derivatives; they are not a simplifier of expressions that
// exist (ir.Simplify is, and keeps every value): here a zero is a term the
// derivative does not have, so x * 0 is dropped where, as values, NaN * 0
// would be NaN.

func flit(v float64) ir.Expr { return &ir.FloatLit{Value: v} }

func ilit(v int64) ir.Expr { return &ir.IntLit{Value: v} }

func idx(name string) *ir.Index { return &ir.Index{Name: name} }

func bin(op ir.BinOp, x, y ir.Expr) ir.Expr { return &ir.Binary{Op: op, X: x, Y: y} }

func call(fn ir.Func, args ...ir.Expr) ir.Expr { return &ir.Call{Fn: fn, Args: args} }

// lit returns the value of a numeric literal.
func lit(e ir.Expr) (float64, bool) {
	switch e := e.(type) {
	case *ir.FloatLit:
		return e.Value, true
	case *ir.IntLit:
		return float64(e.Value), true
	}
	return 0, false
}

func isOne(e ir.Expr) bool {
	v, ok := lit(e)
	return ok && v == 1
}

func zero() ir.Expr { return flit(0) }

// neg is -a.
func neg(a ir.Expr) ir.Expr {
	if a == nil {
		return flit(-1)
	}
	switch x := a.(type) {
	case *ir.Unary:
		if x.Op == ir.Neg {
			return x.X
		}
	case *ir.FloatLit:
		if x.Value == 0 {
			return zero()
		}
		return flit(-x.Value)
	case *ir.IntLit:
		if x.Value == 0 {
			return zero()
		}
		if x.Value != math.MinInt64 {
			return ilit(-x.Value)
		}
	}
	return &ir.Unary{Op: ir.Neg, X: a}
}

// mul is a*b, with nil meaning 1.
func mul(a, b ir.Expr) ir.Expr {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	case ir.IsZero(a) || ir.IsZero(b):
		return zero()
	case isOne(a):
		return b
	case isOne(b):
		return a
	}
	if x, ok := lit(a); ok {
		if y, ok := lit(b); ok {
			return flit(x * y)
		}
		if x == -1 {
			return neg(b)
		}
	}
	if y, ok := lit(b); ok && y == -1 {
		return neg(a)
	}
	// a * (1 / y) is a / y.
	if d, ok := b.(*ir.Binary); ok && d.Op == ir.Div && isOne(d.X) {
		return div(a, d.Y)
	}
	if u, ok := a.(*ir.Unary); ok && u.Op == ir.Neg {
		return neg(mul(u.X, b))
	}
	if u, ok := b.(*ir.Unary); ok && u.Op == ir.Neg {
		return neg(mul(a, u.X))
	}
	// Push a factor into a where with a zero branch: where(c, x, 0) * b is
	// where(c, x * b, 0), which also keeps b under the guard.
	if w, ok := a.(*ir.Where); ok {
		switch {
		case ir.IsZero(w.Else):
			return where(w.Cond, mul(w.Then, b), zero())
		case ir.IsZero(w.Then):
			return where(w.Cond, zero(), mul(w.Else, b))
		}
	}
	if w, ok := b.(*ir.Where); ok {
		switch {
		case ir.IsZero(w.Else):
			return where(w.Cond, mul(a, w.Then), zero())
		case ir.IsZero(w.Then):
			return where(w.Cond, zero(), mul(a, w.Else))
		}
	}
	return bin(ir.Mul, a, b)
}

// div is a/b (value division).
func div(a, b ir.Expr) ir.Expr {
	if a == nil {
		a = flit(1)
	}
	if ir.IsZero(a) {
		return zero()
	}
	if isOne(b) {
		return a
	}
	if u, ok := a.(*ir.Unary); ok && u.Op == ir.Neg {
		return neg(div(u.X, b))
	}
	return bin(ir.Div, a, b)
}

// add is a+b.
func add(a, b ir.Expr) ir.Expr {
	switch {
	case ir.IsZero(a):
		return b
	case ir.IsZero(b):
		return a
	}
	if ir.Equal(a, b) {
		return mul(flit(2), a)
	}
	if u, ok := b.(*ir.Unary); ok && u.Op == ir.Neg {
		return bin(ir.Sub, a, u.X)
	}
	return bin(ir.Add, a, b)
}

// sub is a-b.
func sub(a, b ir.Expr) ir.Expr {
	switch {
	case ir.IsZero(b):
		return a
	case ir.IsZero(a):
		return neg(b)
	}
	return bin(ir.Sub, a, b)
}

// where builds where(c, t, e); both branches zero give zero.
func where(c, t, e ir.Expr) ir.Expr {
	if ir.IsZero(t) && ir.IsZero(e) {
		return zero()
	}
	return &ir.Where{Cond: c, Then: t, Else: e}
}

// never is the always-false index comparison 0 > 1. A where on it reads
// tensors in a branch that never runs (sema proves nothing there).
func never() ir.Expr { return bin(ir.Gt, ilit(0), ilit(1)) }

// term is coef·e in a linear combination.
type term struct {
	e    ir.Expr
	coef int64
}

// linearExpr prints Σ coef·e + c in a canonical form: terms in the given
// order, coefficient first ("2 * x"), then the constant: x - 2 * r + 1.
// The same form always gives the same tree, so guards and accesses built
// from one form print identically (sema compares opaque atoms by text).
func linearExpr(terms []term, c int64) ir.Expr {
	var out ir.Expr
	for _, t := range terms {
		if t.coef == 0 {
			continue
		}
		mag := t.coef
		if mag < 0 {
			mag = -mag
		}
		var e ir.Expr = t.e
		if mag != 1 {
			e = bin(ir.Mul, ilit(mag), t.e)
		}
		switch {
		case out == nil && t.coef > 0:
			out = e
		case out == nil:
			if mag == 1 {
				out = &ir.Unary{Op: ir.Neg, X: t.e}
			} else {
				out = bin(ir.Mul, ilit(t.coef), t.e)
			}
		case t.coef > 0:
			out = bin(ir.Add, out, e)
		default:
			out = bin(ir.Sub, out, e)
		}
	}
	switch {
	case out == nil:
		return ilit(c)
	case c > 0:
		return bin(ir.Add, out, ilit(c))
	case c < 0 && c != math.MinInt64:
		return bin(ir.Sub, out, ilit(-c))
	case c < 0:
		return bin(ir.Add, out, ilit(c))
	}
	return out
}

// accessesOf lists the accesses in e, in source order.
func accessesOf(e ir.Expr) []*ir.Access {
	var out []*ir.Access
	ir.Walk(e, func(e ir.Expr) bool {
		if a, ok := e.(*ir.Access); ok {
			out = append(out, a)
		}
		return true
	})
	return out
}

// varsOf lists the index variables used in e, in order of first use.
func varsOf(e ir.Expr) []string {
	var out []string
	seen := map[string]bool{}
	ir.Walk(e, func(e ir.Expr) bool {
		if x, ok := e.(*ir.Index); ok && !seen[x.Name] {
			seen[x.Name] = true
			out = append(out, x.Name)
		}
		return true
	})
	return out
}

// accessVars is the set of index variables used inside access indices.
func accessVars(e ir.Expr) map[string]bool {
	out := map[string]bool{}
	for _, a := range accessesOf(e) {
		for _, ix := range a.Indices {
			for _, v := range varsOf(ix) {
				out[v] = true
			}
		}
	}
	return out
}
