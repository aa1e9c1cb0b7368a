package autodiff

import (
	"slices"
	"strings"
	"testing"
)

// TestGradSaving checks, over the gradient table, that the gradient op of
// GradSaving, given the forward run's temporaries and outputs, computes
// exactly what Grad's recomputing gradient op computes, and that it
// recomputes no forward statement.
func TestGradSaving(t *testing.T) {
	saving := 0
	for _, c := range gradCases {
		if c.snf {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			spec, wrt, xs, dys := c.data(t, 7)
			g, gs := gradSpec(t, spec, wrt)
			s, ss := gradSpecOpts(t, spec, wrt, gradOptions{save: true})
			if len(g.Saved) != 0 {
				t.Fatalf("Grad lists saved tensors %v", g.Saved)
			}
			if strings.Contains(Explain(s), "recomputed forward statement") {
				t.Fatalf("GradSaving recomputes a forward statement:\n%s", Explain(s))
			}
			checkSavingMatches(t, spec, g, gs, s, ss, xs, dys, wrt)
			if len(s.Saved) > 0 {
				saving++
			}
		})
	}
	if saving < 3 {
		t.Errorf("only %d gradient ops read saved tensors; the table should exercise saving", saving)
	}
}

// TestGradSavingInputs checks the saving gradient op's signature on a two
// product op (the MI-LSTM gate): both products are saved, in forward
// order, after the output gradient, and the gradient op has no product
// statement left.
func TestGradSavingInputs(t *testing.T) {
	c := gcase{name: "milstm", src: "WX[b,j] += W[j,k] * X[b,k]\nUH[b,j] += U[j,k] * H[b,k]\nY[b,j] = tanh(WX[b,j] * UH[b,j] + Bias[j])",
		shapes: [][]int64{{3, 2}, {2, 2}, {3, 3}, {2, 3}, {3}}}
	spec := specialize(t, c)
	s, _ := gradSpecOpts(t, spec, allTrue(5), gradOptions{save: true})
	if !slices.Equal(s.Saved, []string{"WX", "UH"}) {
		t.Fatalf("saved %v, want [WX UH]", s.Saved)
	}
	want := []string{"W", "X", "U", "H", "Bias", "d_Y", "WX", "UH"}
	if !slices.Equal(s.Op.Inputs, want) {
		t.Fatalf("inputs %v, want %v", s.Op.Inputs, want)
	}
	for _, st := range s.Op.Stmts {
		if st.Tensor == "WX" || st.Tensor == "UH" {
			t.Fatalf("the saving gradient op still computes %s:\n%s", st.Tensor, Explain(s))
		}
	}
}

// TestGradRecomputing checks, over the gradient table, that the gradient
// op of GradRecomputing, asked to recompute every forward tensor but the
// first statement's (which it then reads saved, if the gradient needs
// it), computes exactly what Grad's gradient op computes, saves none of
// the recomputed tensors and recomputes only what it does not save.
func TestGradRecomputing(t *testing.T) {
	mixed := 0
	for _, c := range gradCases {
		if c.snf {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			spec, wrt, xs, dys := c.data(t, 11)
			g, gs := gradSpec(t, spec, wrt)
			rec := map[string]bool{}
			for _, st := range spec.Op.Stmts[1:] {
				rec[st.Tensor] = true
			}
			s, ss := gradSpecOpts(t, spec, wrt, gradOptions{save: true, recompute: rec})
			writes := map[string]int{}
			for _, st := range spec.Op.Stmts {
				writes[st.Tensor]++
			}
			for _, n := range s.Saved {
				if rec[n] && writes[n] == 1 {
					t.Fatalf("%s is saved, though recomputed", n)
				}
			}
			recomputes := strings.Contains(Explain(s), "recomputed forward statement")
			if recomputes && len(s.Saved) > 0 {
				mixed++
			}
			checkSavingMatches(t, spec, g, gs, s, ss, xs, dys, wrt)
		})
	}
	if mixed < 2 {
		t.Errorf("only %d gradient ops both read saved tensors and recompute some", mixed)
	}
}
