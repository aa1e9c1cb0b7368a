package fuse

import (
	"math/rand"
	"testing"

	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/parse"
)

// cutOf's point separates the values of v where the comparison holds
// from those where it does not, for every comparison form and sign.
func TestCutOfIsWhereTheComparisonChanges(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	ops := []string{"<", "<=", ">", ">="}
	for range 2000 {
		a, k, m := r.Int63n(7)-3, r.Int63n(21)-10, r.Int63n(5)-2
		if a == m {
			continue
		}
		src := "Y[v] = where(" + ir.ExprString(lin(a, k)) + " " + ops[r.Intn(4)] + " " + ir.ExprString(lin(m, 0)) + ", 1.0, 0.0)"
		op, err := parse.Parse(src, parse.Options{})
		if err != nil {
			t.Fatal(src, err)
		}
		c := op.Stmts[0].RHS.(*ir.Where).Cond
		p, ok := cutOf(c, "v")
		if !ok {
			t.Fatalf("%s: no cut", src)
		}
		holds := func(v int64) bool {
			x := a*v + k
			y := m * v
			switch c.(*ir.Binary).Op {
			case ir.Lt:
				return x < y
			case ir.Le:
				return x <= y
			case ir.Gt:
				return x > y
			}
			return x >= y
		}
		for v := p - 30; v < p+30; v++ {
			if holds(v) != holds(p) && v >= p || holds(v) != holds(p-1) && v < p {
				t.Fatalf("%s: cut at %d, but the comparison changes between %d and %d", src, p, v, p)
			}
		}
	}
}

// lin is a*v + k as an expression.
func lin(a, k int64) ir.Expr {
	var e ir.Expr = &ir.Binary{Op: ir.Mul, X: &ir.IntLit{Value: a}, Y: &ir.Index{Name: "v"}}
	return &ir.Binary{Op: ir.Add, X: e, Y: &ir.IntLit{Value: k}}
}

// A padding guard over most of a convolution's range saves too little
// to be split; a where selecting a third of the rows is split into
// three parts, each writing its rows.
func TestSplitOnlyWhenItSaves(t *testing.T) {
	pad := specOf(t, "Y[i] = where(i >= 1 && i < 31, X[i - 1] * X[i - 1], 0.0)", nil, []string{"X"}, [][]int64{{32}}, map[string]int64{"i": 32})
	if got := Split(pad, Options{}, nil); got != pad {
		t.Errorf("split a padding guard:\n%s", ir.PrintSpec(got))
	}
	rows := specOf(t, "Y[i, j] = where(i < 400, X[i, j] * 2.0, 0.0) + where(i >= 800, exp(X[i, j]) + tanh(X[i, j]), 0.0)", nil,
		[]string{"X"}, [][]int64{{1200, 50}}, map[string]int64{"i": 1200, "j": 50})
	got := Split(rows, Options{}, nil)
	if len(got.Stmts) != 3 {
		t.Fatalf("want 3 parts:\n%s", ir.PrintSpec(got))
	}
	for k, want := range []int64{0, 400, 800} {
		if st := got.Stmts[k]; st.OffsetAt(0) != want || st.Spatial[0].Extent != 400 {
			t.Errorf("part %d at %v, extent %d:\n%s", k, st.Offset, st.Spatial[0].Extent, ir.PrintSpec(got))
		}
	}
	sameOutputs(t, rows, got, 1)
	if kept := Split(rows, Options{Keep: map[string]bool{"Y": true}}, nil); kept != rows {
		t.Errorf("split a kept tensor")
	}
}
