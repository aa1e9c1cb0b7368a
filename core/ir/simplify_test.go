package ir_test

import (
	"testing"

	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/parse"
)

func TestSimplifyRuleTable(t *testing.T) {
	cases := []struct{ in, want string }{
		// indices: exact integer arithmetic, floor division
		{"X[i + 0, 0 + j, k - 0]", "X[i, j, k]"},
		{"X[i * 1, 1 * j, k / 1]", "X[i, j, k]"},
		{"X[i * 0 + j % 1 + k]", "X[k]"},
		{"X[-7 / 2, -7 % 2, 3 * 4 - 5]", "X[-4, 1, 7]"},
		{"X[i / 0]", "X[i / 0]"},
		{"X[9223372036854775807 + 1]", "X[9223372036854775807 + 1]"},
		// values: only what keeps every value, signed zeros included
		{"A[i] - 0.0", "A[i]"},
		{"A[i] + -0.0", "A[i]"},
		{"-0.0 + A[i]", "A[i]"},
		{"A[i] * 1.0 + 1.0 * B[i] + C[i] / 1.0", "A[i] + B[i] + C[i]"},
		{"-(-A[i])", "A[i]"},
		{"A[i] + 0.0", "A[i] + 0.0"},
		{"0.0 + A[i]", "0.0 + A[i]"},
		{"A[i] * 0.0", "A[i] * 0.0"},
		{"2.0 * 3.0 + A[i]", "2.0 * 3.0 + A[i]"},
		// an index times 1.0 is a value: it stays
		{"i * 1.0", "i * 1.0"},
		{"i - 0.0", "i - 0.0"},
	}
	for _, c := range cases {
		e, err := parse.Expr(c.in)
		if err != nil {
			t.Fatal(err)
		}
		if got := ir.ExprString(ir.Simplify(e)); got != c.want {
			t.Errorf("Simplify(%s) = %s, want %s", c.in, got, c.want)
		}
	}
}
