package autodiff

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/neoflow/neoflow/core/interp"
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
			fwd, err := interp.Run(spec, xs)
			if err != nil {
				t.Fatal(err)
			}
			args := append(append([][]float64{}, xs...), dys...)
			for _, n := range s.Saved {
				args = append(args, byName(spec, fwd, n))
			}
			got, err := interp.Run(ss, args)
			if err != nil {
				t.Fatalf("running the saving gradient op: %v\n%s", err, Explain(s))
			}
			want := analytic(t, g, gs, spec, xs, dys, wrt)
			for i, in := range spec.Op.Inputs {
				if !wrt[i] {
					continue
				}
				a, b := byName(ss, got, "d_"+in), want[in]
				for j := range b {
					if math.Float64bits(a[j]) != math.Float64bits(b[j]) && !(math.IsNaN(a[j]) && math.IsNaN(b[j])) {
						t.Fatalf("d_%s[%d]: saving %.17g, recomputing %.17g\n%s\n%s", in, j, a[j], b[j], Explain(s), Explain(g))
					}
				}
			}
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
