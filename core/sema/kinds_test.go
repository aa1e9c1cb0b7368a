package sema

import (
	"testing"

	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/parse"
)

func TestKindOf(t *testing.T) {
	tests := []struct {
		desc string
		expr string // the right-hand side of "Y[i] = ..."
		want ir.Kind
	}{
		{"integer literal", "3", ir.KindIndex},
		{"index variable", "i", ir.KindIndex},
		{"index arithmetic", "i*2 + i/2 - i%3", ir.KindIndex},
		{"integer constant", "G + i", ir.KindIndex},
		{"float literal", "1.5", ir.KindValue},
		{"float constant", "eps", ir.KindValue},
		{"access", "A[i]", ir.KindValue},
		{"index promoted by value", "i * 2.0", ir.KindValue},
		{"negated access", "-A[i]", ir.KindValue},
		{"index min", "min(i, 3)", ir.KindIndex},
		{"value max", "max(i, A[i])", ir.KindValue},
		{"index abs", "abs(i - 3)", ir.KindIndex},
		{"exp of index", "exp(i)", ir.KindValue},
		{"comparison", "i < 3", ir.KindBool},
		{"logic", "i < 3 && A[i] > 0.0", ir.KindBool},
		{"not", "!(i < 3)", ir.KindBool},
		{"index where", "where(i < 3, i, 0)", ir.KindIndex},
		{"value where", "where(i < 3, A[i], 0)", ir.KindValue},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			op := mustParse(t, "Y[i] = "+tc.expr, parse.Options{Consts: ints("G", 2, "eps", 1e-5)})
			if got := ir.KindOf(op.Stmts[0].RHS); got != tc.want {
				t.Errorf("ir.KindOf(%s): got %v, want %v", tc.expr, got, tc.want)
			}
		})
	}
}
