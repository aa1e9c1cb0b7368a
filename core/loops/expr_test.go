package loops

import (
	"testing"

	"github.com/neoflow/neoflow/core/ir"
)

func TestFloorDivMod(t *testing.T) {
	for _, c := range []struct{ a, b, q, m int64 }{
		{7, 2, 3, 1}, {-7, 2, -4, 1}, {7, -2, -4, -1}, {-7, -2, 3, -1}, {-8, 2, -4, 0}, {0, 3, 0, 0}, {-1, 5, -1, 4},
	} {
		if q, m := ir.FloorDiv(c.a, c.b), ir.FloorMod(c.a, c.b); q != c.q || m != c.m {
			t.Errorf("%d /,%% %d = %d, %d; want %d, %d", c.a, c.b, q, m, c.q, c.m)
		}
	}
}

func TestSubstSimplify(t *testing.T) {
	env := map[string]ir.Expr{"q": Add(Mul(Var("q.o"), Lit(16)), Var("q.l")), "z": Lit(0)}
	for _, c := range []struct {
		in   ir.Expr
		want string
	}{
		{bin(ir.Add, bin(ir.Mul, ix("q"), lit(2)), ix("r")), "(q.o * 16 + q.l) * 2 + r"},
		{bin(ir.Add, bin(ir.Mul, ix("z"), lit(7)), ix("r")), "r"},
		{bin(ir.Div, lit(-7), lit(2)), "-4"},
		{bin(ir.Mod, lit(-7), lit(2)), "1"},
		{bin(ir.Mul, at("X", ix("z")), lit(0)), "X[0] * 0"},
		{bin(ir.Add, flit(1), ix("z")), "1.0 + 0"},
		{&ir.Const{Name: "K", Int: 3}, "3"},
		{&ir.Const{Name: "eps", IsFloat: true, Float: 1e-5}, "1e-05"},
		{&ir.Unary{Op: ir.Neg, X: lit(4)}, "-4"},
		{bin(ir.Sub, ix("r"), bin(ir.Mul, lit(3), ix("z"))), "r"},
	} {
		if got := ir.ExprString(Subst(c.in, env)); got != c.want {
			t.Errorf("Subst(%s) = %s, want %s", ir.ExprString(c.in), got, c.want)
		}
	}
}

func TestKindOf(t *testing.T) {
	for _, c := range []struct {
		e    ir.Expr
		want ir.Kind
	}{
		{bin(ir.Add, ix("i"), lit(1)), ir.KindIndex},
		{bin(ir.Add, ix("i"), flit(1)), ir.KindValue},
		{bin(ir.Lt, ix("i"), lit(1)), ir.KindBool},
		{&ir.Call{Fn: ir.FuncMax, Args: []ir.Expr{ix("i"), lit(0)}}, ir.KindIndex},
		{&ir.Call{Fn: ir.FuncMax, Args: []ir.Expr{ix("i"), at("X")}}, ir.KindValue},
		{&ir.Call{Fn: ir.FuncExp, Args: []ir.Expr{ix("i")}}, ir.KindValue},
		{&ir.Where{Cond: bin(ir.Lt, ix("i"), lit(1)), Then: ix("i"), Else: lit(0)}, ir.KindIndex},
		{&ir.Unary{Op: ir.Not, X: bin(ir.Lt, ix("i"), lit(1))}, ir.KindBool},
	} {
		if got := ir.KindOf(c.e); got != c.want {
			t.Errorf("ir.KindOf(%s) = %v, want %v", ir.ExprString(c.e), got, c.want)
		}
	}
}
