package interp

import (
	"math"
	"strings"
	"testing"

	"github.com/neoflow/neoflow/core/ir"
)

// TestLongChain: compiling a 15,000-factor product (a chain 15,000 deep)
// is linear: each node's kind is computed once, not from its whole
// subtree.
func TestLongChain(t *testing.T) {
	const n = 15_000
	spec := specialize(t, "Y[i] = "+strings.Repeat("X[i] * ", n-1)+"X[i]", ir.Float64, [][]int64{{3}}, nil)
	res, err := Run(spec, [][]float64{{1, -1, 1.00001}})
	if err != nil {
		t.Fatal(err)
	}
	want := []float64{1, 1, math.Pow(1.00001, n)}
	for i, w := range want {
		if got := res[1][i]; math.Abs(got-w) > 1e-9*math.Abs(w) {
			t.Errorf("Y[%d]: got %v want %v", i, got, w)
		}
	}
}
