package hostbuf

import (
	"math"
	"testing"

	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/internal/testops"
)

// New poisons what it is not given with NaN; Zeroed leaves it zero. Both
// set the inputs given.
func TestNewAndZeroed(t *testing.T) {
	op := testops.Op{Name: "bufs", Src: "Y[i] = X[i] + Z[i]", Inputs: []string{"X", "Z"}, Shapes: [][]int64{{3000}, {3000}}}
	for _, dt := range []ir.DType{ir.Float32, ir.Float64, ir.Float16} {
		spec, err := op.Spec(dt)
		if err != nil {
			t.Fatal(err)
		}
		x := []float64{1, 2, 3}
		for _, poison := range []bool{true, false} {
			var b *Buffers
			if poison {
				b = New(spec, [][]float64{x, nil})
			} else {
				b = Zeroed(spec, [][]float64{x})
			}
			for i, td := range spec.Tensors {
				got := b.Get(i)
				if len(got) != 3000 {
					t.Fatalf("%v %s: %d elements", dt, td.Name, len(got))
				}
				for j, v := range got {
					want := 0.0
					switch {
					case td.Name == "X" && j < len(x):
						want = x[j]
					case poison:
						want = math.NaN()
					}
					if v != want && !(math.IsNaN(v) && math.IsNaN(want)) {
						t.Fatalf("%v poison %v: %s[%d] = %v, want %v", dt, poison, td.Name, j, v, want)
					}
				}
			}
			b.Free()
		}
	}
}
