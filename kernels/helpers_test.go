package kernels

import (
	"context"
	"math"
	"os"
	"os/exec"
	"sync"
	"testing"
	"unsafe"

	"github.com/neoflow/neoflow/core/interp"
	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/loops"
	"github.com/neoflow/neoflow/internal/hostbuf"
)

// builder is shared by the tests of this package: one cache directory,
// so each kernel compiles once.
var (
	builderOnce sync.Once
	builderVal  *Builder
	builderErr  error
	builderDir  string
)

func testBuilder(t *testing.T) *Builder {
	t.Helper()
	if _, err := exec.LookPath("cc"); err != nil {
		t.Fatal("no C compiler (cc) on PATH: the kernels need one")
	}
	builderOnce.Do(func() {
		dir, err := os.MkdirTemp("", "neoflow-kernels-test-*")
		if err != nil {
			builderErr = err
			return
		}
		builderDir = dir
		builderVal, builderErr = NewBuilder(Options{CacheDir: dir, Version: "test"})
	})
	if builderErr != nil {
		t.Fatal(builderErr)
	}
	return builderVal
}

// tolerance is the allowed |got - want| / (1 + |want|).
func tolerance(dt ir.DType) float64 {
	switch dt {
	case ir.Float32:
		return 1e-4
	case ir.Float16:
		return 1e-2
	case ir.BFloat16:
		return 5e-2
	}
	return 1e-9
}

func same(got, want, tol float64) bool {
	if math.IsNaN(want) || math.IsNaN(got) {
		return math.IsNaN(want) && math.IsNaN(got)
	}
	if math.IsInf(want, 0) {
		return got == want
	}
	return math.Abs(got-want) <= tol*(1+math.Abs(want))
}

// run builds spec, launches it on inputs and compares every written
// tensor with the reference interpreter.
func run(t *testing.T, spec *ir.Spec, inputs [][]float64, nthreads int, tol float64) *hostbuf.Buffers {
	t.Helper()
	k, err := testBuilder(t).Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	want, err := interp.Run(spec, inputs)
	if err != nil {
		t.Fatal(err)
	}
	bufs := hostbuf.New(spec, inputs)
	defer bufs.Free()
	if err := k.Launch(bufs.Ptr, nthreads); err != nil {
		t.Fatal(err)
	}
	compareWritten(t, spec, bufs, want, tol, k.Source())
	return bufs
}

// compareWritten compares every tensor spec's kernel wrote into bufs with
// the interpreter's want; source is shown when any differ.
func compareWritten(t *testing.T, spec *ir.Spec, bufs *hostbuf.Buffers, want [][]float64, tol float64, source string) {
	t.Helper()
	for i, td := range spec.Tensors {
		if td.Role == ir.RoleInput {
			continue
		}
		got := bufs.Get(i)
		bad := 0
		for j := range want[i] {
			if !same(got[j], want[i][j], tol) {
				if bad < 5 {
					t.Errorf("%s %s[%d] = %v, interpreter says %v", spec.DType, td.Name, j, got[j], want[i][j])
				}
				bad++
			}
		}
		if bad > 0 {
			t.Errorf("%s: %d of %d elements differ; source:\n%s", td.Name, bad, len(want[i]), source)
		}
	}
}

// runScheduled builds spec under scheds and checks every written tensor
// against the interpreter on random inputs (seed), on 1 and 3 threads,
// with the outputs poisoned first.
func runScheduled(t *testing.T, b *Builder, spec *ir.Spec, scheds []loops.Schedule, seed uint64) {
	t.Helper()
	src, err := ScheduledSource(spec, scheds)
	if err != nil {
		t.Fatalf("schedules %v: %v", scheds, err)
	}
	k, err := b.BuildScheduled(context.Background(), spec, scheds)
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	onThreads(t, spec, seed, src, k.Launch)
}

// onThreads runs launch on random inputs of spec (seed), on 1 and 3
// threads, with the outputs poisoned first, and checks every written
// tensor against the interpreter; source is shown when one differs.
func onThreads(t *testing.T, spec *ir.Spec, seed uint64, source string, launch func(bufs []unsafe.Pointer, threads int) error) {
	t.Helper()
	inputs := hostbuf.RandomInputs(spec, false, seed)
	want, err := interp.Run(spec, inputs)
	if err != nil {
		t.Fatal(err)
	}
	for _, threads := range []int{1, 3} {
		bufs := hostbuf.New(spec, inputs)
		bufs.Poison(spec)
		if err := launch(bufs.Ptr, threads); err != nil {
			t.Fatal(err)
		}
		compareWritten(t, spec, bufs, want, tolerance(spec.DType), source)
		bufs.Free()
	}
}
