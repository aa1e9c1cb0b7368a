// Package hostbuf holds the arguments of a kernel call in Go memory: one
// pinned buffer per tensor of a spec, inputs filled in, every other tensor
// poisoned with NaN so that an element a kernel fails to write shows. The
// tuner measures kernels on them; tests compare their contents with the
// reference interpreter.
package hostbuf

import (
	"math"
	"math/rand/v2"
	"runtime"
	"unsafe"

	"github.com/neoflow/neoflow/core/ir"
)

// Buffers is one kernel argument per tensor of a spec, in spec.Tensors
// order. Exactly one of F32, F64 and Bits16 is used, by the spec's dtype
// (Bits16 for float16 and bfloat16, as bits). Ptr is what Kernel.Launch
// takes; every pointer in it is pinned by Pin until Free.
type Buffers struct {
	DType  ir.DType
	F32    [][]float32
	F64    [][]float64
	Bits16 [][]uint16
	Ptr    []unsafe.Pointer
	Pin    runtime.Pinner
}

// to16 and from16 convert between float32 and a 16-bit dtype's bits.
func to16(d ir.DType) func(float32) uint16 {
	if d == ir.BFloat16 {
		return ir.BFloat16Bits
	}
	return ir.Float16Bits
}

func from16(d ir.DType) func(uint16) float32 {
	if d == ir.BFloat16 {
		return ir.BFloat16From
	}
	return ir.Float16From
}

// New allocates the tensors of spec (at least one element each), inputs
// set from inputs (one slice per input, in order) and every other tensor
// set to NaN.
func New(spec *ir.Spec, inputs [][]float64) *Buffers {
	b := &Buffers{DType: spec.DType}
	in := 0
	for _, t := range spec.Tensors {
		var src []float64
		if t.Role == ir.RoleInput {
			src = inputs[in]
			in++
		}
		n := max(t.Elems(), 1)
		var p unsafe.Pointer
		switch {
		case spec.DType.Half():
			d := make([]uint16, n)
			bits := to16(spec.DType)
			for i := range d {
				d[i] = bits(float32(math.NaN()))
			}
			for i, v := range src {
				d[i] = bits(float32(v))
			}
			b.Bits16 = append(b.Bits16, d)
			p = unsafe.Pointer(&d[0])
		case spec.DType == ir.Float32:
			d := make([]float32, n)
			for i := range d {
				d[i] = float32(math.NaN())
			}
			for i, v := range src {
				d[i] = float32(v)
			}
			b.F32 = append(b.F32, d)
			p = unsafe.Pointer(&d[0])
		default:
			d := make([]float64, n)
			for i := range d {
				d[i] = math.NaN()
			}
			copy(d, src)
			b.F64 = append(b.F64, d)
			p = unsafe.Pointer(&d[0])
		}
		b.Pin.Pin(p)
		b.Ptr = append(b.Ptr, p)
	}
	return b
}

// Free unpins the buffers.
func (b *Buffers) Free() { b.Pin.Unpin() }

// Get returns tensor i as float64 (a copy for float32 and the 16-bit
// types, the buffer itself for float64).
func (b *Buffers) Get(i int) []float64 {
	if b.DType == ir.Float64 {
		return b.F64[i]
	}
	if b.DType.Half() {
		from := from16(b.DType)
		out := make([]float64, len(b.Bits16[i]))
		for j, v := range b.Bits16[i] {
			out[j] = float64(from(v))
		}
		return out
	}
	out := make([]float64, len(b.F32[i]))
	for j, v := range b.F32[i] {
		out[j] = float64(v)
	}
	return out
}

// Bytes is the size of tensor i's buffer in bytes.
func (b *Buffers) Bytes(i int) int64 {
	if b.DType == ir.Float64 {
		return int64(len(b.F64[i])) * 8
	}
	if b.DType.Half() {
		return int64(len(b.Bits16[i])) * 2
	}
	return int64(len(b.F32[i])) * 4
}

// Poison sets every tensor of spec that is not an input to NaN.
func (b *Buffers) Poison(spec *ir.Spec) {
	for i, t := range spec.Tensors {
		if t.Role == ir.RoleInput {
			continue
		}
		if b.DType.Half() {
			nan := to16(b.DType)(float32(math.NaN()))
			for j := range b.Bits16[i] {
				b.Bits16[i][j] = nan
			}
		} else if b.DType == ir.Float32 {
			for j := range b.F32[i] {
				b.F32[i][j] = float32(math.NaN())
			}
		} else {
			for j := range b.F64[i] {
				b.F64[i][j] = math.NaN()
			}
		}
	}
}

// RandomInputs draws the inputs of spec from a generator seeded by seed:
// uniform in [-1, 1), or in [0.5, 1.5) when positive (for log, sqrt, pow
// and division).
func RandomInputs(spec *ir.Spec, positive bool, seed uint64) [][]float64 {
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
