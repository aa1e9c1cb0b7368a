package ir

import "math"

// Float16Bits is the IEEE binary16 nearest to f (ties to even), as bits:
// what a kernel stores for a float16 element it computed as f.
func Float16Bits(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp, mant := int(b>>23&0xff), b&0x7fffff
	if exp == 0xff { // infinity, NaN
		if mant != 0 {
			return sign | 0x7e00
		}
		return sign | 0x7c00
	}
	e := exp - 127 + 15
	if e >= 0x1f {
		return sign | 0x7c00
	}
	if e <= 0 { // a subnormal half: mant × 2^-24
		full := mant | 0x800000
		shift := uint(14 - e)
		if shift > 24 {
			return sign
		}
		return sign | uint16(roundShift(full, shift))
	}
	// Rounding may carry into the exponent, up to infinity: both right.
	return sign | uint16(roundShift(uint32(e)<<23|mant, 13))
}

// roundShift is x >> s rounded to nearest, ties to even.
func roundShift(x uint32, s uint) uint32 {
	q, rem, half := x>>s, x&(1<<s-1), uint32(1)<<(s-1)
	if rem > half || rem == half && q&1 == 1 {
		q++
	}
	return q
}

// Float16From is the value of binary16 bits h.
func Float16From(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	e, m := uint32(h>>10&0x1f), uint32(h&0x3ff)
	switch e {
	case 0x1f:
		return math.Float32frombits(sign | 0x7f800000 | m<<13)
	case 0:
		v := float32(m) * (1.0 / (1 << 24))
		if sign != 0 {
			v = -v
		}
		return v
	}
	return math.Float32frombits(sign | (e+112)<<23 | m<<13)
}

// BFloat16Bits is the bfloat16 nearest to f (ties to even), as bits.
func BFloat16Bits(f float32) uint16 {
	b := math.Float32bits(f)
	if b&0x7fffffff > 0x7f800000 { // NaN: keep it quiet
		return uint16(b>>16) | 0x40
	}
	return uint16(roundShift(b, 16)) // no carry out: the largest finite b plus a half is below 2^32
}

// BFloat16From is the value of bfloat16 bits h.
func BFloat16From(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// Round is v stored as an element of dtype d and read back: rounded to
// float32, and on to float16 or bfloat16 (kernels compute 16-bit types
// in float32 and round when they store).
func (d DType) Round(v float64) float64 {
	switch d {
	case Float32:
		return float64(float32(v))
	case Float16:
		return float64(Float16From(Float16Bits(float32(v))))
	case BFloat16:
		return float64(BFloat16From(BFloat16Bits(float32(v))))
	}
	return v
}
