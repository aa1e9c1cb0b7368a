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
// order. A floating-point tensor lives in F32, F64 or Bits16, by the spec's
// dtype (Bits16 for float16 and bfloat16, as bits); an integer input
// (ir.TensorDecl.DType) in I32, I64 or U8 (bool). Each slice has an entry
// per tensor, nil where the tensor is of another type. Ptr is what
// Kernel.Launch takes; every pointer in it is pinned by Pin until Free.
type Buffers struct {
	DType  ir.DType
	F32    [][]float32
	F64    [][]float64
	Bits16 [][]uint16
	I32    [][]int32
	I64    [][]int64
	U8     [][]uint8
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

// pageBytes is the smallest page size of the machines neoflow runs on.
const pageBytes = 4096

// filled is a slice of n elements set to nan (zero when poison is unset),
// then to src converted by conv.
func filled[T any](n int64, nan T, src []float64, conv func(float64) T, poison bool) []T {
	d := make([]T, n)
	if poison {
		for i := range d {
			d[i] = nan
		}
	} else {
		// A page never written reads as the kernel's one shared zero page,
		// from the cache: a copy "from memory" ran at 67 GB/s, against 27.
		var zero T
		step := max(pageBytes/int(unsafe.Sizeof(zero)), 1)
		for i := 0; i < len(d); i += step {
			d[i] = zero
		}
	}
	for i, v := range src {
		d[i] = conv(v)
	}
	return d
}

// New allocates the tensors of spec (at least one element each), inputs
// set from inputs (one slice per input, in order; integer inputs take the
// values truncated) and every other tensor set to NaN.
func New(spec *ir.Spec, inputs [][]float64) *Buffers {
	return newBuffers(spec, inputs, true)
}

// Zeroed is New with every tensor but the inputs given zero, and inputs
// may be nil where an input may be zero too. Fresh memory from the OS is
// zero: Zeroed writes one element per page, not every one (the fusion
// reward's rates kernels filled 170 MiB of NaN in 0.3 s, beside their
// compilers).
func Zeroed(spec *ir.Spec, inputs [][]float64) *Buffers {
	return newBuffers(spec, inputs, false)
}

func newBuffers(spec *ir.Spec, inputs [][]float64, poison bool) *Buffers {
	b := &Buffers{DType: spec.DType}
	in := 0
	for _, t := range spec.Tensors {
		var src []float64
		if t.Role == ir.RoleInput {
			if in < len(inputs) {
				src = inputs[in]
			}
			in++
		}
		n := max(t.Elems(), 1)
		var p unsafe.Pointer
		var f32 []float32
		var f64 []float64
		var b16 []uint16
		var i32 []int32
		var i64 []int64
		var u8 []uint8
		switch dt := spec.ElemType(t); {
		case dt == ir.Int32:
			i32 = filled(n, 0, src, func(v float64) int32 { return int32(v) }, poison)
			p = unsafe.Pointer(&i32[0])
		case dt == ir.Int64:
			i64 = filled(n, 0, src, func(v float64) int64 { return int64(v) }, poison)
			p = unsafe.Pointer(&i64[0])
		case dt == ir.Bool:
			u8 = filled(n, 0, src, func(v float64) uint8 {
				if v != 0 {
					return 1
				}
				return 0
			}, poison)
			p = unsafe.Pointer(&u8[0])
		case dt.Half():
			bits := to16(dt)
			b16 = filled(n, bits(float32(math.NaN())), src, func(v float64) uint16 { return bits(float32(v)) }, poison)
			p = unsafe.Pointer(&b16[0])
		case dt == ir.Float32:
			f32 = filled(n, float32(math.NaN()), src, func(v float64) float32 { return float32(v) }, poison)
			p = unsafe.Pointer(&f32[0])
		default:
			f64 = filled(n, math.NaN(), src, func(v float64) float64 { return v }, poison)
			p = unsafe.Pointer(&f64[0])
		}
		b.F32, b.F64, b.Bits16 = append(b.F32, f32), append(b.F64, f64), append(b.Bits16, b16)
		b.I32, b.I64, b.U8 = append(b.I32, i32), append(b.I64, i64), append(b.U8, u8)
		b.Pin.Pin(p)
		b.Ptr = append(b.Ptr, p)
	}
	return b
}

// Free unpins the buffers.
func (b *Buffers) Free() { b.Pin.Unpin() }

// Get returns tensor i as float64 (a copy, except for a float64 tensor,
// which is the buffer itself).
func (b *Buffers) Get(i int) []float64 {
	switch {
	case b.F64[i] != nil:
		return b.F64[i]
	case b.Bits16[i] != nil:
		return convert(b.Bits16[i], func(v uint16) float64 { return float64(from16(b.DType)(v)) })
	case b.I32[i] != nil:
		return convert(b.I32[i], func(v int32) float64 { return float64(v) })
	case b.I64[i] != nil:
		return convert(b.I64[i], func(v int64) float64 { return float64(v) })
	case b.U8[i] != nil:
		return convert(b.U8[i], func(v uint8) float64 { return float64(v) })
	}
	return convert(b.F32[i], func(v float32) float64 { return float64(v) })
}

func convert[T any](d []T, f func(T) float64) []float64 {
	out := make([]float64, len(d))
	for j, v := range d {
		out[j] = f(v)
	}
	return out
}

// Bytes is the size of tensor i's buffer in bytes.
func (b *Buffers) Bytes(i int) int64 {
	return int64(len(b.F64[i]))*8 + int64(len(b.F32[i]))*4 + int64(len(b.Bits16[i]))*2 +
		int64(len(b.I32[i]))*4 + int64(len(b.I64[i]))*8 + int64(len(b.U8[i]))
}

// Poison sets every tensor of spec that is not an input to NaN.
func (b *Buffers) Poison(spec *ir.Spec) {
	for i, t := range spec.Tensors {
		if t.Role == ir.RoleInput {
			continue
		}
		nan16 := uint16(0)
		if b.DType.Half() {
			nan16 = to16(b.DType)(float32(math.NaN()))
		}
		for j := range b.Bits16[i] {
			b.Bits16[i][j] = nan16
		}
		for j := range b.F32[i] {
			b.F32[i][j] = float32(math.NaN())
		}
		for j := range b.F64[i] {
			b.F64[i][j] = math.NaN()
		}
	}
}

// RandomInputs draws the inputs of spec from a generator seeded by seed:
// uniform in [-1, 1), or in [0.5, 1.5) when positive (for log, sqrt, pow
// and division). An index tensor gets indices uniform in [0, Limit), any
// other integer input integers in [-3, 3] (0 or 1 for a bool).
func RandomInputs(spec *ir.Spec, positive bool, seed uint64) [][]float64 {
	rng := rand.New(rand.NewPCG(seed, 7))
	var out [][]float64
	for _, t := range spec.InputsDecl() {
		d := make([]float64, t.Elems())
		for i := range d {
			switch {
			case t.Limit > 0:
				d[i] = float64(rng.Int64N(t.Limit))
				continue
			case t.DType == ir.Bool:
				d[i] = float64(rng.IntN(2))
				continue
			case t.DType.Integer():
				d[i] = float64(rng.IntN(7) - 3)
				continue
			}
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
