package autotune

import (
	"context"
	"fmt"
	"time"
	"unsafe"

	"github.com/pkg/errors"

	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/loops"
	"github.com/neoflow/neoflow/internal/hostbuf"
	"github.com/neoflow/neoflow/kernels"
	"github.com/neoflow/neoflow/kernels/cgen"
	"github.com/neoflow/neoflow/kernels/cudadrv"
)

// A GPU builds and runs the CUDA kernels a GPU tuner measures, on buffers
// of its own: NewCUDAGPU's device, or a host emulator in tests.
type GPU interface {
	// Target names the device in the tuning database's keys (GPUTarget).
	Target() string
	// Alloc allocates the buffers kernels run on, of sizes bytes.
	Alloc(sizes []int64) error
	// Write copies buffer i from host memory; Read copies it back.
	Write(i int, src unsafe.Pointer) error
	Read(i int, dst unsafe.Pointer) error
	// Build builds spec with one schedule per statement.
	Build(ctx context.Context, spec *ir.Spec, scheds []loops.Schedule) (GPUKernel, error)
	// Close frees the buffers.
	Close()
}

// A GPUKernel is a built kernel of a GPU.
type GPUKernel interface {
	// Run runs the kernel once on the GPU's buffers (one per tensor of
	// the spec, in order) and returns its seconds and, when it can time
	// them apart, each statement's (nil otherwise).
	Run() (float64, []float64, error)
	// Close releases the kernel.
	Close()
}

// GPUTarget is the Target of a CUDA device: its name and compute
// capability, "NVIDIA H100 80GB HBM3 | sm_90 | cuda".
func GPUTarget(name string, arch int) string {
	return fmt.Sprintf("%s | sm_%d | cuda", name, arch)
}

// CUDATarget is the GPUTarget of CUDA device ordinal, and its compute
// capability times ten.
func CUDATarget(ordinal int) (string, int, error) {
	arch, err := cudadrv.Arch(ordinal)
	if err != nil {
		return "", 0, err
	}
	name, err := cudadrv.Name(ordinal)
	if err != nil {
		return "", 0, err
	}
	return GPUTarget(name, arch), arch, nil
}

// gpuBench times kernels of one spec on a GPU, on fixed random inputs,
// checking each candidate's outputs against the first one's.
type gpuBench struct {
	gpu    GPU
	spec   *ir.Spec
	timing Timing
	bufs   *hostbuf.Buffers // the host side: inputs, and outputs read back
	ref    reference
}

func newGPUBench(gpu GPU, spec *ir.Spec, timing Timing) (*gpuBench, error) {
	m := &gpuBench{gpu: gpu, spec: spec, timing: timing.withDefaults(), bufs: hostbuf.New(spec, hostbuf.RandomInputs(spec, true, 1)), ref: reference{spec: spec}}
	sizes := make([]int64, len(spec.Tensors))
	for i := range sizes {
		sizes[i] = m.bufs.Bytes(i)
	}
	err := gpu.Alloc(sizes)
	for i, t := range spec.Tensors {
		if err == nil && t.Role == ir.RoleInput {
			err = gpu.Write(i, m.bufs.Ptr[i])
		}
	}
	if err != nil {
		m.free()
		return nil, errors.Wrap(err, "autotune: preparing the GPU's buffers")
	}
	return m, nil
}

func (m *gpuBench) free() {
	m.gpu.Close()
	m.bufs.Free()
}

// measure builds spec with scheds, runs it once on poisoned outputs and
// compares them with the reference (the first kernel measured), then
// times it like bench.measure, each run timed on the GPU (CUDA events).
func (m *gpuBench) measure(ctx context.Context, scheds []loops.Schedule, cutoff float64) (Sample, error) {
	k, err := m.gpu.Build(ctx, m.spec, scheds)
	if err != nil {
		return Sample{}, err
	}
	defer k.Close()
	m.bufs.Poison(m.spec)
	for i, t := range m.spec.Tensors {
		if t.Role != ir.RoleInput {
			if err := m.gpu.Write(i, m.bufs.Ptr[i]); err != nil {
				return Sample{}, err
			}
		}
	}
	stmts := len(m.spec.Stmts)
	untimed := make([]float64, stmts) // for a GPU that does not time statements apart
	for i := range untimed {
		untimed[i] = -1
	}
	run := func() (float64, []float64, error) {
		t0 := time.Now()
		secs, st, err := k.Run()
		if st == nil {
			st = untimed
		}
		if secs == 0 {
			secs = time.Since(t0).Seconds()
		}
		return secs, st, err
	}
	return checkedSample(ctx, m.timing, stmts, cutoff, run, func() error {
		for i, t := range m.spec.Tensors {
			if t.Role != ir.RoleInput {
				if err := m.gpu.Read(i, m.bufs.Ptr[i]); err != nil {
					return err
				}
			}
		}
		return m.ref.check(m.bufs)
	})
}

// cudaGPU is a CUDA device: kernels built by a kernels.Builder (NVRTC,
// the kernel cache), run by cudadrv on buffers of its own.
type cudaGPU struct {
	b       *kernels.Builder
	ordinal int
	arch    int
	target  string
	bench   *cudadrv.Bench
}

// NewCUDAGPU is CUDA device ordinal as a GPU, its kernels built by b. It
// fails in a library built without CUDA (cudadrv.Available).
func NewCUDAGPU(b *kernels.Builder, ordinal int) (GPU, error) {
	target, arch, err := CUDATarget(ordinal)
	if err != nil {
		return nil, err
	}
	return &cudaGPU{b: b, ordinal: ordinal, arch: arch, target: target}, nil
}

func (g *cudaGPU) Target() string { return g.target }

func (g *cudaGPU) Alloc(sizes []int64) (err error) {
	g.bench, err = cudadrv.NewBench(g.ordinal, sizes)
	return err
}

func (g *cudaGPU) Write(i int, src unsafe.Pointer) error { return g.bench.Write(i, src) }
func (g *cudaGPU) Read(i int, dst unsafe.Pointer) error  { return g.bench.Read(i, dst) }

func (g *cudaGPU) Close() {
	if g.bench != nil {
		g.bench.Close()
		g.bench = nil
	}
}

func (g *cudaGPU) Build(ctx context.Context, spec *ir.Spec, scheds []loops.Schedule) (GPUKernel, error) {
	k, err := g.b.BuildCUDA(ctx, spec, scheds, g.arch)
	if err != nil {
		return nil, err
	}
	m, err := cudadrv.Load(g.ordinal, k.Image(), k.Launches())
	if err != nil {
		return nil, err
	}
	return &cudaKernel{g: g, m: m, launches: k.Launches(), stmts: len(spec.Stmts)}, nil
}

// cudaKernel is a module loaded for timing.
type cudaKernel struct {
	g        *cudaGPU
	m        *cudadrv.Module
	launches []cgen.Launch
	stmts    int
}

// Run times each launch with CUDA events and adds the launches of a
// statement up.
func (k *cudaKernel) Run() (float64, []float64, error) {
	secs, err := k.g.bench.Time(k.m)
	if err != nil {
		return 0, nil, err
	}
	total, st := 0.0, make([]float64, k.stmts)
	for i, s := range secs {
		total += s
		if n := k.launches[i].Nest; n < k.stmts {
			st[n] += s
		}
	}
	return total, st, nil
}

func (k *cudaKernel) Close() { _ = k.m.Unload() }
