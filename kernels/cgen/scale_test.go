package cgen

import (
	"fmt"
	"strings"
	"testing"

	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/parse"
	"github.com/neoflow/neoflow/core/pipeline"
	"github.com/neoflow/neoflow/core/sema"
)

// TestLongExpression lowers and renders sums of 4,000 terms of each kind.
// Their time is linear in the terms (BenchmarkLowerRender: about 8 times
// as long for 8 times the terms); asking every node for its kind with the
// recursive ir.KindOf once made a 16,000-term sum take seconds. The large
// sum of guarded reads (11 nodes a term and one for its '+') stays under
// ir.MaxNodes, the largest op the parser accepts.
func TestLongExpression(t *testing.T) {
	for _, term := range longTerms {
		lowerRender(t, term, 4000)
	}
}

var longTerms = []string{"X[i]", "i", "X[i] * 2.0", "where(i < 4 && i > 0, X[i], 1.0)"}

// BenchmarkLowerRender times lowering and rendering sums of 500 and 4,000
// terms: linear work takes about 8 times as long for the larger.
func BenchmarkLowerRender(b *testing.B) {
	for _, term := range longTerms {
		for _, n := range []int{500, 4000} {
			b.Run(fmt.Sprintf("%s/%d", term, n), func(b *testing.B) {
				for b.Loop() {
					lowerRender(b, term, n)
				}
			})
		}
	}
}

// lowerRender parses and specializes a sum of terms copies of term, then
// lowers and renders it.
func lowerRender(t testing.TB, term string, terms int) {
	t.Helper()
	src := "Y[i] = X[i] + " + strings.TrimSuffix(strings.Repeat(term+" + ", terms-1), " + ")
	op, err := parse.Parse(src, parse.Options{Inputs: []string{"X"}})
	if err != nil {
		t.Fatal(err)
	}
	spec, err := sema.Specialize(op, ir.Float32, [][]int64{{8}}, map[string]int64{"i": 8})
	if err != nil {
		t.Fatal(err)
	}
	fn, err := pipeline.Lower(spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	out, err := Render(fn, "nf_kernel")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(out, " + "); n < terms-1 {
		t.Errorf("%s: rendered %d additions, want at least %d", term, n, terms-1)
	}
}
