package fuse

import (
	"math"
	"math/rand"
	"testing"

	"github.com/neoflow/neoflow/core/autodiff"
	"github.com/neoflow/neoflow/core/interp"
	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/parse"
	"github.com/neoflow/neoflow/core/sema"
)

// specOf parses, checks and specializes src for float64 inputs of shapes.
func specOf(t *testing.T, src string, consts map[string]int64, inputs []string, shapes [][]int64, sizes map[string]int64) *ir.Spec {
	t.Helper()
	cv := map[string]parse.ConstValue{}
	for k, v := range consts {
		cv[k] = parse.ConstValue{Int: v}
	}
	op, err := parse.Parse(src, parse.Options{Name: "t", Inputs: inputs, Consts: cv})
	if err != nil {
		t.Fatal(err)
	}
	if err := sema.Check(op); err != nil {
		t.Fatal(err)
	}
	spec, err := sema.Specialize(op, ir.Float64, shapes, sizes)
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

// gradSpec is the specialized saving gradient op of spec with respect to
// every input.
func gradSpec(t *testing.T, spec *ir.Spec) *ir.Spec {
	t.Helper()
	gs, err := gradOf(spec)
	if err != nil {
		t.Fatal(err)
	}
	return gs
}

// gradOf is the specialized saving gradient op of spec with respect to
// every input.
func gradOf(spec *ir.Spec) (*ir.Spec, error) {
	wrt := make([]bool, len(spec.Op.Inputs))
	for i := range wrt {
		wrt[i] = true
	}
	g, err := autodiff.GradSaving(spec, wrt)
	if err != nil {
		return nil, err
	}
	return sema.Specialize(g.Op, ir.Float64, g.InputShapes(spec), g.Sizes)
}

// all runs every fusion pass in the pipeline's order.
func all(spec *ir.Spec, opts Options, notes *Notes) *ir.Spec {
	for _, p := range []func(*ir.Spec, Options, *Notes) *ir.Spec{Fold, Merge, Split, CSE, Inline, Prune, Group} {
		spec = p(spec, opts, notes)
	}
	return spec
}

// randomInputs draws one slice per input of spec from seed.
func randomInputs(spec *ir.Spec, seed int64) [][]float64 {
	r := rand.New(rand.NewSource(seed))
	var ins [][]float64
	for _, t := range spec.InputsDecl() {
		x := make([]float64, t.Elems())
		for i := range x {
			x[i] = r.Float64()*2 - 1
		}
		ins = append(ins, x)
	}
	return ins
}

// sameOutputs runs both specs on the same inputs in the interpreter and
// compares their outputs (by name) within a relative tolerance.
func sameOutputs(t *testing.T, a, b *ir.Spec, seed int64) {
	t.Helper()
	ins := randomInputs(a, seed)
	outA, err := interp.Run(a, ins)
	if err != nil {
		t.Fatalf("unfused: %v\n%s", err, ir.PrintSpec(a))
	}
	outB, err := interp.Run(b, ins)
	if err != nil {
		t.Fatalf("fused: %v\n%s", err, ir.PrintSpec(b))
	}
	byName := func(spec *ir.Spec, out [][]float64) map[string][]float64 {
		m := map[string][]float64{}
		for i, t := range spec.Tensors {
			if t.Role == ir.RoleOutput {
				m[t.Name] = out[i]
			}
		}
		return m
	}
	ma, mb := byName(a, outA), byName(b, outB)
	if len(ma) != len(mb) {
		t.Fatalf("outputs %d vs %d", len(ma), len(mb))
	}
	for name, x := range ma {
		y := mb[name]
		for i := range x {
			if d := math.Abs(x[i] - y[i]); d > 1e-9*(1+math.Abs(x[i])) && !(math.IsNaN(x[i]) && math.IsNaN(y[i])) {
				t.Fatalf("%s[%d]: unfused %g, fused %g\nunfused:\n%s\nfused:\n%s", name, i, x[i], y[i], ir.PrintSpec(a), ir.PrintSpec(b))
			}
		}
	}
}
