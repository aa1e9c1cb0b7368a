package kernels

import (
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"testing"
	"unsafe"

	"github.com/neoflow/neoflow/core/interp"
	"github.com/neoflow/neoflow/core/ir"
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

// buffers holds one kernel argument per tensor, in Go memory, pinned.
type buffers struct {
	dt  ir.DType
	f32 [][]float32
	f64 [][]float64
	ptr []unsafe.Pointer
	pin runtime.Pinner
}

func newBuffers(spec *ir.Spec, inputs [][]float64) *buffers {
	b := &buffers{dt: spec.DType}
	in := 0
	for _, t := range spec.Tensors {
		n := max(t.Elems(), 1)
		var p unsafe.Pointer
		if spec.DType == ir.Float32 {
			d := make([]float32, n)
			for i := range d {
				d[i] = float32(math.NaN()) // poison: every element must be written
			}
			if t.Role == ir.RoleInput {
				for i, v := range inputs[in] {
					d[i] = float32(v)
				}
			}
			b.f32 = append(b.f32, d)
			p = unsafe.Pointer(&d[0])
		} else {
			d := make([]float64, n)
			for i := range d {
				d[i] = math.NaN()
			}
			if t.Role == ir.RoleInput {
				copy(d, inputs[in])
			}
			b.f64 = append(b.f64, d)
			p = unsafe.Pointer(&d[0])
		}
		if t.Role == ir.RoleInput {
			in++
		}
		b.pin.Pin(p)
		b.ptr = append(b.ptr, p)
	}
	return b
}

func (b *buffers) get(i int) []float64 {
	if b.dt == ir.Float64 {
		return b.f64[i]
	}
	out := make([]float64, len(b.f32[i]))
	for j, v := range b.f32[i] {
		out[j] = float64(v)
	}
	return out
}

func randomInputs(spec *ir.Spec, positive bool, seed uint64) [][]float64 {
	rng := rand.New(rand.NewPCG(seed, 7))
	var out [][]float64
	for _, t := range spec.InputsDecl() {
		d := make([]float64, t.Elems())
		for i := range d {
			if positive {
				d[i] = 0.5 + rng.Float64()
			} else {
				d[i] = 2*rng.Float64() - 1
			}
		}
		out = append(out, d)
	}
	return out
}

// tolerance is the allowed |got - want| / (1 + |want|).
func tolerance(dt ir.DType) float64 {
	if dt == ir.Float32 {
		return 1e-4
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
func run(t *testing.T, spec *ir.Spec, inputs [][]float64, nthreads int, tol float64) *buffers {
	t.Helper()
	k, err := testBuilder(t).Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	want, err := interp.Run(spec, inputs)
	if err != nil {
		t.Fatal(err)
	}
	bufs := newBuffers(spec, inputs)
	defer bufs.pin.Unpin()
	if err := k.Launch(bufs.ptr, nthreads); err != nil {
		t.Fatal(err)
	}
	for i, td := range spec.Tensors {
		if td.Role == ir.RoleInput {
			continue
		}
		got := bufs.get(i)
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
			t.Errorf("%s: %d of %d elements differ; source:\n%s", td.Name, bad, len(want[i]), k.Source())
		}
	}
	return bufs
}
