package fuse

import (
	"testing"

	"github.com/neoflow/neoflow/core/ir"
)

// Two statements computing one value (axes named differently) leave one
// temporary, read by both contractions; a different value read twice
// stays.
func TestCSEKeepsOneOfEqualStatements(t *testing.T) {
	src := "A[i, j] = exp(X[i, j]) * 2.0\nB[p, q] = exp(X[p, q]) * 2.0\nD[i, j] = exp(X[i, j]) * 3.0\n" +
		"Y[i] += A[i, j] * W[j]\nZ[j] += B[i, j] * V[i]\nU[j] += D[i, j] * V[i]\nS[i] += D[i, j] * W[j]"
	spec := specOf(t, src, nil, []string{"X", "W", "V"}, [][]int64{{5, 7}, {7}, {5}}, nil)
	var notes Notes
	// Loop nests free: at this size the reward would otherwise inline the
	// temporaries to save their nests.
	f := all(spec, Options{Machine: Machine{BytesPerSec: 8e9, OpsPerSec: 4e9}}, &notes)
	var temps []string
	for _, td := range f.Tensors {
		if td.Role == ir.RoleTemp {
			temps = append(temps, td.Name)
		}
	}
	if len(temps) != 2 || temps[0] != "A" || temps[1] != "D" {
		t.Errorf("temporaries %v, want [A D]; notes %v\n%s", temps, notes, ir.PrintSpec(f))
	}
	sameOutputs(t, spec, f, 1)
}

// A temporary compared with == (the gradient of min finds its argument by
// t == min(t)) is not inlined: recomputed, it could round differently
// from the stored value it is compared with.
func TestComparedTemporaryStaysStored(t *testing.T) {
	src := "T[i, j] = X[i, j] + P[i]\nM[i] min= T[i, j]\nA[i] min= where(T[i, j] == M[i], j, 3)"
	spec := specOf(t, src, nil, []string{"X", "P"}, [][]int64{{9, 3}, {9}}, nil)
	f := all(spec, Options{}, nil)
	if f.Tensor("T") == nil {
		t.Fatalf("T was inlined:\n%s", ir.PrintSpec(f))
	}
}
