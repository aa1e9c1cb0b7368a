package torchbridge

import (
	"strings"
	"testing"

	"github.com/neoflow/neoflow/api"
	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/loops"
	"github.com/neoflow/neoflow/core/parse"
	"github.com/neoflow/neoflow/core/sema"
	"github.com/neoflow/neoflow/kernels/cudadrv"
)

// TestCUDARequests covers the CUDA requests that need no GPU: the CUDA
// source of a specialization, the CPU-only build's refusal to build or
// tune a CUDA kernel, and launches
// through the wrong entry point.
func TestCUDARequests(t *testing.T) {
	r := newRuntime(t)
	def, err := r.Define(&api.DefineRequest{Source: "C[i,j] += A[i,k] * B[k,j]", Name: "matmul"})
	if err != nil {
		t.Fatal(err)
	}
	ins := []*api.TensorType{f64(3, 4), f64(4, 5)}
	src, err := r.Specialize(&api.SpecializeRequest{OpId: def.OpId, Inputs: ins, SourceOnly: true, CudaDevice: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(src.GetCudaSource(), "__global__") || src.GetCSource() != "" || src.GetKernelId() != 0 {
		t.Fatalf("source-only CUDA specialization: %q / %q / %d", src.GetCudaSource(), src.GetCSource(), src.GetKernelId())
	}
	if !cudadrv.Available() {
		_, err := r.Specialize(&api.SpecializeRequest{OpId: def.OpId, Inputs: ins, CudaDevice: 1})
		if err == nil || !strings.Contains(err.Error(), "built without CUDA support") {
			t.Fatalf("CUDA specialization in the CPU-only build: %v", err)
		}
		_, err = r.Specialize(&api.SpecializeRequest{OpId: def.OpId, Inputs: ins, Like: []*api.TensorType{f64(6, 4), f64(4, 5)}, CudaDevice: 1})
		if err == nil || !strings.Contains(err.Error(), "built without CUDA support") {
			t.Fatalf("a CUDA kernel for every size in the CPU-only build: %v", err)
		}
		_, err = r.TuneBegin(&api.TuneRequest{OpId: def.OpId, Inputs: ins, CudaDevice: 1})
		if err == nil || !strings.Contains(err.Error(), "tuning a CUDA kernel, but this neoflow library was built without CUDA support") {
			t.Fatalf("CUDA tuning in the CPU-only build: %v", err)
		}
		init, err := r.Init(&api.InitRequest{CacheDir: t.TempDir()})
		if err != nil || init.GetCuda() {
			t.Fatalf("the CPU-only build reports cuda=%v (%v)", init.GetCuda(), err)
		}
	}
	cpu, err := r.Specialize(&api.SpecializeRequest{OpId: def.OpId, Inputs: ins})
	if err != nil {
		t.Fatal(err)
	}
	err = r.LaunchCUDA(cpu.GetKernelId(), nil, 3, 0)
	if err == nil || !strings.Contains(err.Error(), "is a CPU kernel") {
		t.Fatalf("LaunchCUDA of a CPU kernel: %v", err)
	}
	if err := r.LaunchCUDA(99, nil, 3, 0); err == nil || !strings.Contains(err.Error(), "unknown kernel id") {
		t.Fatalf("LaunchCUDA of an unknown id: %v", err)
	}
}

func TestDeterministicSchedulesHaveNoAtomics(t *testing.T) {
	op, err := parse.Parse("Y[Dst[e], f] += X[e, f]", parse.Options{Inputs: []string{"X", "Dst"}})
	if err != nil {
		t.Fatal(err)
	}
	spec, err := sema.SpecializeTyped(op, ir.Float32, [][]int64{{40, 8}, {40}}, map[string]int64{"v_Dst": 6}, map[string]ir.DType{"Dst": ir.Int64})
	if err != nil {
		t.Fatal(err)
	}
	if s := loops.GPUSchedule(spec, 0); !s.Scatter || !s.Atomic {
		t.Fatalf("the GPU default is not an atomic scatter: %v", s)
	}
	for _, scheds := range [][]loops.Schedule{nil, {loops.GPUSchedule(spec, 0)}} {
		got := deterministic(spec, scheds)
		if len(got) != 1 || !got[0].Scatter || got[0].Atomic {
			t.Errorf("deterministic(%v) = %v, want a scatter without atomics", scheds, got)
		}
	}
}
