package autotune

import (
	"testing"

	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/internal/hostbuf"
	"github.com/neoflow/neoflow/internal/testops"
)

// FirstSchedules (a build without a record under NEOFLOW_TUNE=off)
// register-tiles the contractions with enough work: in
// lanes over the reduction where the default reduces there (every loop
// of the tile unrolled, so its accumulators stay in registers), 8 rows of
// 4 vectors where the default's lanes are spatial, the read all rows share
// (U) packed before the row tiles; small statements and
// elementwise ones keep their defaults. The kernels match the reference
// interpreter.
func TestFirstSchedulesRegisterTileContractions(t *testing.T) {
	b := testBuilder(t)
	for _, c := range []struct {
		op   testops.Op
		want string // the schedule as printed; "" for the default (nil)
	}{
		{testops.Op{Name: "uh", Src: "UH[b, g] += U[g, j] * H[b, j]", Inputs: []string{"U", "H"}, Shapes: [][]int64{{512, 256}, {16, 256}}},
			"tiled b[1 2] g[1 8] j[16] loops [g.t0 b.t0 j.t0 g.t1 b.t1 g.t2 b.t2 j.t1] parallel 2 acc 2 vector unroll b.t2:8 unroll g.t2:8"},
		{testops.Op{Name: "dh", Src: "D[b, j] += E[b, g] * U[g, j]", Inputs: []string{"E", "U"}, Shapes: [][]int64{{16, 256}, {256, 512}}},
			"tiled b[4 4] j[1 64] g[256] loops [b.t0 j.t0 g.t0 b.t1 j.t1 g.t1 b.t2 j.t2] parallel 2 acc 5 vector unroll b.t2:8 pack 1@3"},
		// A grouped 1x1 convolution's weight gradient: the tiles of c read
		// more (X) than those of o (T and X) per tile, so c runs outermost.
		{testops.Op{Name: "gw", Src: "GW[o,c] += T[n,o,h,w] * X[n,(o/20)*80+c,h,w]", Inputs: []string{"T", "X"}, Shapes: [][]int64{{16, 60, 28, 28}, {16, 240, 28, 28}}, Sizes: map[string]int64{"c": 80}},
			"tiled o[1 2] c[1 8] w[16] loops [c.t0 o.t0 n h w.t0 c.t1 o.t1 c.t2 o.t2 w.t1] parallel 2 acc 2 vector unroll o.t2:8 unroll c.t2:8"},
		{testops.Op{Name: "small", Src: "C[i, j] += A[i, k] * B[k, j]", Inputs: []string{"A", "B"}, Shapes: [][]int64{{64, 64}, {64, 64}}}, ""},
		{testops.Op{Name: "ew", Src: "C[i, j] = A[i, j] * 2.0", Inputs: []string{"A"}, Shapes: [][]int64{{2048, 2048}}}, ""},
	} {
		spec, err := c.op.Spec(ir.Float32)
		if err != nil {
			t.Fatal(err)
		}
		got := FirstSchedules(spec)
		switch {
		case c.want == "" && got != nil:
			t.Errorf("%s: %v, want the default", c.op.Name, got)
		case c.want != "" && (len(got) != 1 || got[0].String() != c.want):
			t.Errorf("%s: %v\nwant [%s]", c.op.Name, got, c.want)
		case got != nil:
			checkAgainstInterp(t, b, spec, got, hostbuf.RandomInputs(spec, false, 1), 2)
		}
	}
}
