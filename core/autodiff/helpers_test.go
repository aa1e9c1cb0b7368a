package autodiff

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/neoflow/neoflow/core/interp"
	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/parse"
	"github.com/neoflow/neoflow/core/sema"
)

// gcase is a forward op at concrete shapes whose gradient is checked
// against finite differences.
type gcase struct {
	name   string
	src    string
	shapes [][]int64
	sizes  map[string]int64
	consts map[string]parse.ConstValue
	// outputs fixes the output order (parse.Options.Outputs); nil: statement order.
	outputs []string
	wrt     []bool // nil: every input
	// lo, hi bound the random inputs ([-1, 1] when both are zero).
	lo, hi float64
	// inputs overrides the random inputs.
	inputs func(r *rand.Rand) [][]float64
	// explain lists fragments Explain must contain.
	explain []string
	// snf inverts every quasi-affine read through the Smith normal form
	// (gradOptions.forceSNF); the gradient must then use it, and never the
	// indicator form.
	snf bool
}

func specialize(t testing.TB, c gcase) *ir.Spec {
	t.Helper()
	op, err := parse.Parse(c.src, parse.Options{Name: c.name, Consts: c.consts, Outputs: c.outputs})
	if err != nil {
		t.Fatalf("%s: parse: %v", c.name, err)
	}
	spec, err := sema.Specialize(op, ir.Float64, c.shapes, c.sizes)
	if err != nil {
		t.Fatalf("%s: specialize: %v", c.name, err)
	}
	return spec
}

func randomInputs(r *rand.Rand, spec *ir.Spec, lo, hi float64) [][]float64 {
	if lo == 0 && hi == 0 {
		lo, hi = -1, 1
	}
	var out [][]float64
	for _, t := range spec.InputsDecl() {
		v := make([]float64, t.Elems())
		for i := range v {
			v[i] = lo + (hi-lo)*r.Float64()
		}
		out = append(out, v)
	}
	return out
}

// byName picks tensors out of an interp.Run result.
func byName(spec *ir.Spec, res [][]float64, name string) []float64 {
	for i, t := range spec.Tensors {
		if t.Name == name {
			return res[i]
		}
	}
	return nil
}

// gradSpec differentiates spec and specializes the gradient op.
func gradSpec(t testing.TB, spec *ir.Spec, wrt []bool) (*GradOp, *ir.Spec) {
	t.Helper()
	return gradSpecOpts(t, spec, wrt, gradOptions{})
}

func gradSpecOpts(t testing.TB, spec *ir.Spec, wrt []bool, opts gradOptions) (*GradOp, *ir.Spec) {
	t.Helper()
	g, err := grad(spec, wrt, opts)
	if err != nil {
		t.Fatalf("Grad: %v", err)
	}
	gs, err := sema.Specialize(g.Op, spec.DType, g.InputShapes(spec), g.Sizes)
	if err != nil {
		t.Fatalf("gradient op does not specialize: %v\n%s", err, Explain(g))
	}
	return g, gs
}

// checkSavingMatches runs the saving gradient op s (specialized as ss)
// on the forward run's saved tensors and checks that it computes exactly,
// bit for bit, what the recomputing gradient op g (gs) computes.
func checkSavingMatches(t *testing.T, spec *ir.Spec, g *GradOp, gs *ir.Spec, s *GradOp, ss *ir.Spec, xs, dys [][]float64, wrt []bool) {
	t.Helper()
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
}

// analytic runs the gradient op: the gradients of loss = Σ dY·Y.
func analytic(t testing.TB, g *GradOp, gs *ir.Spec, spec *ir.Spec, xs, dys [][]float64, wrt []bool) map[string][]float64 {
	t.Helper()
	res, err := interp.Run(gs, append(append([][]float64{}, xs...), dys...))
	if err != nil {
		t.Fatalf("running the gradient op: %v\n%s", err, Explain(g))
	}
	out := map[string][]float64{}
	for i, in := range spec.Op.Inputs {
		if wrt[i] {
			out[in] = byName(gs, res, "d_"+in)
		}
	}
	return out
}

// loss is Σ_outputs Σ dY·Y of a forward run.
func loss(t testing.TB, spec *ir.Spec, xs, dys [][]float64) float64 {
	res, err := interp.Run(spec, xs)
	if err != nil {
		t.Fatalf("forward run: %v", err)
	}
	s := 0.0
	for k, o := range spec.Outputs() {
		y := byName(spec, res, o.Name)
		for i := range y {
			s += dys[k][i] * y[i]
		}
	}
	return s
}

// checkFD compares the gradient of loss computed by the gradient op with
// central finite differences.
func checkFD(t testing.TB, spec *ir.Spec, g *GradOp, gs *ir.Spec, xs, dys [][]float64, wrt []bool, tol float64) {
	t.Helper()
	got := analytic(t, g, gs, spec, xs, dys, wrt)
	const h = 1e-6
	for i, in := range spec.Op.Inputs {
		if !wrt[i] {
			continue
		}
		for j := range xs[i] {
			x0 := xs[i][j]
			xs[i][j] = x0 + h
			lp := loss(t, spec, xs, dys)
			xs[i][j] = x0 - h
			lm := loss(t, spec, xs, dys)
			xs[i][j] = x0
			fd := (lp - lm) / (2 * h)
			a := got[in][j]
			if math.IsNaN(a) || math.Abs(a-fd) > tol*(1+math.Abs(fd)) {
				t.Fatalf("d_%s[%d]: gradient op gives %.12g, finite differences %.12g\n%s", in, j, a, fd, Explain(g))
			}
		}
	}
}

func randomGrads(r *rand.Rand, spec *ir.Spec) [][]float64 {
	var dys [][]float64
	for _, o := range spec.Outputs() {
		v := make([]float64, o.Elems())
		for i := range v {
			v[i] = 2*r.Float64() - 1
		}
		dys = append(dys, v)
	}
	return dys
}

func allTrue(n int) []bool {
	w := make([]bool, n)
	for i := range w {
		w[i] = true
	}
	return w
}

func (c gcase) run(t *testing.T) *GradOp {
	t.Helper()
	spec, wrt, xs, dys := c.data(t, 1)
	g, gs := gradSpecOpts(t, spec, wrt, gradOptions{forceSNF: c.snf})
	checkFD(t, spec, g, gs, xs, dys, wrt, 1e-6)
	return g
}

// data specializes c and draws its inputs and output gradients from a
// generator seeded by seed and the source: the spec, the inputs selected
// (c.wrt, or all), the inputs and the output gradients.
func (c gcase) data(t *testing.T, seed uint64) (*ir.Spec, []bool, [][]float64, [][]float64) {
	t.Helper()
	spec := specialize(t, c)
	wrt := c.wrt
	if wrt == nil {
		wrt = allTrue(len(spec.Op.Inputs))
	}
	r := rand.New(rand.NewPCG(seed, uint64(len(c.src))))
	xs := randomInputs(r, spec, c.lo, c.hi)
	if c.inputs != nil {
		xs = c.inputs(r)
	}
	return spec, wrt, xs, randomGrads(r, spec)
}

type randT = rand.Rand

func shapeString(s []int64) string { return fmt.Sprint(s) }
