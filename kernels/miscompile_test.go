package kernels

import (
	"strings"
	"testing"

	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/parse"
	"github.com/neoflow/neoflow/internal/hostbuf"
	"github.com/neoflow/neoflow/internal/testops"
)

// TestReversedSumIsNotMiscompiled: GCC 12.2's loop vectorizer vectorized
// the outer loop of these sums wrongly (at N = 5 X[0, 0] was added twice;
// at N = 2 the sum was wrong with -fvect-cost-model=very-cheap too), until
// the rendered C kept its loop vectorizer off every loop the schedule did
// not make a lane loop (NF_SCALAR, kernels/cgen). Found by the property
// suite; the kernel must match the interpreter.
func TestReversedSumIsNotMiscompiled(t *testing.T) {
	for _, c := range []struct {
		src  string
		m, n int64
	}{
		{"T1[] += X[i, N - 1 - j]", 3, 5}, {"T1[] += X[i, N - 1 - j] + W[j]", 3, 5},
		{"T1[] += X[i, N - 1 - j] + W[j]", 4, 2}, {"T1[] += X[i, N - 1 - j]", 4, 2},
	} {
		src := c.src
		o := testops.Op{Name: "reversed", Src: src, Shapes: [][]int64{{c.m, c.n}, {c.n}},
			Consts: map[string]parse.ConstValue{"N": {Int: c.n}}}
		if len(src) < 30 {
			o.Shapes = o.Shapes[:1]
		}
		spec, err := o.Spec(ir.Float64)
		if err != nil {
			t.Fatal(err)
		}
		one := make([]float64, c.m*c.n)
		one[0] = 1
		inputs := [][]float64{one}
		if len(o.Shapes) == 2 {
			inputs = append(inputs, make([]float64, c.n))
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

// TestMaxGradientIsNotMiscompiled: the gradient of a max of an index value
// and a constant came out wrong (d T0[1] / d V[0] = 0.4 where the max
// takes the constant) while GCC vectorized loops of its own (NF_SCALAR);
// the gradient kernel must match the interpreter.
func TestMaxGradientIsNotMiscompiled(t *testing.T) {
	o := testops.Op{Name: "max_grad", Src: "T0[i] = max((i * 0.5) * (V[0] / (0.5 * 0.5 + 1.0)), 0.5) + V[i]",
		Shapes: [][]int64{{3}}}
	g, _, err := o.GradSpec(ir.Float64)
	if err != nil {
		t.Fatal(err)
	}
	for seed := range uint64(4) {
		run(t, g, hostbuf.RandomInputs(g, true, seed), 1, 1e-12)
	}
}

// TestMaxMinLaneLoopIsNotMiscompiled: GCC 12.2 with AVX-512 (-march=native
// on the development machine) summed only the first i of this reduction's
// lane loop when nf_max and nf_min combined their conditions with ||
// (found by the property suite's long run); they use | now.
func TestMaxMinLaneLoopIsNotMiscompiled(t *testing.T) {
	o := testops.Op{Name: "max_min_lanes", Src: "T0[j] += 0.5 + max(min(i * 0.5, 0.5), i * 0.5) + V[i] + W[j]",
		Shapes: [][]int64{{4}, {2}}, Sizes: map[string]int64{"i": 4}}
	spec, err := o.Spec(ir.Float64)
	if err != nil {
		t.Fatal(err)
	}
	run(t, spec, [][]float64{make([]float64, 4), make([]float64, 2)}, 1, 0)
	run(t, spec, hostbuf.RandomInputs(spec, false, 1), 1, 1e-12)
}
