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

// A mask that rounds nothing (a ReLU's, where(X <= 0, 1, 0)) compared
// with != is inlined all the same: recomputed, it gives the same bits. An
// arithmetic one stays stored.
func TestExactMaskComparedIsInlined(t *testing.T) {
	src := "K[i, j] = where(X[i, j] <= 0.0, 1.0, 0.0)\nY[i, j] = where(K[i, j] != 0.0, 0.0, G[i, j] / 4.0)"
	spec := specOf(t, src, nil, []string{"X", "G"}, [][]int64{{9, 33}, {9, 33}}, nil)
	f := all(spec, Options{}, nil)
	if f.Tensor("K") != nil {
		t.Fatalf("the mask K stayed stored:\n%s", ir.PrintSpec(f))
	}
	sameOutputs(t, spec, f, 1)
	for e, want := range map[string]bool{
		"where(X[i, j] <= 0.0, 1.0, 0.0)":               true,
		"where(i < 3 && X[i, j] > -X[j, i], 1.0, -0.0)": true,
		"X[i, j] + 0.0":                            false,
		"where(X[i, j] * 2.0 <= 0.0, 1.0, 0.0)":    false,
		"where(X[i, j] <= 0.0, exp(X[i, j]), 0.0)": false,
	} {
		sp := specOf(t, "Y[i, j] = "+e, nil, []string{"X"}, [][]int64{{9, 9}}, nil)
		if got := roundsNothing(sp.Stmts[0].Stmt.RHS); got != want {
			t.Errorf("roundsNothing(%s) = %v, want %v", e, got, want)
		}
	}
}
