package kernels

import (
	"testing"

	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/parse"
	"github.com/neoflow/neoflow/internal/hostbuf"
	"github.com/neoflow/neoflow/internal/testops"
)

// TestReversedSumIsNotMiscompiled: GCC 12.2 at -O3 vectorized the outer
// loop of this sum wrongly (X[0, 0] was added twice), until DefaultFlags
// limited its own vectorization (-fvect-cost-model=very-cheap). Found by
// the property suite; the kernel must match the interpreter.
func TestReversedSumIsNotMiscompiled(t *testing.T) {
	for _, src := range []string{"T1[] += X[i, N - 1 - j]", "T1[] += X[i, N - 1 - j] + W[j]"} {
		o := testops.Op{Name: "reversed", Src: src, Shapes: [][]int64{{3, 5}, {5}},
			Consts: map[string]parse.ConstValue{"N": {Int: 5}}}
		if len(src) < 30 {
			o.Shapes = o.Shapes[:1]
		}
		spec, err := o.Spec(ir.Float64)
		if err != nil {
			t.Fatal(err)
		}
		one := make([]float64, 15)
		one[0] = 1
		inputs := [][]float64{one}
		if len(o.Shapes) == 2 {
			inputs = append(inputs, make([]float64, 5))
		}
		run(t, spec, inputs, 1, 0)
		run(t, spec, hostbuf.RandomInputs(spec, false, 1), 2, 1e-12)
	}
}
