package bounds

import (
	"math"
	"testing"

	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/parse"
)

func TestFloorDivMod(t *testing.T) {
	tests := []struct {
		desc       string
		a, k       int64
		div, modul int64
	}{
		{"positive", 7, 2, 3, 1},
		{"negative", -7, 2, -4, 1},
		{"negative exact", -8, 2, -4, 0},
		{"zero", 0, 3, 0, 0},
		{"minus one", -1, 4, -1, 3},
	}
	for _, tc := range tests {
		if got := floorDiv(tc.a, tc.k); got != tc.div {
			t.Errorf("%s: floorDiv(%d, %d): got %d, want %d", tc.desc, tc.a, tc.k, got, tc.div)
		}
		if got := floorMod(tc.a, tc.k); got != tc.modul {
			t.Errorf("%s: floorMod(%d, %d): got %d, want %d", tc.desc, tc.a, tc.k, got, tc.modul)
		}
	}
}

func TestIntervalOps(t *testing.T) {
	iv := func(lo, hi int64) Interval { return Interval{lo, hi} }
	tests := []struct {
		desc string
		got  Interval
		want Interval
	}{
		{"add", iv(0, 3).add(iv(-1, 2)), iv(-1, 5)},
		{"sub", iv(0, 3).sub(iv(-1, 2)), iv(-2, 4)},
		{"mul mixed signs", iv(-2, 3).mul(iv(-5, 4)), iv(-15, 12)},
		{"scale negative", iv(1, 3).scale(-2), iv(-6, -2)},
		{"div", iv(-3, 7).div(2), iv(-2, 3)},
		{"mod within a period", iv(5, 6).mod(4), iv(1, 2)},
		{"mod within a negative period", iv(-3, -2).mod(4), iv(1, 2)},
		{"mod across periods", iv(3, 5).mod(4), iv(0, 3)},
		{"abs straddling zero", iv(-5, 3).abs(), iv(0, 5)},
		{"abs negative", iv(-5, -3).abs(), iv(3, 5)},
		{"hull", iv(0, 1).hull(iv(4, 5)), iv(0, 5)},
		{"hull with empty", iv(1, 0).hull(iv(4, 5)), iv(4, 5)},
		{"intersect", iv(0, 4).intersect(iv(2, 9)), iv(2, 4)},
		{"add saturates", iv(0, math.MaxInt64-1).add(iv(0, 5)), iv(0, posInf)},
		{"mul saturates", iv(-1<<40, 1<<40).mul(iv(-1<<40, 1<<40)), full},
		{"infinite times zero", full.mul(point(0)), point(0)},
		{"neg of infinite", iv(negInf, 3).neg(), iv(-3, posInf)},
		{"div keeps infinity", full.div(3), full},
		{"mod of infinite", full.mod(3), iv(0, 2)},
	}
	for _, tc := range tests {
		if tc.got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.desc, tc.got, tc.want)
		}
	}
}

// index parses an index expression as the right-hand side of "Y[...] = ".
func index(t *testing.T, src string) ir.Expr {
	t.Helper()
	op, err := parse.Parse("Y[i] = "+src, parse.Options{Consts: map[string]parse.ConstValue{"G": {Int: 4}}})
	if err != nil {
		t.Fatalf("parse %q: %v", src, err)
	}
	return op.Stmts[0].RHS
}

func TestIntervalOf(t *testing.T) {
	vars := map[string]Interval{"p": {0, 3}, "r": {0, 2}, "h": {0, 9}, "c": {0, 7}, "n": {-2, 5}}
	tests := []struct {
		desc string
		expr string
		want Interval
	}{
		{"strided window", "p*2 + r", Interval{0, 8}},
		{"floor division", "h / 2", Interval{0, 4}},
		{"modulo", "h % 2", Interval{0, 1}},
		{"depth to space channel", "c*4 + (h%2)*2 + h%2", Interval{0, 31}},
		{"negative floor division", "n / 4", Interval{-1, 1}},
		{"constant divisor", "c / G", Interval{0, 1}},
		{"min", "min(h, 3)", Interval{0, 3}},
		{"max", "max(n, 0)", Interval{0, 5}},
		{"abs", "abs(n - 1)", Interval{0, 4}},
		{"negation", "-p", Interval{-3, 0}},
		{"product of intervals", "n * r", Interval{-4, 10}},
		{"where tightened per branch", "where(h < 4, h, 3 - h)", Interval{-6, 3}},
		{"unknown variable", "z + 1", full},
	}
	for _, tc := range tests {
		s := NewScope(vars)
		if got := s.Bound(index(t, tc.expr)); got != tc.want {
			t.Errorf("%s: Interval of %s: got %v, want %v", tc.desc, tc.expr, got, tc.want)
		}
	}
}
