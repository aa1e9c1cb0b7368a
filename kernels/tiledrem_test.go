package kernels

import (
	"fmt"
	"strings"
	"testing"

	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/loops"
	"github.com/neoflow/neoflow/internal/testops"
)

// TestTiledLaneRemainderAccumulator runs tiled reductions whose lanes run
// over a reduction axis with a remainder (11 = 8 + 3 lanes), which fold
// into an accumulator of their own (loops' remName), against the
// interpreter: a grouped 1x1 convolution's weight gradient (sum) and a max,
// with the accumulator holding the whole reduction or a partial one (n
// outside it), in float32 and float64.
func TestTiledLaneRemainderAccumulator(t *testing.T) {
	b := testBuilder(t)
	ops := []testops.Op{
		{Name: "gw", Src: "GW[o,c] += T[n,o,h,w] * X[n,(o/3)*6+c,h,w]", Shapes: [][]int64{{2, 6, 5, 11}, {2, 12, 5, 11}}, Sizes: map[string]int64{"c": 6}},
		{Name: "gmax", Src: "M[o,c] max= T[n,o,h,w] * X[n,(o/3)*6+c,h,w]", Shapes: [][]int64{{2, 6, 5, 11}, {2, 12, 5, 11}}, Sizes: map[string]int64{"c": 6}},
	}
	orders := map[string]string{
		"whole":   "o.t0 c.t0 | n h w.t0 o.t1 c.t1 o.t2 c.t2 w.t1",
		"partial": "c.t0 o.t0 o.t1 c.t1 n | h w.t0 o.t2 c.t2 w.t1",
	}
	for _, o := range ops {
		for _, dt := range []ir.DType{ir.Float32, ir.Float64} {
			for name, order := range orders {
				t.Run(fmt.Sprintf("%s/%s/%s", o.Name, dt, name), func(t *testing.T) {
					spec, err := o.Spec(dt)
					if err != nil {
						t.Fatal(err)
					}
					ls := strings.Fields(order)
					acc := 0
					for i, l := range ls {
						if l == "|" {
							acc = i
						}
					}
					ls = append(ls[:acc:acc], ls[acc+1:]...)
					s := loops.Schedule{Tiling: &loops.Tiling{
						Splits: []loops.Split{{Axis: "o", Factors: []int64{1, 3}}, {Axis: "c", Factors: []int64{1, 2}}, {Axis: "w", Factors: []int64{8}}},
						Loops:  ls, Parallel: 1, Vector: true, AccAt: acc,
						Unroll: []loops.Unroll{{Loop: "o.t2", Factor: 8}, {Loop: "c.t2", Factor: 8}},
					}}
					src, err := ScheduledSource(spec, []loops.Schedule{s})
					if err != nil {
						t.Fatal(err)
					}
					if !strings.Contains(src, "r_rem[") {
						t.Fatalf("the remainder has no accumulator of its own:\n%s", src)
					}
					runScheduled(t, b, spec, []loops.Schedule{s}, 5)
				})
			}
		}
	}
}
