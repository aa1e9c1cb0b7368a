package autodiff

import (
	"strings"
	"testing"

	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/parse"
	"github.com/neoflow/neoflow/core/sema"
)

// The gradients of reads and writes through index tensors: a gather's is
// a scatter whose row axis is free (not matched point by point), a
// scatter's are gathers through its index tensor, with no sum over the
// scattered axis left.
func TestIndexTensorGradients(t *testing.T) {
	for _, c := range []struct {
		src    string
		inputs []string
		shapes [][]int64
		sizes  map[string]int64
		ints   map[string]ir.DType
		want   []string
	}{
		{"O[b, d] += LUT[I[b, k], d]", []string{"LUT", "I"}, [][]int64{{10, 4}, {3, 2}}, nil, map[string]ir.DType{"I": ir.Int64},
			[]string{"d_LUT[lut0, d_1] += where(0 > 1, LUT[0, 0], where(I[b, k] == lut0, d_O[b, d_1], 0.0))"}},
		{"Y[Dst[e], f] += X[Src[e], f] * Norm[e]", []string{"X", "Src", "Dst", "Norm"}, [][]int64{{6, 3}, {9}, {9}, {9}},
			map[string]int64{"v_Dst": 5}, map[string]ir.DType{"Src": ir.Int64, "Dst": ir.Int32},
			[]string{"d_X[x0, f_1] += where(Src[e] == x0, d_Y[Dst[e], f_1] * Norm[e], 0.0)", "d_Norm[e] += d_Y[Dst[e], f] * X[Src[e], f]"}},
		// The previous token's row: the guard b > 0 keeps I[b - 1] in
		// bounds, and stays before it in the gather's condition.
		{"O[b, d] = where(b > 0, E[I[b - 1], d], 0.0)", []string{"E", "I"}, [][]int64{{7, 3}, {5}}, nil, map[string]ir.DType{"I": ir.Int64},
			[]string{"b > 0 && I[b - 1] == "}},
	} {
		op, err := parse.Parse(c.src, parse.Options{Inputs: c.inputs})
		if err != nil {
			t.Fatal(err)
		}
		spec, err := sema.SpecializeTyped(op, ir.Float64, c.shapes, c.sizes, c.ints)
		if err != nil {
			t.Fatal(err)
		}
		wrt := make([]bool, len(c.inputs))
		for i, in := range c.inputs {
			wrt[i] = c.ints[in] == ir.InvalidDType
		}
		g, err := Grad(spec, wrt)
		if err != nil {
			t.Fatal(err)
		}
		text := ir.Print(g.Op)
		for _, w := range c.want {
			if !strings.Contains(text, w) {
				t.Errorf("%s: gradient lacks %q:\n%s", c.src, w, text)
			}
		}
		if strings.Contains(text, "v_Dst") {
			t.Errorf("%s: the gradient still sums over the scattered axis:\n%s", c.src, text)
		}
		all := make([]bool, len(c.inputs))
		for i := range all {
			all[i] = true
		}
		if _, err := Grad(spec, all); err == nil || !strings.Contains(err.Error(), "which has no gradient") {
			t.Errorf("%s: a gradient of an integer input: %v", c.src, err)
		}
	}
}
