package ir

import "math"

// Simplify rewrites e bottom-up by the rules below (SimplifyNode at each
// node), the compiler's one simplifier. Every rule keeps the value
// exactly: indices are integers with floor division, and values keep
// IEEE 754's signed zeros, infinities and NaNs.
//
//	on indices
//	  a op b of literals         -> its value (+ - *; / and % by a nonzero literal; not on overflow)
//	  -a of a literal             -> the literal
//	  x + 0, 0 + x, x - 0         -> x
//	  x * 1, 1 * x, x / 1         -> x
//	  x * 0, 0 * x, x % 1         -> 0
//	on values
//	  x - 0.0, x + -0.0, -0.0 + x -> x
//	  x * 1.0, 1.0 * x, x / 1.0   -> x
//	  -(-x)                       -> x
//	  (x a value: i * 1.0, of an index i, stays)
//
// Not on values: x + 0.0 (for x = -0.0 it is +0.0), x * 0.0 (NaN,
// infinities, -0.0), and arithmetic of literals (a kernel computes in its
// dtype, not in float64). A literal here is an integer or floating-point
// literal or a named constant; the index rules need integer ones.
func Simplify(e Expr) Expr {
	k := KindMemo{}
	return Rewrite(e, func(n Expr) Expr {
		if s := SimplifyNode(n, k); s != n {
			return s
		}
		return nil
	})
}

// SimplifyNode applies Simplify's rules to e's top node alone (its
// operands already simplified); it returns e itself when none applies.
// k memoizes kinds.
func SimplifyNode(e Expr, k KindMemo) Expr {
	switch e := e.(type) {
	case *Unary:
		if e.Op != Neg {
			return e
		}
		if v, ok := intLit(e.X); ok && v != math.MinInt64 {
			return &IntLit{Pos: e.Pos, Value: -v}
		}
		if u, ok := e.X.(*Unary); ok && u.Op == Neg && k.Of(e) == KindValue {
			return u.X
		}
	case *Binary:
		if k.Of(e) == KindIndex {
			return simplifyIndex(e)
		}
		if k.Of(e) == KindValue {
			if r := simplifyValue(e); r != e && k.Of(r) == KindValue {
				return r // not i * 1.0 -> i: an index is no value
			}
		}
	}
	return e
}

// simplifyIndex is SimplifyNode's rules for an index expression.
func simplifyIndex(e *Binary) Expr {
	x, xok := intLit(e.X)
	y, yok := intLit(e.Y)
	if xok && yok {
		if v, ok := foldInts(e.Op, x, y); ok {
			return &IntLit{Pos: e.Pos, Value: v}
		}
		return e
	}
	switch {
	case e.Op == Add && xok && x == 0:
		return e.Y
	case (e.Op == Add || e.Op == Sub) && yok && y == 0:
		return e.X
	case e.Op == Mul && xok && x == 1:
		return e.Y
	case (e.Op == Mul || e.Op == Div) && yok && y == 1:
		return e.X
	case e.Op == Mul && (xok && x == 0 || yok && y == 0), e.Op == Mod && yok && y == 1:
		return &IntLit{Pos: e.Pos, Value: 0}
	}
	return e
}

// simplifyValue is SimplifyNode's rules for a floating-point expression.
func simplifyValue(e *Binary) Expr {
	x, xok := litValue(e.X)
	y, yok := litValue(e.Y)
	negZero := func(v float64) bool { return v == 0 && math.Signbit(v) }
	switch {
	case e.Op == Sub && yok && y == 0, e.Op == Add && yok && negZero(y):
		return e.X
	case e.Op == Add && xok && negZero(x):
		return e.Y
	case (e.Op == Mul || e.Op == Div) && yok && y == 1:
		return e.X
	case e.Op == Mul && xok && x == 1:
		return e.Y
	}
	return e
}

// foldInts is x op y when it is an integer that does not overflow.
func foldInts(op BinOp, x, y int64) (int64, bool) {
	switch op {
	case Add:
		s := x + y
		return s, (s > x) == (y > 0)
	case Sub:
		d := x - y
		return d, (d < x) == (y > 0)
	case Mul:
		if x == 0 || y == 0 {
			return 0, true
		}
		p := x * y
		return p, p/y == x && !(x == -1 && y == math.MinInt64) && !(y == -1 && x == math.MinInt64)
	case Div:
		if y != 0 && !(x == math.MinInt64 && y == -1) {
			return FloorDiv(x, y), true
		}
	case Mod:
		if y != 0 {
			return FloorMod(x, y), true
		}
	}
	return 0, false
}

// intLit is the value of an integer literal or integer named constant.
func intLit(e Expr) (int64, bool) {
	switch e := e.(type) {
	case *IntLit:
		return e.Value, true
	case *Const:
		return e.Int, !e.IsFloat
	}
	return 0, false
}

// litValue is the value of a literal or named constant, as a float64.
func litValue(e Expr) (float64, bool) {
	switch e := e.(type) {
	case *IntLit:
		return float64(e.Value), true
	case *FloatLit:
		return e.Value, true
	case *Const:
		if e.IsFloat {
			return e.Float, true
		}
		return float64(e.Int), true
	}
	return 0, false
}
