package kernels

import (
	"context"
	"strings"
	"testing"

	"github.com/neoflow/neoflow/core/interp"
	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/loops"
	"github.com/neoflow/neoflow/internal/cudaemu"
	"github.com/neoflow/neoflow/internal/hostbuf"
	"github.com/neoflow/neoflow/internal/testops"
)

// TestCUDAEmulated renders every test op and its gradient as CUDA with the
// GPU default schedules, runs the module on the host (internal/cudaemu)
// and compares it with the reference interpreter.
func TestCUDAEmulated(t *testing.T) {
	for _, o := range testops.All {
		for _, dt := range []ir.DType{ir.Float32, ir.Float64} {
			t.Run(o.Name+"_"+dt.String(), func(t *testing.T) {
				t.Parallel()
				spec, err := o.Spec(dt)
				if err != nil {
					t.Fatal(err)
				}
				runCUDAEmulated(t, spec, nil, hostbuf.RandomInputs(spec, o.Positive, 1), tolerance(dt))
				if len(spec.InputsDecl()) == 0 {
					return
				}
				g, _, err := o.GradSpec(dt)
				if err != nil {
					t.Fatal(err)
				}
				runCUDAEmulated(t, g, nil, hostbuf.RandomInputs(g, o.Positive, 2), tolerance(dt))
			})
		}
	}
}

// TestCUDAEmulatedScatter runs the scatter statements under the GPU
// default schedule: the points distributed over threads, combining with
// atomic adds.
func TestCUDAEmulatedScatter(t *testing.T) {
	for _, o := range scatterOps {
		for _, dt := range []ir.DType{ir.Float32, ir.Float64} {
			t.Run(o.Name+"_"+dt.String(), func(t *testing.T) {
				spec, err := o.Spec(dt)
				if err != nil {
					t.Fatal(err)
				}
				mod, err := CUDASource(spec, nil, "nf_test")
				if err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(mod.Source, "atomicAdd(&") {
					t.Fatalf("the scatter has no atomic add:\n%s", mod.Source)
				}
				runCUDAEmulated(t, spec, nil, hostbuf.RandomInputs(spec, false, 3), tolerance(dt))
			})
		}
	}
}

func runCUDAEmulated(t *testing.T, spec *ir.Spec, scheds []loops.Schedule, inputs [][]float64, tol float64) {
	t.Helper()
	mod, err := CUDASource(spec, scheds, "nf_test")
	if err != nil {
		t.Fatal(err)
	}
	k, err := cudaemu.Compile(context.Background(), spec, mod, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	want, err := interp.Run(spec, inputs)
	if err != nil {
		t.Fatal(err)
	}
	bufs := hostbuf.New(spec, inputs)
	defer bufs.Free()
	bufs.Poison(spec)
	if err := k.Run(bufs.Ptr); err != nil {
		t.Fatal(err)
	}
	compareWritten(t, spec, bufs, want, tol, mod.Source)
}
