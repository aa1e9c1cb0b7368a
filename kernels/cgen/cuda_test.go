package cgen

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/loops"
	"github.com/neoflow/neoflow/core/pipeline"
	"github.com/neoflow/neoflow/internal/testops"
)

// cudaGoldenOps are rendered with the GPU default schedules to
// testdata/cuda/<name>_<dtype>.cu; grad renders the op's gradient.
var cudaGoldenOps = []struct {
	name string
	dt   ir.DType
	grad bool
}{
	{"matmul", ir.Float32, false}, {"matmul", ir.Float64, true}, {"conv_pad", ir.Float32, true},
	{"softmax", ir.Float32, false}, {"sum_all", ir.Float64, false}, {"maxpool", ir.Float32, true},
	{"depth2space", ir.Float32, true}, {"unary_math", ir.Float32, false}, {"index_values", ir.Float64, false},
	{"matmul", ir.Float16, false}, {"conv_pad", ir.BFloat16, true}, {"softmax", ir.Float16, false},
	{"matmul_aligned", ir.Float32, false}, {"matmul_aligned", ir.Float64, true}, {"matmul_aligned", ir.BFloat16, true},
}

func cudaModule(t *testing.T, spec *ir.Spec) *CUDAModule {
	t.Helper()
	fn, err := lowerCUDA(spec, loops.GPUSchedule)
	if err != nil {
		t.Fatal(err)
	}
	mod, err := RenderCUDA(fn, "nf_kernel")
	if err != nil {
		t.Fatal(err)
	}
	return mod
}

func TestCUDAGolden(t *testing.T) {
	for _, g := range cudaGoldenOps {
		name := g.name + "_" + g.dt.String()
		if g.grad {
			name = g.name + "_grad_" + g.dt.String()
		}
		t.Run(name, func(t *testing.T) {
			o, _ := testops.Lookup(g.name)
			spec, err := o.Spec(g.dt)
			if g.grad {
				spec, _, err = o.GradSpec(g.dt)
			}
			if err != nil {
				t.Fatal(err)
			}
			checkGolden(t, filepath.Join("testdata", "cuda", name+".cu"), cudaModule(t, spec).Source)
		})
	}
}

// TestCUDAGoldenEpilogue: a contraction joined by its epilogue
// statements (fuse-group's epilogue fusion; MI-LSTM's P and Hn after UH)
// renders as one kernel, under the default GPU tiling, that stores the
// epilogue's elements after each of the contraction's in the same thread.
func TestCUDAGoldenEpilogue(t *testing.T) {
	spec := mustSpec(t, testops.Op{Name: "epilogue", Src: "UH[b,g] += U[g,j] * H[b,j]\nP[b,g] = UH[b,g] * X[b,g]\nQ[b,g] = tanh(P[b,g])",
		Inputs: []string{"U", "H", "X"}, Outputs: []string{"P", "Q"}, Shapes: [][]int64{{96, 64}, {16, 64}, {16, 96}}})
	spec.Stmts[1].Joined, spec.Stmts[2].Joined = true, true
	mod := cudaModule(t, spec)
	if len(mod.Launches) != 1 {
		t.Fatalf("%d launches, want 1", len(mod.Launches))
	}
	checkGolden(t, filepath.Join("testdata", "cuda", "epilogue_float32.cu"), mod.Source)
}

// TestCUDAGoldenHorizontal: a weight's and an input's gradient joined
// into one group, each under its own GPU tiling of 256 threads, render as
// one kernel whose blocks split between the two.
func TestCUDAGoldenHorizontal(t *testing.T) {
	spec := mustSpec(t, testops.Op{Name: "horizontal", Src: "d_W[g,j] += d_G[b,g] * H[b,j]\nd_H[b,j] += d_G[b,g] * W[g,j]",
		Inputs: []string{"d_G", "H", "W"}, Shapes: [][]int64{{16, 96}, {16, 64}, {96, 64}}})
	spec.Stmts[1].Joined = true
	mod := cudaModule(t, spec)
	if len(mod.Launches) != 1 || mod.Launches[0].Blocks != 4 {
		t.Fatalf("launches %+v, want one of 3 + 1 blocks", mod.Launches)
	}
	checkGolden(t, filepath.Join("testdata", "cuda", "horizontal_float32.cu"), mod.Source)
}

// TestCUDAPatterns checks the shape of the rendering: launches per
// phase, grid-stride loops, 32-bit indices for small tensors, the
// atomic scatter and the guards.
func TestCUDAPatterns(t *testing.T) {
	spec := mustSpec(t, testops.Op{Name: "rows", Src: "Y[i] += X[i, j]\nZ[i, j] = X[i, j] * Y[i]", Shapes: [][]int64{{300, 7}}})
	mod := cudaModule(t, spec)
	if len(mod.Launches) != 2 {
		t.Fatalf("%d launches, want one per statement: %+v", len(mod.Launches), mod.Launches)
	}
	if l := mod.Launches[1]; l.Blocks != (2100+255)/256 || l.Threads != 256 || l.Nest != 1 {
		t.Errorf("launch %+v: want %d blocks of 256 threads for statement 1", l, (2100+255)/256)
	}
	for _, want := range []string{
		"typedef int nf_i;",
		`extern "C" __global__ void __launch_bounds__(256) nf_kernel_k0(const float *__restrict__ t_X, float *__restrict__ t_`,
		"for (nf_i nf_g = (nf_i)blockIdx.x * blockDim.x + threadIdx.x; nf_g < 2100; nf_g += (nf_i)gridDim.x * blockDim.x) {",
		"const nf_i v_j = nf_g % 7;",
		"const nf_i v_i = nf_g / 7;",
	} {
		if !strings.Contains(mod.Source, want) {
			t.Errorf("source lacks %q:\n%s", want, mod.Source)
		}
	}
	// A tensor of more than 2^30 elements needs 64-bit indices; the grid
	// is capped and strides over the rest.
	big := mustSpec(t, testops.Op{Name: "big", Src: "Y[i, j] = X[i, j] * 2.0", Shapes: [][]int64{{1 << 16, 1 << 15}}})
	mod = cudaModule(t, big)
	if !strings.Contains(mod.Source, "typedef long long nf_i;") || mod.Launches[0].Blocks != MaxBlocks {
		t.Errorf("2^31 elements: want 64-bit indices and %d blocks, got %+v\n%s", MaxBlocks, mod.Launches, mod.Source)
	}
	// A schedule's Threads sets the block size.
	fn, err := lowerCUDA(spec, func(s *ir.Spec, i int) loops.Schedule {
		sc := loops.GPUSchedule(s, i)
		sc.Threads = 128
		return sc
	})
	if err != nil {
		t.Fatal(err)
	}
	mod, err = RenderCUDA(fn, "nf_kernel")
	if err != nil || mod.Launches[0].Threads != 128 || !strings.Contains(mod.Source, "__launch_bounds__(128)") {
		t.Errorf("threads 128: %+v, %v", mod.Launches, err)
	}
}

// TestCUDASerialPhase renders a CPU schedule's serial nest (a lane
// loop, no parallel loop): one launch of one thread, the lane loop
// unrolled, no OpenMP pragma and no blend.
func TestCUDASerialPhase(t *testing.T) {
	spec := mustSpec(t, testops.Op{Name: "pad", Src: "Y[i] = where(i >= 3, X[i - 3], 0.0)", Shapes: [][]int64{{29}}, Sizes: map[string]int64{"i": 32}})
	fn, err := lowerCUDA(spec, func(s *ir.Spec, i int) loops.Schedule {
		sc := loops.GatherSchedule(s, i)
		sc.ParallelDepth = 0
		return sc
	})
	if err != nil {
		t.Fatal(err)
	}
	mod, err := RenderCUDA(fn, "nf_kernel")
	if err != nil {
		t.Fatal(err)
	}
	if len(mod.Launches) != 1 || mod.Launches[0].Blocks != 1 || mod.Launches[0].Threads != 1 {
		t.Errorf("launches %+v, want one of one thread", mod.Launches)
	}
	for _, bad := range []string{"#pragma omp", "nf_blend", "int64_t"} {
		if strings.Contains(mod.Source, bad) {
			t.Errorf("CUDA source contains %q:\n%s", bad, mod.Source)
		}
	}
	if !strings.Contains(mod.Source, "#pragma unroll") {
		t.Errorf("the lane loop is not unrolled:\n%s", mod.Source)
	}
}

func TestCUDARenderErrors(t *testing.T) {
	spec := mustSpec(t, testops.Op{Name: "e", Src: "Y[i] = X[i]", Shapes: [][]int64{{4}}})
	fn, err := lowerCUDA(spec, loops.GPUSchedule)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := RenderCUDA(fn, "bad name"); err == nil {
		t.Error("a symbol that is not an identifier is accepted")
	}
	if _, err := RenderCUDA(nil, "k"); err == nil {
		t.Error("a nil function is accepted")
	}
	// An atomic store is CUDA's only: the C renderer refuses it.
	st := fn.Nests[0].Body[0].(*loops.Loop).Body[0].(*loops.Store)
	st.Op, st.Atomic = ir.Sum, true
	if _, err := Render(fn, "k"); err == nil || !strings.Contains(err.Error(), "atomic") {
		t.Errorf("C renders an atomic store: %v", err)
	}
}

func mustSpec(t *testing.T, o testops.Op) *ir.Spec {
	t.Helper()
	spec, err := o.Spec(ir.Float32)
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

// lowerCUDA runs the build passes for the CUDA backend, as kernels'
// CUDA builds do.
func lowerCUDA(spec *ir.Spec, sched func(*ir.Spec, int) loops.Schedule) (*loops.Func, error) {
	u := pipeline.FromSpec(spec)
	u.Target, u.Sched = pipeline.GPU, sched
	if err := pipeline.Run(u, pipeline.Build); err != nil {
		return nil, err
	}
	return u.Func, nil
}
