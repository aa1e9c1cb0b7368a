package fuse

import (
	"strings"
	"testing"

	"github.com/neoflow/neoflow/core/ir"
)

// The LLTM cell of workloads/rnn.py.
const lltmCell = `GH[b,g] += W[g,j] * H[b,j]
GX[b,g] += W[g,N+k] * X[b,k]
G[b,g] = GH[b,g] + GX[b,g] + Bias[g]
E[b,u] = where(G[b,2*N+u] > 0.0, G[b,2*N+u], exp(G[b,2*N+u]) - 1.0)
Cn[b,u] = C[b,u] + E[b,u] * sigmoid(G[b,u])
Hn[b,u] = tanh(C[b,u] + E[b,u] * sigmoid(G[b,u])) * sigmoid(G[b,N+u])`

func lltmGrad(t *testing.T, batch, hidden int64) *ir.Spec {
	t.Helper()
	h := hidden
	spec := specOf(t, lltmCell, map[string]int64{"N": h}, []string{"W", "H", "X", "Bias", "C"},
		[][]int64{{3 * h, 2 * h}, {batch, h}, {batch, h}, {3 * h}, {batch, h}}, map[string]int64{"u": h, "j": h})
	return gradSpec(t, spec)
}

// The saving gradient op of LLTM at bench size keeps at most two
// temporaries, none as large as W, and its d_W contraction does exactly
// the multiply-adds of its two halves.
func TestLLTMGradientFuses(t *testing.T) {
	const batch, hidden = 16, 256
	g := lltmGrad(t, batch, hidden)
	var notes Notes
	f := all(g, Options{}, &notes)
	w := f.Tensor("W")
	var temps []string
	for _, td := range f.Tensors {
		if td.Role == ir.RoleTemp {
			temps = append(temps, td.Name+ir.ShapeString(td.Shape))
			if td.Elems() >= w.Elems() {
				t.Errorf("temporary %s is as large as W", td.Name)
			}
		}
	}
	if len(temps) > 2 {
		t.Errorf("temporaries %v, want at most 2", temps)
	}
	var macs int64
	for _, st := range f.Stmts {
		if st.Stmt.Tensor == "d_W" {
			if st.Stmt.Reduce != ir.Sum || len(st.Reduction) != 1 {
				t.Errorf("d_W part is not one contraction: %s", ir.PrintSpec(f))
			}
			macs += st.Points()
		}
	}
	if want := int64(3*hidden) * int64(2*hidden) * batch; macs != want {
		t.Errorf("d_W does %d multiply-adds, want %d (768 x 512 x 16)", macs, want)
	}
	t.Logf("temporaries %v\n%s\n%s", temps, strings.Join(notes, "\n"), ir.PrintSpec(f))
}

// Fused and unfused LLTM gradients agree in the interpreter.
func TestLLTMGradientFusedMatches(t *testing.T) {
	g := lltmGrad(t, 3, 4)
	f := all(g, Options{}, nil)
	for seed := int64(1); seed <= 3; seed++ {
		sameOutputs(t, g, f, seed)
	}
}
