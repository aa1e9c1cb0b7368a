package ir_test

import (
	"maps"
	"testing"

	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/parse"
)

func TestCopies(t *testing.T) {
	tests := []struct {
		src  string
		want map[string]string
	}{
		{"d_X[i] = d_Y[i]\nd_Z[i] = d_Y[i]", map[string]string{"d_X": "d_Y", "d_Z": "d_Y"}},
		{"O[i, j] = A[i, j]\nP[i, j] = A[i, j] * 2.0", map[string]string{"O": "A"}},
		{"O[i, j] = A[j, i]", nil},                  // transposed
		{"O[i] = A[i + 1]", nil},                    // shifted
		{"O[i] += A[i, k]", nil},                    // a sum
		{"O[i] = A[i]\nO[i] = O[i] + B[i]", nil},    // written twice
		{"T[i] = A[i] + B[i]\nO[i] = T[i]", nil},    // a temporary, not an input
		{"O[b, d] = E[I[b], d]", nil},               // a gather
		{"O[i, j] = A[i, j]\nQ[i] += O[i, j]", nil}, // O is read: a temporary
		{"O[i, j] = -A[i, j]", nil},                 // negated
		{"O[i] = A[i]; P[i] = B[i]", map[string]string{"O": "A", "P": "B"}},
		// autodiff's read of an otherwise unread input, in a branch that never runs
		{"d_X[i] = where(0 > 1, X[0] + Z[0], d_Y[i])", map[string]string{"d_X": "d_Y"}},
		{"d_X[i] = where(1 > 0, X[0] + Z[0], d_Y[i])", nil}, // taken
		{"d_X[i] = where(i > 0, X[0] + Z[0], d_Y[i])", nil}, // depends on i
	}
	for _, tc := range tests {
		op, err := parse.Parse(tc.src, parse.Options{})
		if err != nil {
			t.Fatalf("%q: %v", tc.src, err)
		}
		got := ir.Copies(op)
		if len(got) == 0 && len(tc.want) == 0 {
			continue
		}
		if !maps.Equal(got, tc.want) {
			t.Errorf("Copies(%q) = %v, want %v", tc.src, got, tc.want)
		}
	}
}
