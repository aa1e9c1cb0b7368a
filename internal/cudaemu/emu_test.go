package cudaemu

import (
	"context"
	"strings"
	"testing"

	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/internal/hostbuf"
	"github.com/neoflow/neoflow/kernels/cgen"
)

// vecSpec declares X[n] (input) and Y[n] (output), float32.
func vecSpec(n int64) *ir.Spec {
	return &ir.Spec{Op: &ir.Op{Name: "emu"}, DType: ir.Float32, Tensors: []*ir.TensorDecl{
		{Name: "X", Role: ir.RoleInput, Shape: []int64{n}},
		{Name: "Y", Role: ir.RoleOutput, Shape: []int64{n}},
	}}
}

// run compiles one __global__ function k and runs it on X = 0, 1, ...,
// n-1; it returns Y and Run's error.
func run(t *testing.T, n int64, blocks int64, threads int, src string) ([]float64, error) {
	t.Helper()
	spec := vecSpec(n)
	mod := &cgen.CUDAModule{Source: src, Launches: []cgen.Launch{{Entry: "k", Blocks: blocks, Threads: threads}}}
	k, err := Compile(context.Background(), spec, mod, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	x := make([]float64, n)
	for i := range x {
		x[i] = float64(i)
	}
	b := hostbuf.New(spec, [][]float64{x})
	defer b.Free()
	err = k.Run(b.Ptr)
	return b.Get(1), err
}

// TestBarrier reverses each block's slice through shared memory: every
// thread reads the element another thread wrote before the barrier.
func TestBarrier(t *testing.T) {
	y, err := run(t, 256, 2, 128, `
extern "C" __global__ void k(const float *X, float *Y)
{
	__shared__ float s[128];
	int i = blockIdx.x * 128 + threadIdx.x;
	s[threadIdx.x] = X[i];
	__syncthreads();
	Y[i] = s[127 - threadIdx.x];
}
`)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range y {
		if want := float64(i/128*128 + 127 - i%128); v != want {
			t.Fatalf("Y[%d] = %v, want %v", i, v, want)
		}
	}
}

// shuffleSum sums each warp's values with __shfl_down_sync (lane 0's
// result) and __shfl_xor_sync (every lane's).
const shuffleSum = `
extern "C" __global__ void k(const float *X, float *Y)
{
	float v = X[threadIdx.x], w = v;
	for (int d = 16; d > 0; d /= 2) {
		v += __shfl_down_sync(0xffffffffu, v, d);
		w += __shfl_xor_sync(0xffffffffu, w, d);
	}
	Y[threadIdx.x] = threadIdx.x % 32 == 0 ? v : w;
}
`

func TestShuffle(t *testing.T) {
	y, err := run(t, 64, 1, 64, shuffleSum)
	if err != nil {
		t.Fatal(err)
	}
	warp := func(w int) float64 {
		s := 0.0
		for i := w * 32; i < w*32+32; i++ {
			s += float64(i)
		}
		return s
	}
	for i, v := range y {
		if w := i / 32; v != warp(w) {
			t.Fatalf("Y[%d] = %v, want the sum of warp %d, %v", i, v, w, warp(w))
		}
	}
}

// TestBarrierNotReached is an error, not a hang: thread 0 returns while
// the others wait at a barrier.
func TestBarrierNotReached(t *testing.T) {
	_, err := run(t, 64, 1, 64, `
extern "C" __global__ void k(const float *X, float *Y)
{
	if (threadIdx.x == 0)
		return;
	__syncthreads();
	Y[threadIdx.x] = X[threadIdx.x];
}
`)
	if err == nil || !strings.Contains(err.Error(), "__syncthreads") {
		t.Fatalf("err = %v, want one about __syncthreads", err)
	}
}

// TestShufflePartialWarp is an error: lanes past the block's last thread
// do not exist, and a shuffle that reads one is undefined on the GPU.
func TestShufflePartialWarp(t *testing.T) {
	_, err := run(t, 80, 1, 80, shuffleSum)
	if err == nil || !strings.Contains(err.Error(), "shuffle") {
		t.Fatalf("err = %v, want one about the shuffle", err)
	}
}
