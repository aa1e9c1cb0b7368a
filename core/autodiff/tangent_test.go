package autodiff

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/neoflow/neoflow/core/interp"
	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/sema"
)

// tangentSpec derives spec's tangent op and specializes it.
func tangentSpec(t testing.TB, spec *ir.Spec, wrt []bool) (*GradOp, *ir.Spec) {
	t.Helper()
	g, err := Tangent(spec, wrt)
	if err != nil {
		t.Fatalf("Tangent: %v", err)
	}
	gs, err := sema.Specialize(g.Op, spec.DType, g.InputShapes(spec), g.Sizes)
	if err != nil {
		t.Fatalf("tangent op does not specialize: %v\n%s", err, Explain(g))
	}
	return g, gs
}

// runTangent runs the tangent op on inputs xs and tangents txs (one per
// selected input): the output tangents, in output order.
func runTangent(t testing.TB, g *GradOp, gs, spec *ir.Spec, xs, txs [][]float64) [][]float64 {
	t.Helper()
	res, err := interp.Run(gs, append(append([][]float64{}, xs...), txs...))
	if err != nil {
		t.Fatalf("running the tangent op: %v\n%s", err, Explain(g))
	}
	var out [][]float64
	for _, name := range g.Op.Outputs {
		out = append(out, byName(gs, res, name))
	}
	return out
}

// checkTangent checks spec's tangent op against central finite
// differences along the tangents and against the gradient op: for every
// output gradient dY, Σ t_Y·dY (forward mode) equals Σ t_X·d_X (reverse
// mode).
func checkTangent(t *testing.T, spec *ir.Spec, wrt []bool, xs, dys [][]float64, r *rand.Rand, tol float64) *GradOp {
	t.Helper()
	g, gs := tangentSpec(t, spec, wrt)
	var txs [][]float64
	for i, x := range xs {
		if wrt[i] {
			v := make([]float64, len(x))
			for j := range v {
				v[j] = 2*r.Float64() - 1
			}
			txs = append(txs, v)
		}
	}
	tys := runTangent(t, g, gs, spec, xs, txs)

	// Finite differences of Σ dY·Y along the tangents.
	const h = 1e-6
	shift := func(s float64) [][]float64 {
		out := make([][]float64, len(xs))
		k := 0
		for i, x := range xs {
			out[i] = append([]float64{}, x...)
			if wrt[i] {
				for j := range x {
					out[i][j] += s * txs[k][j]
				}
				k++
			}
		}
		return out
	}
	fd := (loss(t, spec, shift(h), dys) - loss(t, spec, shift(-h), dys)) / (2 * h)
	fwd := 0.0
	for k := range tys {
		for j, v := range tys[k] {
			fwd += v * dys[k][j]
		}
	}
	if math.IsNaN(fwd) || math.Abs(fwd-fd) > tol*(1+math.Abs(fd)) {
		t.Fatalf("Σ t_Y·dY: tangent op %.12g, finite differences %.12g\n%s", fwd, fd, Explain(g))
	}

	_, grs := gradSpec(t, spec, wrt)
	grads := analytic(t, nil, grs, spec, xs, dys, wrt)
	rev, k := 0.0, 0
	for i, in := range spec.Op.Inputs {
		if wrt[i] {
			for j, v := range grads[in] {
				rev += v * txs[k][j]
			}
			k++
		}
	}
	if math.Abs(fwd-rev) > 1e-9*(1+math.Abs(rev)) {
		t.Fatalf("Σ t_Y·dY = %.15g (forward mode) but Σ t_X·d_X = %.15g (reverse mode)\n%s", fwd, rev, Explain(g))
	}
	return g
}

// TestTangentTable checks forward mode over the gradient table, each case
// with every input selected and with each input alone.
func TestTangentTable(t *testing.T) {
	for _, c := range append(append([]gcase{}, gradCases...), repeatCases...) {
		t.Run(c.name, func(t *testing.T) {
			spec, wrt, xs, dys := c.data(t, 1)
			r := rand.New(rand.NewPCG(7, uint64(len(c.src))))
			checkTangent(t, spec, wrt, xs, dys, r, 1e-6)
			for i := range wrt {
				if !wrt[i] || len(wrt) == 1 {
					continue
				}
				one := make([]bool, len(wrt))
				one[i] = true
				checkTangent(t, spec, one, xs, dys, r, 1e-6)
			}
		})
	}
}

// TestTangentFuzz runs forward mode over random statements: quasi-affine
// reads, guards, and every reduction.
func TestTangentFuzz(t *testing.T) {
	for seed := uint64(0); seed < 200; seed++ {
		spec, _ := randomSpec(t, seed)
		r := rand.New(rand.NewPCG(seed, 1))
		xs := randomInputs(r, spec, 0.2, 1.2)
		checkTangent(t, spec, allTrue(len(spec.Op.Inputs)), xs, randomGrads(r, spec), r, 1e-5)
	}
}

// TestTangentOp pins down the tangent op's contract: its inputs and
// outputs, statements over the forward statement's own variables (no
// inversion), the max= rule, a zero tangent for an output no selected
// input reaches, and Explain's notes.
func TestTangentOp(t *testing.T) {
	c := gcase{name: "f", src: "T[i] max= X[i, k] * W[k]\nY[i] = tanh(T[i])\nZ[i] = V[i] * 2.0",
		shapes: [][]int64{{3, 4}, {4}, {3}}}
	spec := specialize(t, c)
	g, err := Tangent(spec, []bool{true, false, false})
	if err != nil {
		t.Fatal(err)
	}
	ex := Explain(g)
	for _, frag := range []string{
		"# inputs: X, W, V, t_X",
		"# outputs: t_Y, t_Z",
		"t_T[i] += where(", "t_X[i, k] * W[k]", "arg_T[i]",
		"t_Y[i] = ", "tangent of statement 2",
		"t_Z[i] = 0.0", "no tangent reaches Z",
	} {
		if !strings.Contains(ex, frag) {
			t.Errorf("Explain lacks %q:\n%s", frag, ex)
		}
	}
	// An output a later statement reads: the op's own output list.
	c2 := gcase{name: "g", src: "C[i] = X[i] * 2.0\nH[i] = tanh(C[i])", shapes: [][]int64{{3}}, outputs: []string{"H", "C"}}
	g2, err := Tangent(specialize(t, c2), []bool{true})
	if err != nil {
		t.Fatal(err)
	}
	if ex2 := Explain(g2); !strings.Contains(ex2, "# outputs: t_H, t_C") {
		t.Errorf("Explain's outputs:\n%s", ex2)
	}
	if g.Op.Name != "f_jvp" || !strings.Contains(ex, "# f_jvp") {
		t.Errorf("name %q", g.Op.Name)
	}
	if _, err := Tangent(spec, []bool{false, false, false}); err == nil || !strings.Contains(err.Error(), "selects no input") {
		t.Errorf("no input selected: %v", err)
	}
}

// TestTangentOfTangent differentiates tangent and gradient ops again:
// forward over forward, and forward over reverse (a Hessian-vector
// product, as torch.func.hessian computes it).
func TestTangentOfTangent(t *testing.T) {
	c := gcase{name: "f", src: "Y[i] += exp(X[i, k]) * W[k] * X[i, k]", shapes: [][]int64{{2, 3}, {3}}}
	spec, wrt, xs, dys := c.data(t, 3)
	r := rand.New(rand.NewPCG(3, 3))
	g, gs := tangentSpec(t, spec, wrt)
	txs := randomInputs(r, spec, 0, 0)
	checkTangent(t, gs, allTrue(len(gs.Op.Inputs)), append(append([][]float64{}, xs...), txs...), randomGrads(r, gs), r, 1e-6)
	_ = g
	_, grs := gradSpec(t, spec, wrt)
	checkTangent(t, grs, allTrue(len(grs.Op.Inputs)), append(append([][]float64{}, xs...), dys...), randomGrads(r, grs), r, 1e-6)
}
