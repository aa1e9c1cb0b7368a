package kernels

import (
	"strings"
	"testing"

	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/loops"
	"github.com/neoflow/neoflow/internal/hostbuf"
	"github.com/neoflow/neoflow/internal/nvrtctest"
	"github.com/neoflow/neoflow/internal/testops"
	"github.com/neoflow/neoflow/kernels/nvrtc"
)

// mmaOps are 16-bit contractions of every layout the Tensor Core lowering
// copies differently: operands contiguous along K (vector copies along K),
// along their own axis (vector copies across rows), neither (element
// copies), batch axes, several axes per group, the same tensor read
// twice, and extents that leave edge tiles in M, N and K.
var mmaOps = []testops.Op{
	{Name: "gemm", Src: "C[i,j] += A[i,k] * B[k,j]", Shapes: [][]int64{{64, 64}, {64, 64}}},
	{Name: "gemm_edges", Src: "C[i,j] += A[i,k] * B[k,j]", Shapes: [][]int64{{37, 50}, {50, 45}}},
	{Name: "gemm_nt", Src: "C[i,j] += A[i,k] * B[j,k]", Shapes: [][]int64{{40, 72}, {48, 72}}},
	{Name: "gemm_tn", Src: "C[i,j] += A[k,i] * B[k,j]", Shapes: [][]int64{{24, 40}, {24, 136}}},
	{Name: "gemm_odd_k", Src: "C[i,j] += A[i,k] * B[k,j]", Shapes: [][]int64{{33, 12}, {12, 17}}},
	{Name: "bmm", Src: "C[b,i,j] += A[b,i,k] * B[b,k,j]", Shapes: [][]int64{{3, 40, 24}, {3, 24, 56}}},
	{Name: "linear", Src: "Y[b,t,o] += X[b,t,i] * W[o,i]", Shapes: [][]int64{{2, 20, 48}, {40, 48}}},
	{Name: "gram", Src: "G[i,j] += X[k,i] * X[k,j]", Shapes: [][]int64{{30, 24}}},
	{Name: "two_k", Src: "C[i,j] += A[i,k,l] * B[k,l,j]", Shapes: [][]int64{{16, 6, 8}, {6, 8, 40}}},
	{Name: "out_transposed", Src: "C[j,i] += A[i,k] * B[k,j]", Shapes: [][]int64{{48, 32}, {32, 24}}},
}

// TestMMAEmulated runs every Tensor Core contraction, in float16 and
// bfloat16 and with every tile size, on the host emulator (the mma
// instruction there is warp shuffles and float arithmetic in the same
// fragment layout) against the reference interpreter.
func TestMMAEmulated(t *testing.T) {
	for _, o := range mmaOps {
		for _, dt := range []ir.DType{ir.Float16, ir.BFloat16} {
			t.Run(o.Name+"_"+dt.String(), func(t *testing.T) {
				t.Parallel()
				spec, err := o.Spec(dt)
				if err != nil {
					t.Fatal(err)
				}
				def := loops.GPUSchedule(spec, 0)
				if def.MMA == nil {
					t.Fatalf("default GPU schedule %s, want Tensor Cores", def)
				}
				inputs := hostbuf.RandomInputs(spec, false, 7)
				runCUDAEmulated(t, spec, nil, inputs, tolerance(dt))
				for _, tile := range []loops.MMATiling{{BM: 32, BN: 32}, {BM: 128, BN: 64}, {BM: 128, BN: 128, Warps: 4}, {BM: 32, BN: 32, Warps: 4}} {
					runCUDAEmulated(t, spec, []loops.Schedule{{MMA: &tile}}, inputs, tolerance(dt))
				}
			})
		}
	}
}

// The lowering takes only what it can compute exactly: float32, a
// product with anything but two plain reads, or an operand without an
// axis of its own keeps the other GPU schedules.
func TestMMANotMatched(t *testing.T) {
	for _, c := range []struct {
		o  testops.Op
		dt ir.DType
	}{
		{testops.Op{Name: "f32", Src: "C[i,j] += A[i,k] * B[k,j]", Shapes: [][]int64{{32, 32}, {32, 32}}}, ir.Float32},
		{testops.Op{Name: "scaled", Src: "C[i,j] += 2.0 * A[i,k] * B[k,j]", Shapes: [][]int64{{32, 32}, {32, 32}}}, ir.Float16},
		{testops.Op{Name: "shifted", Src: "C[i,j] += A[i,k+1] * B[k,j]", Shapes: [][]int64{{32, 33}, {32, 32}}}, ir.Float16},
		{testops.Op{Name: "matvec", Src: "Y[i] += A[i,k] * X[k]", Shapes: [][]int64{{32, 32}, {32}}}, ir.Float16},
		{testops.Op{Name: "max", Src: "C[i,j] max= A[i,k] * B[k,j]", Shapes: [][]int64{{32, 32}, {32, 32}}}, ir.BFloat16},
	} {
		spec, err := c.o.Spec(c.dt)
		if err != nil {
			t.Fatalf("%s: %v", c.o.Name, err)
		}
		if _, err := loops.MatchMMA(spec, spec.Stmts[0]); err == nil {
			t.Errorf("%s (%s) matched as a Tensor Core contraction", c.o.Name, c.dt)
		}
		if s := loops.GPUSchedule(spec, 0); s.MMA != nil {
			t.Errorf("%s: default GPU schedule %s", c.o.Name, s)
		}
	}
}

// The rendered kernel uses the mma instruction from sm_80 and vector
// copies where the layout allows them.
func TestMMASource(t *testing.T) {
	spec, err := mmaOps[0].Spec(ir.BFloat16)
	if err != nil {
		t.Fatal(err)
	}
	mod, err := CUDASource(spec, nil, "nf_test")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32", "uint4 nf_ra[", "nf_sa[2]"} {
		if !strings.Contains(mod.Source, want) {
			t.Errorf("source lacks %q:\n%s", want, mod.Source)
		}
	}
	if !mod.Aligned || len(mod.Launches) != 1 || mod.Launches[0].Threads != 256 {
		t.Errorf("module aligned %v, launches %+v", mod.Aligned, mod.Launches)
	}
}

// Every Tensor Core contraction compiles with NVRTC to CUBIN for sm_80
// and sm_90 (ptxas checks the inline mma instruction), in both 16-bit
// dtypes.
func TestMMACompiles(t *testing.T) {
	lib := nvrtctest.Library(t)
	for _, o := range mmaOps {
		for _, dt := range []ir.DType{ir.Float16, ir.BFloat16} {
			spec, err := o.Spec(dt)
			if err != nil {
				t.Fatal(err)
			}
			mod, err := CUDASource(spec, nil, "nf_test")
			if err != nil {
				t.Fatal(err)
			}
			for _, arch := range []int{80, 90} {
				_, log, err := lib.Compile(mod.Source, o.Name+".cu", nvrtc.Target{Arch: arch})
				if err != nil || log != "" {
					t.Fatalf("%s %s sm_%d: %v\n%s", o.Name, dt, arch, err, log)
				}
			}
		}
	}
}
