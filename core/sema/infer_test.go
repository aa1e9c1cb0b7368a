package sema

import (
	"testing"

	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/parse"
)

// index parses an index expression as the right-hand side of "Y[...] = ".
func index(t *testing.T, src string) ir.Expr {
	t.Helper()
	return mustParse(t, "Y[i] = "+src, parse.Options{Consts: ints("G", 4)}).Stmts[0].RHS
}

func TestLargestExtent(t *testing.T) {
	ext := map[string]int64{"r": 3, "c": 2}
	tests := []struct {
		desc string
		expr string
		u    string
		size int64
		want int64 // 0: no bound
		err  string
	}{
		{"strided window", "p*2 + r", "p", 8, 3, ""},
		{"exact stride", "p*2 + r", "p", 9, 4, ""},
		{"upsampling", "h / 2", "h", 5, 10, ""},
		{"downsampling channels", "u*4 + c", "u", 8, 2, ""},
		{"space to depth", "u / 4", "u", 2, 8, ""},
		{"periodic does not bound", "u % 2", "u", 2, 0, ""},
		{"never in bounds", "u + 5", "u", 3, 0, "ranges over [5, 5] even when u = 0"},
		{"window larger than input", "u + r", "u", 2, 0, "ranges over [0, 2] even when u = 0"},
	}
	for _, tc := range tests {
		got, err := largestExtent(index(t, tc.expr), tc.u, ext, tc.size)
		switch {
		case tc.err != "":
			if err == nil || err.Error() != tc.err {
				t.Errorf("%s: got error %v, want %q", tc.desc, err, tc.err)
			}
		case err != nil:
			t.Errorf("%s: got error %v, want none", tc.desc, err)
		case got != tc.want:
			t.Errorf("%s: largest extent of %s in size %d: got %d, want %d", tc.desc, tc.u, tc.size, got, tc.want)
		}
	}
}
