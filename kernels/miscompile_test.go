package kernels

import (
	"strings"
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

// TestShortLocalArrayIsAligned: GCC 12.2 stored to this statement's
// 3-element double accumulator with 16-byte aligned vector stores without
// aligning it, and the kernel crashed the process; local arrays are now
// declared 64-byte aligned. Found by the property suite.
func TestShortLocalArrayIsAligned(t *testing.T) {
	o := testops.Op{Name: "short_local",
		Src: "T0[i, j] += X[0, (j + 1) % N] + V[i] + W[j]\n" +
			"T1[j, i] += T0[(i + 1) % M, where(j > 0, j - 1, 0)] + V[i] + W[j]",
		Shapes: [][]int64{{3, 5}, {5}, {3}},
		Consts: map[string]parse.ConstValue{"M": {Int: 3}, "N": {Int: 5}}}
	spec, err := o.Spec(ir.Float64)
	if err != nil {
		t.Fatal(err)
	}
	src, err := Source(spec)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(src, "double r_acc[3] __attribute__((aligned(64)));") {
		t.Fatalf("the local array is not declared aligned:\n%s", src)
	}
	run(t, spec, hostbuf.RandomInputs(spec, false, 1), 1, 1e-12)
}
