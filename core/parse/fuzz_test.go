package parse_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/parse"
)

// FuzzParse checks that Parse never panics, that its errors are *ir.Error,
// and that a parsed op prints to text that parses back to an EqualOp op
// which prints identically.
func FuzzParse(f *testing.F) {
	for _, tt := range roundTripOps {
		f.Add(tt.src)
	}
	for _, s := range []string{
		"", "#", ";", "Y[i] = X[i j]", "Y[i] = (a + b", "Y[p+1] = 1", "Y[i, i] = 1",
		"Y[i] = foo(1)", "Y[i] = exp(1, 2)", "Y[i] = 99999999999999999999", "Y[i] = 1e999",
		"N[i] = 1", "Y[i] max== 1", "Y[i] = -(3) - -3 + --3", "Y[i] = -0.0 * 1e-400",
		"Y[i] = a & b", "Y[i] = 2x", "Y[i] = \xff", "Y[] = (((((((a)))))))",
		"Y[i] = !!!a == -!-b", "Y[i]=where(i<1,a,b)*min(max(1,2),3)",
		"Y[i] = " + strings.Repeat("-", 198) + "3", "Y[i] = " + strings.Repeat("(-", 99) + "a" + strings.Repeat(")", 99),
		"Y[i] = X[\n i,\n 0] # c\nZ[j] = -eps * N + Y[j]; W[] += exp(Z[k])",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		op, err := parse.Parse(src, opts())
		if err != nil {
			var ie *ir.Error
			if !errors.As(err, &ie) {
				t.Fatalf("Parse(%q) got error of type %T, want *ir.Error", src, err)
			}
			_ = err.Error()
			return
		}
		printed := ir.Print(op)
		op2, err := parse.Parse(printed, opts())
		if err != nil {
			t.Fatalf("Parse(%q) ok, but Parse of its print\n%s\ngot error %v", src, printed, err)
		}
		if !ir.EqualOp(op, op2) {
			t.Fatalf("Parse(%q): print-parse round trip got\n%s\nwant\n%s", src, ir.Print(op2), printed)
		}
		if again := ir.Print(op2); again != printed {
			t.Fatalf("Parse(%q): printing twice got\n%s\nwant\n%s", src, again, printed)
		}
		if ir.Hash(op) != ir.Hash(op2) {
			t.Fatalf("Parse(%q): Hash of the round trip differs", src)
		}
	})
}
