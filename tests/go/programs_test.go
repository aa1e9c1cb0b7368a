package gotests

import (
	"context"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/neoflow/neoflow/autotune"
	"github.com/neoflow/neoflow/core/autodiff"
	"github.com/neoflow/neoflow/core/fuse"
	"github.com/neoflow/neoflow/core/interp"
	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/loops"
	"github.com/neoflow/neoflow/core/pipeline"
	"github.com/neoflow/neoflow/core/sema"
	"github.com/neoflow/neoflow/internal/cudaemu"
	"github.com/neoflow/neoflow/internal/hostbuf"
	"github.com/neoflow/neoflow/internal/progen"
	"github.com/neoflow/neoflow/kernels"
	"github.com/neoflow/neoflow/kernels/cgen"
)

// fuzzPrograms is how many accepted programs TestRandomProgramsEverySchedule
// checks: NEOFLOW_FUZZ_PROGRAMS, else a CI budget of about a minute.
func fuzzPrograms() int {
	if n, err := strconv.Atoi(os.Getenv("NEOFLOW_FUZZ_PROGRAMS")); err == nil && n > 0 {
		return n
	}
	if testing.Short() {
		return 4
	}
	return 12
}

// Per spec: how many random genomes of each space must lower, and how
// many of them (after the default) are also compiled and run.
const (
	loweredGenomes = 24
	runGenomes     = 2
)

// TestRandomProgramsEverySchedule draws random programs (internal/progen)
// and, for every one the checker accepts, its forward op and its gradient
// op: the gradient must be derived and specialized (an accepted op always
// differentiates), every schedule the tuners can choose must lower, on the
// CPU (autotune.Space: untiled, tiled, relaid, packed, scatter) and on the
// GPU (autotune.GPUSpace: thread, tiled and block-reduction schedules),
// and the default schedule and random ones, compiled as C and as CUDA run
// on the emulator (internal/cudaemu), must compute what the reference
// interpreter computes; the same for both ops fused (core/fuse), when
// fusion changes them. NEOFLOW_FUZZ_PROGRAMS=N checks N programs.
func TestRandomProgramsEverySchedule(t *testing.T) {
	want := fuzzPrograms()
	b, err := kernels.NewBuilder(kernels.Options{CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	accepted, seed := 0, uint64(0)
	for ; accepted < want && seed < uint64(20*want); seed++ {
		p := progen.New(seed)
		spec, err := p.Spec(ir.Float64)
		if err != nil {
			if strings.Contains(err.Error(), "internal") {
				t.Fatalf("seed %d: %v\n%s", seed, err, p)
			}
			continue
		}
		accepted++
		ok := t.Run(strconv.FormatUint(seed, 10), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 3))
			specs := []*ir.Spec{spec}
			if len(spec.InputsDecl()) > 0 { // an op of constants has no gradient
				specs = append(specs, gradOf(t, spec, p))
			}
			for _, s := range specs {
				checkSchedules(t, b, s, rng, p)
				// Fused (core/fuse), when fusion changes it.
				f, err := pipeline.Fuse(s, fuse.Options{SplitAlways: true})
				if err != nil {
					t.Fatalf("fusion: %v\n%s", err, p)
				}
				if f != s {
					checkSchedules(t, b, f, rng, p)
				}
			}
		})
		if !ok {
			break
		}
	}
	if accepted < want {
		t.Fatalf("the checker accepted %d of %d generated programs (fewer than %d)", accepted, seed, want)
	}
	t.Logf("%d programs accepted of %d generated", accepted, seed)
}

func gradOf(t *testing.T, spec *ir.Spec, p progen.Program) *ir.Spec {
	t.Helper()
	wrt := make([]bool, len(spec.InputsDecl()))
	for i := range wrt {
		wrt[i] = true
	}
	g, err := autodiff.Grad(spec, wrt)
	if err != nil {
		t.Fatalf("an accepted op does not differentiate: %v\n%s", err, p)
	}
	gs, err := sema.Specialize(g.Op, spec.DType, g.InputShapes(spec), g.Sizes)
	if err != nil {
		t.Fatalf("the gradient op is refused: %v\n%s\n%s", err, p, autodiff.Explain(g))
	}
	return gs
}

// checkSchedules lowers random genomes of both spaces for spec and runs
// the default and a few random ones against the interpreter.
func checkSchedules(t *testing.T, b *kernels.Builder, spec *ir.Spec, rng *rand.Rand, p progen.Program) {
	t.Helper()
	inputs := hostbuf.RandomInputs(spec, false, rng.Uint64())
	want, err := interp.Run(spec, inputs)
	if err != nil {
		t.Fatalf("interpreter: %v\n%s", err, p)
	}
	cpu := autotune.NewSpace(spec)
	for k := range loweredGenomes + 1 {
		g := genome(rng, cpu.Cardinalities(), k == 0)
		scheds := cpu.Decode(g)
		if _, err := kernels.ScheduledSource(spec, scheds); err != nil {
			t.Fatalf("CPU genome %v does not lower: %v\n%s", g, err, p)
		}
		if k <= runGenomes {
			runC(t, b, spec, scheds, inputs, want, p)
		}
	}
	gpu := autotune.NewGPUSpace(spec)
	for k := range loweredGenomes + 1 {
		g := genome(rng, gpu.Cardinalities(), k == 0)
		scheds := gpu.Decode(g)
		mod, err := kernels.CUDASource(spec, scheds, "nf_progen")
		if err != nil {
			t.Fatalf("GPU genome %v does not lower: %v\n%s", g, err, p)
		}
		if k <= runGenomes {
			runEmulated(t, spec, mod, inputs, want, p, scheds)
		}
	}
}

// genome is the default genome (all zeros) or a random one.
func genome(rng *rand.Rand, card []int, dflt bool) []int {
	g := make([]int, len(card))
	if !dflt {
		for i, c := range card {
			g[i] = rng.IntN(c)
		}
	}
	return g
}

func runC(t *testing.T, b *kernels.Builder, spec *ir.Spec, scheds []loops.Schedule, inputs, want [][]float64, p progen.Program) {
	t.Helper()
	k, err := b.BuildScheduled(context.Background(), spec, scheds)
	if err != nil {
		t.Fatalf("build: %v\n%s", err, p)
	}
	defer k.Close()
	bufs := hostbuf.New(spec, inputs)
	defer bufs.Free()
	bufs.Poison(spec)
	if err := k.Launch(bufs.Ptr, 2); err != nil {
		t.Fatalf("launch: %v\n%s", err, p)
	}
	compareOutputs(t, "C", spec, bufs, want, p, scheds)
}

func runEmulated(t *testing.T, spec *ir.Spec, mod *cgen.CUDAModule, inputs, want [][]float64, p progen.Program, scheds []loops.Schedule) {
	t.Helper()
	k, err := cudaemu.Compile(context.Background(), spec, mod, t.TempDir())
	if err != nil {
		t.Fatalf("emulator: %v\n%s", err, p)
	}
	bufs := hostbuf.New(spec, inputs)
	defer bufs.Free()
	bufs.Poison(spec)
	if err := k.Run(bufs.Ptr); err != nil {
		t.Fatalf("emulated run: %v\n%s", err, p)
	}
	compareOutputs(t, "CUDA (emulated)", spec, bufs, want, p, scheds)
}

// compareOutputs checks every written tensor against the interpreter.
func compareOutputs(t *testing.T, backend string, spec *ir.Spec, bufs *hostbuf.Buffers, want [][]float64, p progen.Program, scheds []loops.Schedule) {
	t.Helper()
	for i, td := range spec.Tensors {
		if td.Role != ir.RoleOutput {
			continue
		}
		got := bufs.Get(i)
		for j, w := range want[i] {
			if g := got[j]; !(g == w || math.Abs(g-w) <= 1e-9*(1+math.Abs(w)) || math.IsNaN(g) && math.IsNaN(w)) {
				t.Fatalf("%s: %s[%d] = %v, the interpreter says %v\nschedules %v\n%s", backend, td.Name, j, g, w, scheds, p)
			}
		}
	}
}
