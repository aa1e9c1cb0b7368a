package autotune

import (
	"math"
	"math/rand/v2"
	"runtime"
	"unsafe"

	"github.com/neoflow/neoflow/core/ir"
)

// buffers holds one kernel argument per tensor of a spec, in Go memory
// pinned for the kernel calls.
type buffers struct {
	dt  ir.DType
	f32 [][]float32
	f64 [][]float64
	ptr []unsafe.Pointer
	pin runtime.Pinner
}

// newBuffers allocates the tensors of spec, inputs set from inputs (one
// slice per input, in order) and every other tensor poisoned with NaN so
// that an element a kernel fails to write shows.
func newBuffers(spec *ir.Spec, inputs [][]float64) *buffers {
	b := &buffers{dt: spec.DType}
	in := 0
	for _, t := range spec.Tensors {
		var src []float64
		if t.Role == ir.RoleInput {
			src = inputs[in]
			in++
		}
		n := max(t.Elems(), 1)
		var p unsafe.Pointer
		if spec.DType == ir.Float32 {
			d := make([]float32, n)
			for i := range d {
				d[i] = float32(math.NaN())
			}
			for i, v := range src {
				d[i] = float32(v)
			}
			b.f32 = append(b.f32, d)
			p = unsafe.Pointer(&d[0])
		} else {
			d := make([]float64, n)
			for i := range d {
				d[i] = math.NaN()
			}
			copy(d, src)
			b.f64 = append(b.f64, d)
			p = unsafe.Pointer(&d[0])
		}
		b.pin.Pin(p)
		b.ptr = append(b.ptr, p)
	}
	return b
}

func (b *buffers) free() { b.pin.Unpin() }

// get returns tensor i as float64.
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

// randomInputs draws inputs for spec uniformly from [0.5, 1.5): positive,
// so that log, sqrt and division are defined, and away from zero.
func randomInputs(spec *ir.Spec, seed uint64) [][]float64 {
	rng := rand.New(rand.NewPCG(seed, 0x6e66))
	var out [][]float64
	for _, t := range spec.InputsDecl() {
		d := make([]float64, t.Elems())
		for i := range d {
			d[i] = 0.5 + rng.Float64()
		}
		out = append(out, d)
	}
	return out
}

// poison sets every non-input tensor to NaN.
func (b *buffers) poison(spec *ir.Spec) {
	for i, t := range spec.Tensors {
		if t.Role == ir.RoleInput {
			continue
		}
		if b.dt == ir.Float32 {
			for j := range b.f32[i] {
				b.f32[i][j] = float32(math.NaN())
			}
		} else {
			for j := range b.f64[i] {
				b.f64[i][j] = math.NaN()
			}
		}
	}
}
