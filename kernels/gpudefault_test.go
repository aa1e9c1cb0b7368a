package kernels

import (
	"testing"

	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/loops"
	"github.com/neoflow/neoflow/internal/hostbuf"
	"github.com/neoflow/neoflow/internal/testops"
)

// A weight gradient with too few points for the default tiling to fill a
// GPU (a group 1x1 convolution's: 48x48 weights, each summing 4096 batch
// and pixel terms) runs as a block reduction by default, and computes what
// the interpreter does.
func TestWeightGradientBlockReducedOnTheEmulator(t *testing.T) {
	o := testops.Op{Name: "gconv_dw", Src: "W[o, c] += D[n, o, h, w] * X[n, (o / 16) * 48 + c, h, w]",
		Shapes: [][]int64{{4, 48, 32, 32}, {4, 144, 32, 32}}, Sizes: map[string]int64{"c": 48}}
	spec, err := o.Spec(ir.Float32)
	if err != nil {
		t.Fatal(err)
	}
	if s := loops.GPUSchedule(spec, 0); s.GPUReduce == nil {
		t.Fatalf("default GPU schedule %+v, want a block reduction", s)
	}
	runCUDAEmulated(t, spec, nil, hostbuf.RandomInputs(spec, false, 5), tolerance(ir.Float32))
}
