package autodiff

import (
	"fmt"
	"slices"
	"testing"
)

// permutations lists every order of xs.
func permutations(xs []string) [][]string {
	if len(xs) <= 1 {
		return [][]string{slices.Clone(xs)}
	}
	var out [][]string
	for i := range xs {
		rest := append(slices.Clone(xs[:i]), xs[i+1:]...)
		for _, p := range permutations(rest) {
			out = append(out, append([]string{xs[i]}, p...))
		}
	}
	return out
}

// TestGradPermutedOutputs differentiates multi-output ops with their
// outputs returned in every order: the gradient op takes d_<Out> in the
// returned order, and its gradients match finite differences of
// Σ dOut·Out with each output paired with its own incoming gradient.
func TestGradPermutedOutputs(t *testing.T) {
	cases := []gcase{
		{name: "two", src: "A[i] = X[i] * 2.0\nB[i] = X[i] * 3.0", shapes: [][]int64{{5}}},
		{
			name:   "three",
			src:    "A[i] = X[i] * W[i]\nT[i, j] = X[i] * W[j]\nB[i] += T[i, j]\nC[j] max= T[i, j] + X[j]",
			shapes: [][]int64{{4}, {4}},
		},
		{
			name:   "shapes",
			src:    "P[i, j] = exp(X[i, j])\nQ[i] += X[i, j] * X[i, j]\nR[j] = sigmoid(X[0, j])",
			shapes: [][]int64{{3, 5}},
		},
	}
	for _, c := range cases {
		defaults := specialize(t, c)
		var names []string
		for _, o := range defaults.Outputs() {
			names = append(names, o.Name)
		}
		for _, order := range permutations(names) {
			c := c
			c.outputs = order
			t.Run(fmt.Sprintf("%s/%v", c.name, order), func(t *testing.T) {
				spec, wrt, xs, dys := c.data(t, 3)
				for k, o := range spec.Outputs() {
					if o.Name != order[k] {
						t.Fatalf("spec output %d is %s, want %s", k, o.Name, order[k])
					}
				}
				g, gs := gradSpec(t, spec, wrt)
				in := g.Op.Inputs[len(spec.Op.Inputs):]
				for k, name := range order {
					if in[k] != "d_"+name {
						t.Fatalf("gradient op input %d is %s, want d_%s", len(spec.Op.Inputs)+k, in[k], name)
					}
				}
				checkFD(t, spec, g, gs, xs, dys, wrt, 1e-6)
			})
		}
	}
}

// TestGradOfOutputsReadLater: an output that later statements read gets
// the caller's gradient plus what the readers send back, in every order
// of the outputs, saving or recomputing (finite differences).
func TestGradOfOutputsReadLater(t *testing.T) {
	cases := []gcase{
		{name: "chain", src: "C[i] = X[i] * W[i]\nH[i] = tanh(C[i]) * W[i]", shapes: [][]int64{{5}, {5}}},
		{
			name:   "lstm-like",
			src:    "G[b, g] += W[g, k] * X[b, k]\nC[b, u] = sigmoid(G[b, u]) * tanh(G[b, 2 + u])\nH[b, u] = tanh(C[b, u]) * sigmoid(G[b, u])\nS[b] += C[b, u] * H[b, u]",
			shapes: [][]int64{{4, 3}, {2, 3}},
			sizes:  map[string]int64{"u": 2},
		},
	}
	for _, c := range cases {
		defaults := specialize(t, c)
		var names []string
		for _, st := range defaults.Op.Stmts {
			if st.Tensor == "G" {
				continue
			}
			names = append(names, st.Tensor)
		}
		for _, order := range permutations(names) {
			c := c
			c.outputs = order
			t.Run(fmt.Sprintf("%s/%v", c.name, order), func(t *testing.T) {
				spec, wrt, xs, dys := c.data(t, 3)
				if len(spec.Outputs()) != len(order) {
					t.Fatalf("outputs %d, want %v", len(spec.Outputs()), order)
				}
				g, gs := gradSpec(t, spec, wrt)
				checkFD(t, spec, g, gs, xs, dys, wrt, 1e-6)
				// The saving gradient op, given the forward run's tensors,
				// computes what the recomputing one does.
				sv, svs := gradSpecOpts(t, spec, wrt, gradOptions{save: true})
				checkSavingMatches(t, spec, g, gs, sv, svs, xs, dys, wrt)
			})
		}
	}
}

// TestGradOfInfiniteConstant: a constant that folds to +Inf has no literal
// in the language; the gradient op is built as IR, never printed and
// parsed back, so it still derives.
func TestGradOfInfiniteConstant(t *testing.T) {
	c := gcase{name: "inf", src: "Y[i] = X[i] * 1e308 * 1e308", shapes: [][]int64{{3}}}
	spec, wrt, _, _ := c.data(t, 1)
	if _, err := Grad(spec, wrt); err != nil {
		t.Fatalf("Grad: %v", err)
	}
}
