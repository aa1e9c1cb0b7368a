package bounds

import (
	"math/rand/v2"
	"testing"

	"github.com/neoflow/neoflow/core/ir"
)

// evalIndex evaluates an index expression (or, for conditions, 1 or 0) at
// one point, with the language's floor division and modulo.
func evalIndex(e ir.Expr, at map[string]int64) int64 {
	b2i := func(ok bool) int64 {
		if ok {
			return 1
		}
		return 0
	}
	switch e := e.(type) {
	case *ir.IntLit:
		return e.Value
	case *ir.Index:
		return at[e.Name]
	case *ir.Unary:
		if e.Op == ir.Neg {
			return -evalIndex(e.X, at)
		}
		return 1 - evalIndex(e.X, at)
	case *ir.Call:
		a := evalIndex(e.Args[0], at)
		switch e.Fn {
		case ir.FuncAbs:
			return max(a, -a)
		case ir.FuncMin:
			return min(a, evalIndex(e.Args[1], at))
		}
		return max(a, evalIndex(e.Args[1], at))
	case *ir.Where:
		if evalIndex(e.Cond, at) != 0 {
			return evalIndex(e.Then, at)
		}
		return evalIndex(e.Else, at)
	case *ir.Binary:
		x, y := evalIndex(e.X, at), evalIndex(e.Y, at)
		switch e.Op {
		case ir.Add:
			return x + y
		case ir.Sub:
			return x - y
		case ir.Mul:
			return x * y
		case ir.Div:
			return ir.FloorDiv(x, y)
		case ir.Mod:
			return ir.FloorMod(x, y)
		case ir.Lt:
			return b2i(x < y)
		case ir.Le:
			return b2i(x <= y)
		case ir.Gt:
			return b2i(x > y)
		case ir.Ge:
			return b2i(x >= y)
		case ir.Eq:
			return b2i(x == y)
		case ir.Ne:
			return b2i(x != y)
		case ir.And:
			return b2i(x != 0 && y != 0)
		}
		return b2i(x != 0 || y != 0)
	}
	panic("unexpected node")
}

// randIndex draws an index expression over a (in [0, 6)), b (in [0, 4))
// and the split form a.o * 4 + a.l.
func randIndex(r *rand.Rand, depth int) ir.Expr {
	lit := func(v int64) ir.Expr { return &ir.IntLit{Value: v} }
	bin := func(op ir.BinOp, x, y ir.Expr) ir.Expr { return &ir.Binary{Op: op, X: x, Y: y} }
	if depth == 0 || r.IntN(4) == 0 {
		switch r.IntN(4) {
		case 0:
			return lit(int64(r.IntN(7) - 3))
		case 1:
			return &ir.Index{Name: "a"}
		case 2:
			return &ir.Index{Name: "b"}
		}
		return bin(ir.Add, bin(ir.Mul, &ir.Index{Name: "a.o"}, lit(4)), &ir.Index{Name: "a.l"})
	}
	x := func() ir.Expr { return randIndex(r, depth-1) }
	switch r.IntN(9) {
	case 0:
		return bin(ir.Add, x(), x())
	case 1:
		return bin(ir.Sub, x(), x())
	case 2:
		return bin(ir.Mul, x(), lit(int64(r.IntN(5)-2)))
	case 3:
		return bin(ir.Div, x(), lit(int64(1+r.IntN(3))))
	case 4:
		return bin(ir.Mod, x(), lit(int64(1+r.IntN(3))))
	case 5:
		return &ir.Unary{Op: ir.Neg, X: x()}
	case 6:
		fn := []ir.Func{ir.FuncAbs, ir.FuncMin, ir.FuncMax}[r.IntN(3)]
		args := []ir.Expr{x()}
		if fn != ir.FuncAbs {
			args = append(args, x())
		}
		return &ir.Call{Fn: fn, Args: args}
	}
	cmp := []ir.BinOp{ir.Lt, ir.Le, ir.Gt, ir.Ge, ir.Eq, ir.Ne}[r.IntN(6)]
	cond := bin(cmp, x(), x())
	if r.IntN(3) == 0 {
		cond = bin([]ir.BinOp{ir.And, ir.Or}[r.IntN(2)], cond, bin(ir.Lt, x(), x()))
	}
	if r.IntN(4) == 0 {
		cond = &ir.Unary{Op: ir.Not, X: cond}
	}
	return &ir.Where{Cond: cond, Then: x(), Else: x()}
}

// TestRangeAndWithinAreSound: on random index expressions, Range contains
// every value the expression takes, and Within never claims an index in
// bounds that leaves them, at any point of the variables' ranges.
func TestRangeAndWithinAreSound(t *testing.T) {
	ext := map[string]int64{"a": 6, "b": 4, "a.o": 2, "a.l": 4}
	r := rand.New(rand.NewPCG(7, 11))
	for n := 0; n < 10000; n++ {
		e := randIndex(r, 4)
		s := ForExtents(ext)
		rng := s.Range(e)
		size := int64(1 + r.IntN(8))
		_, low, high := ForExtents(ext).Within(e, size)
		for a := range int64(6) {
			for b := range int64(4) {
				for ao := range int64(2) {
					for al := range int64(4) {
						v := evalIndex(e, map[string]int64{"a": a, "b": b, "a.o": ao, "a.l": al})
						if v < rng.Lo || v > rng.Hi {
							t.Fatalf("%s = %d at a=%d b=%d a.o=%d a.l=%d, outside its range %v", ir.ExprString(e), v, a, b, ao, al, rng)
						}
						if (low && v < 0) || (high && v >= size) {
							t.Fatalf("%s = %d at a=%d b=%d a.o=%d a.l=%d, but Within(%d) said low %v high %v", ir.ExprString(e), v, a, b, ao, al, size, low, high)
						}
					}
				}
			}
		}
	}
}
