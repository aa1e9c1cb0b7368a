package parse

import (
	"strings"
	"testing"

	"github.com/neoflow/neoflow/core/ir"
)

func TestExprParsesOneExpression(t *testing.T) {
	e, err := Expr("T3[(_0 / 4) % 2, _1] * 2.0")
	if err != nil {
		t.Fatal(err)
	}
	if got := ir.ExprString(e); got != "T3[_0 / 4 % 2, _1] * 2.0" {
		t.Fatalf("got %s", got)
	}
	for src, want := range map[string]string{
		"":             "expected",
		"A[i] B[i]":    "the end of the expression",
		"A[i] = B[i]":  "the end of the expression",
		"tanh(A[i]":    "unclosed",
		"A[i]; B[i]":   "the end of the expression",
		"A[i] + * 2.0": "expected",
	} {
		if _, err := Expr(src); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v, want an error containing %q", src, err, want)
		}
	}
}
