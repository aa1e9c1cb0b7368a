package autotune

import (
	"context"
	"runtime"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/pkg/errors"

	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/loops"
	"github.com/neoflow/neoflow/internal/cudaemu"
	"github.com/neoflow/neoflow/kernels"
)

// emuGPU is a GPU that runs kernels on the host with the CUDA emulator,
// on Go buffers; wrong makes the kernels of some schedules corrupt their
// first output.
type emuGPU struct {
	dir    string
	bufs   [][]byte
	ptrs   []unsafe.Pointer
	pin    runtime.Pinner
	wrong  func(scheds []loops.Schedule) bool
	mu     sync.Mutex
	built  map[string]*cudaemu.Kernel // by source: the emulator compiles slowly
	closed bool
}

func (g *emuGPU) Target() string { return GPUTarget("emulated", 90) }

func (g *emuGPU) Alloc(sizes []int64) error {
	for _, n := range sizes {
		b := make([]byte, n)
		g.pin.Pin(&b[0])
		g.bufs, g.ptrs = append(g.bufs, b), append(g.ptrs, unsafe.Pointer(&b[0]))
	}
	return nil
}

func (g *emuGPU) Write(i int, src unsafe.Pointer) error {
	copy(g.bufs[i], unsafe.Slice((*byte)(src), len(g.bufs[i])))
	return nil
}

func (g *emuGPU) Read(i int, dst unsafe.Pointer) error {
	copy(unsafe.Slice((*byte)(dst), len(g.bufs[i])), g.bufs[i])
	return nil
}

func (g *emuGPU) Close() {
	g.pin.Unpin()
	g.closed = true
}

func (g *emuGPU) Build(ctx context.Context, spec *ir.Spec, scheds []loops.Schedule) (GPUKernel, error) {
	mod, err := kernels.CUDASource(spec, scheds, "nf_emu")
	if err != nil {
		return nil, err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	k := g.built[mod.Source]
	if k == nil {
		if k, err = cudaemu.Compile(ctx, spec, mod, g.dir); err != nil {
			return nil, err
		}
		g.built[mod.Source] = k
	}
	return &emuKernel{g: g, k: k, wrong: g.wrong != nil && g.wrong(scheds), out: outputIndex(spec)}, nil
}

func outputIndex(spec *ir.Spec) int {
	for i, t := range spec.Tensors {
		if t.Role == ir.RoleOutput {
			return i
		}
	}
	return -1
}

type emuKernel struct {
	g     *emuGPU
	k     *cudaemu.Kernel
	wrong bool
	out   int
}

func (k *emuKernel) Run() (float64, []float64, error) {
	if k.g.closed {
		return 0, nil, errors.New("run after Close")
	}
	if err := k.k.Run(k.g.ptrs); err != nil {
		return 0, nil, err
	}
	if k.wrong {
		k.g.bufs[k.out][0] ^= 0x55
		k.g.bufs[k.out][3] ^= 0x11
	}
	return 0, nil, nil // wall time, no statement times
}

func (k *emuKernel) Close() {}

// TestGPUTuner runs the GPU search on the emulator: every configuration
// measured is a GPU schedule checked against the default's results, a
// schedule whose kernel computes a wrong result is recorded as failed,
// and the record carries the GPU's target.
func TestGPUTuner(t *testing.T) {
	spec := tunerSpec(t)
	var mu sync.Mutex
	var measured [][]loops.Schedule
	gpu := &emuGPU{dir: t.TempDir(), built: map[string]*cudaemu.Kernel{}, wrong: func(scheds []loops.Schedule) bool {
		// block reductions of 128 threads (a seed) "compute" wrong results
		return scheds[0].GPUReduce != nil && scheds[0].GPUReduce.Threads == 128
	}}
	tu, err := NewGPUTuner(gpu, spec, Options{Trials: 14, Seed: 3, Timing: quickTiming, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	tu.sampled = func(g []int, s Sample, err error) {
		mu.Lock()
		defer mu.Unlock()
		measured = append(measured, tu.space.Decode(g))
		if err != nil && !strings.Contains(err.Error(), "wrong result") {
			t.Errorf("trial %v failed: %v", g, err)
		}
	}
	if err := tu.Run(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	p := tu.Progress()
	if p.Trials != 14 || !p.Done || p.Best <= 0 || p.Default <= 0 {
		t.Fatalf("progress %+v: want 14 trials, done, times measured", p)
	}
	wrong := 0
	for _, scheds := range measured {
		s := scheds[0]
		if s.Tiling != nil || s.ParallelDepth > 0 {
			t.Errorf("a CPU schedule measured on the GPU: %v", s)
		}
		if s.GPUReduce != nil && s.GPUReduce.Threads == 128 {
			wrong++
		}
	}
	if wrong == 0 || wrong != p.Failed {
		t.Errorf("%d wrong kernels measured, %d trials failed", wrong, p.Failed)
	}
	rec := tu.Record()
	if got := rec.GetKey().GetTarget(); got != "emulated | sm_90 | cuda" {
		t.Errorf("record target %q", got)
	}
	scheds, err := FromProto(rec.GetSchedules())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kernels.CUDASource(spec, scheds, "nf_best"); err != nil {
		t.Errorf("the best schedules %v do not lower: %v", scheds, err)
	}
	tu.Close()
	if !gpu.closed {
		t.Error("Close did not close the GPU")
	}
}

// TestGPUTunerDefaultFails: when the default schedule's kernel fails on
// the GPU the search ends with that error.
func TestGPUTunerDefaultFails(t *testing.T) {
	spec := tunerSpec(t)
	gpu := &failingGPU{emuGPU{dir: t.TempDir(), built: map[string]*cudaemu.Kernel{}}}
	tu, err := NewGPUTuner(gpu, spec, Options{Trials: 4, Timing: quickTiming})
	if err != nil {
		t.Fatal(err)
	}
	defer tu.Close()
	_, err = tu.Step(context.Background())
	if err == nil || !strings.Contains(err.Error(), "the default schedule") || !strings.Contains(err.Error(), "illegal address") {
		t.Fatalf("err = %v, want the default schedule's failure", err)
	}
}

type failingGPU struct{ emuGPU }

func (g *failingGPU) Build(ctx context.Context, spec *ir.Spec, scheds []loops.Schedule) (GPUKernel, error) {
	return failingKernel{}, nil
}

type failingKernel struct{}

func (failingKernel) Run() (float64, []float64, error) {
	return 0, nil, errors.New("an illegal address was encountered")
}
func (failingKernel) Close() {}
