package loops

import (
	"testing"

	"github.com/neoflow/neoflow/core/ir"
)

// contraction is Y[o,c] += A[o,r] * B[c,r] over o, c and r.
func contraction(o, c, r int64) *ir.Spec {
	return spec("contract", ir.Float32,
		[]*ir.TensorDecl{tensor("A", ir.RoleInput, o, r), tensor("B", ir.RoleInput, c, r), tensor("Y", ir.RoleOutput, o, c)},
		stmt("Y", ir.Sum, bin(ir.Mul, at("A", ix("o"), ix("r")), at("B", ix("c"), ix("r"))),
			[]ir.Var{v("o", o), v("c", c)}, v("r", r)))
}

// The default GPU schedule gives a block reduction to a statement whose
// tiling would leave the GPU idle (a weight gradient: few points, each a
// long sum) and keeps the tiling where it launches enough blocks or the
// sums are short.
func TestGPUScheduleBlockReducesWhereTilingIdles(t *testing.T) {
	cases := []struct {
		name      string
		o, c, r   int64
		wantBlock bool
	}{
		{"few points", 32, 32, 512, true},                  // 1024 points
		{"weight gradient", 60, 80, 50176, true},           // ShuffleNet's group 1x1 conv d_W: 4 tiled blocks
		{"short sums", 60, 80, 1024, false},                // few blocks, but 1024 terms a point
		{"enough blocks", 1024, 1024, 8192, false},         // 256 tiled blocks
		{"few points, short sums", 16, 16, 128, false},     // under MinGPUBlockReduction: tiled
		{"square GEMM", 4096, 4096, 4096, false},           // 4096 blocks
		{"many points, few blocks", 512, 512, 4096, false}, // 32 blocks, but a block a point would re-read A and B
		{"long sums, 2 blocks", 64, 128, 1 << 14, true},
		{"8192 points, 4096 terms", 64, 128, 4096, true},
	}
	for _, tc := range cases {
		s := contraction(tc.o, tc.c, tc.r)
		sc := GPUSchedule(s, 0)
		if got := sc.GPUReduce != nil; got != tc.wantBlock {
			tiled := DefaultGPUTiling(s, s.Stmts[0])
			t.Errorf("%s (%dx%d points, %d terms): block reduction %v, want %v (tiling %+v, %d blocks)",
				tc.name, tc.o, tc.c, tc.r, got, tc.wantBlock, tiled, tiled.Blocks(s.Stmts[0]))
		}
		if sc.GPUReduce == nil && sc.GPU == nil {
			t.Errorf("%s: neither tiled nor block-reduced", tc.name)
		}
	}
}

func TestGPUTilingBlocks(t *testing.T) {
	st := contraction(60, 80, 64).Stmts[0]
	g := &GPUTiling{Spatial: []GPUAxis{{Axis: "c", Threads: 16, Regs: 4}}}
	if got := g.Blocks(st); got != 60*2 { // o unlisted: one point a block; c: 80 over 64
		t.Errorf("Blocks = %d, want 120", got)
	}
}
