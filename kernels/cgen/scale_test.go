package cgen

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/parse"
	"github.com/neoflow/neoflow/core/pipeline"
	"github.com/neoflow/neoflow/core/sema"
)

// TestLongExpressionTime checks that lowering and rendering take time
// linear in the size of the right-hand side: asking every node for its
// kind with the recursive ir.KindOf made a 16,000-term sum take seconds.
//
// The test compares the time for n and 8n terms rather than holding either
// to a wall-clock limit, which a busy machine would break: linear work takes
// about 8 times as long for 8 times the terms (measured 10-13: caches),
// quadratic work 64 times. The limit, 32, leaves room for noise (with 4n
// terms and a limit of 9, a loaded machine once measured 11). The large
// sum of guarded reads (11 nodes a term and one for its '+') stays under
// ir.MaxNodes, the largest op the parser accepts.
func TestLongExpressionTime(t *testing.T) {
	const small, large = 500, 4000
	tests := []struct{ desc, term string }{
		{"sum of reads", "X[i]"},
		{"sum of index values", "i"},
		{"sum of scaled reads", "X[i] * 2.0"},
		{"sum of guarded reads", "where(i < 4 && i > 0, X[i], 1.0)"}, // 11 nodes a term
	}
	for _, tc := range tests {
		var tSmall, tLarge time.Duration
		ratio := math.Inf(1)
		// Measured again when over the limit: a GC pause or another test
		// package's burst can land on one measurement, but quadratic work
		// is over it every time.
		for attempt := 0; attempt < 3 && ratio > 32; attempt++ {
			tSmall = lowerRenderTime(t, tc.term, small)
			tLarge = lowerRenderTime(t, tc.term, large)
			ratio = float64(tLarge) / float64(tSmall)
			t.Logf("%s: %d terms %v, %d terms %v, ratio %.1f", tc.desc, small, tSmall, large, tLarge, ratio)
		}
		if ratio > 32 {
			t.Errorf("%s: %d terms took %.1f times as long as %d terms (%v against %v), want about 8 (linear)",
				tc.desc, large, ratio, small, tLarge, tSmall)
		}
	}
}

// lowerRenderTime parses and specializes a sum of terms copies of term, then
// returns the best of five timings of Lower and Render on it.
func lowerRenderTime(t *testing.T, term string, terms int) time.Duration {
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
	best := time.Duration(math.MaxInt64)
	var out string
	for range 5 {
		start := time.Now()
		fn, err := pipeline.Lower(spec, nil)
		if err != nil {
			t.Fatal(err)
		}
		out, err = Render(fn, "nf_kernel")
		if err != nil {
			t.Fatal(err)
		}
		best = min(best, time.Since(start))
	}
	if n := strings.Count(out, " + "); n < terms-1 {
		t.Errorf("%s: rendered %d additions, want at least %d", term, n, terms-1)
	}
	return best
}
