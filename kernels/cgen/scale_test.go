package cgen

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/loops"
	"github.com/neoflow/neoflow/core/parse"
	"github.com/neoflow/neoflow/core/sema"
)

// TestLongExpressionTime checks that lowering and rendering take time
// linear in the size of the right-hand side: asking every node for its
// kind with the recursive ir.KindOf made a 16,000-term sum take seconds.
func TestLongExpressionTime(t *testing.T) {
	const terms = 16000
	tests := []struct {
		desc, term string
		limit      time.Duration
	}{
		{"sum of reads", "X[i]", 200 * time.Millisecond},
		{"sum of index values", "i", 200 * time.Millisecond},
		{"sum of scaled reads", "X[i] * 2.0", 200 * time.Millisecond},
		{"sum of guarded reads", "where(i < 4 && i > 0, X[i], 1.0)", 500 * time.Millisecond}, // 6 nodes a term
	}
	for _, tc := range tests {
		src := "Y[i] = X[i] + " + strings.TrimSuffix(strings.Repeat(tc.term+" + ", terms-1), " + ")
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
		for range 3 {
			start := time.Now()
			fn, err := loops.Lower(spec)
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
			t.Errorf("%s: rendered %d additions, want at least %d", tc.desc, n, terms-1)
		}
		t.Logf("%s: %v", tc.desc, best)
		if best > tc.limit {
			t.Errorf("%s: Lower and Render of %d terms took %v, want under %v", tc.desc, terms, best, tc.limit)
		}
	}
}
