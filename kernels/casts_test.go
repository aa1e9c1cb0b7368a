package kernels

import (
	"testing"

	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/internal/hostbuf"
	"github.com/neoflow/neoflow/internal/testops"
)

// castOps write integer tensors through casts and read them back as
// values and as an index.
var castOps = []testops.Op{
	{Name: "cast_int32", Src: "O1[m, n] = int32(A[m, n] * 3.0 + 0.3)", Shapes: [][]int64{{5, 7}}},
	{Name: "cast_int64_read", Src: "Q[i] = int64(X[i] * 4.0)\nY[i] = float(Q[i]) * X[i] + float(i)", Outputs: []string{"Y", "Q"},
		Shapes: [][]int64{{9}}},
}

// TestCastsMatchInterpreter runs the cast ops as C kernels and on the CUDA
// emulator against the interpreter, in every dtype the backend runs: the
// integer tensors must hold the interpreter's truncated values exactly.
func TestCastsMatchInterpreter(t *testing.T) {
	for _, o := range castOps {
		for _, dt := range []ir.DType{ir.Float32, ir.Float64, ir.Float16, ir.BFloat16} {
			t.Run(o.Name+"_"+dt.String(), func(t *testing.T) {
				spec, err := o.Spec(dt)
				if err != nil {
					t.Fatal(err)
				}
				ints := 0
				for _, td := range spec.Tensors {
					if td.Role != ir.RoleInput && td.DType.Integer() {
						ints++
					}
				}
				if ints != 1 {
					t.Fatalf("%d integer tensors written, want 1", ints)
				}
				inputs := hostbuf.RandomInputs(spec, false, 4)
				if !dt.Half() {
					run(t, spec, inputs, 2, 0)
				}
				runCUDAEmulated(t, spec, nil, inputs, tolerance(dt))
			})
		}
	}
}
