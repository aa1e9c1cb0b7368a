package ir

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestHalfRoundTrip: every 16-bit pattern survives the trip through
// float32, NaNs as NaNs.
func TestHalfRoundTrip(t *testing.T) {
	for h := range 1 << 16 {
		for _, c := range []struct {
			name string
			from func(uint16) float32
			bits func(float32) uint16
		}{{"float16", Float16From, Float16Bits}, {"bfloat16", BFloat16From, BFloat16Bits}} {
			f := c.from(uint16(h))
			back := c.bits(f)
			if f != f {
				if g := c.from(back); g == g {
					t.Fatalf("%s NaN %#04x came back as %v", c.name, h, g)
				}
				continue
			}
			if back != uint16(h) {
				t.Fatalf("%s %#04x = %v came back as %#04x", c.name, h, f, back)
			}
		}
	}
}

// TestHalfRoundsToNearestEven: the chosen 16-bit value is at least as
// close to f as its neighbours, and on a tie it is the even one.
func TestHalfRoundsToNearestEven(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	check := func(name string, f float32, bits func(float32) uint16, from func(uint16) float32) {
		h := bits(f)
		got := float64(from(h))
		if math.IsInf(got, 0) {
			return // overflow: checked by the cases below
		}
		d := math.Abs(got - float64(f))
		for _, n := range []uint16{h - 1, h + 1} {
			v := float64(from(n))
			if n&0x7fff > 0x7f80 && name == "bfloat16" || v != v || math.Signbit(v) != math.Signbit(got) && v != 0 {
				continue
			}
			dn := math.Abs(v - float64(f))
			if dn < d || dn == d && h&1 == 1 {
				t.Fatalf("%s(%v) = %#04x (%v), but %#04x (%v) is nearer or even", name, f, h, got, n, v)
			}
		}
	}
	for range 200000 {
		f := math.Float32frombits(rng.Uint32())
		if f != f {
			continue
		}
		check("float16", f, Float16Bits, Float16From)
		check("bfloat16", f, BFloat16Bits, BFloat16From)
		g := float32(rng.NormFloat64()) * float32(math.Pow(2, float64(rng.IntN(40)-30)))
		check("float16", g, Float16Bits, Float16From)
		check("bfloat16", g, BFloat16Bits, BFloat16From)
	}
	for _, c := range []struct {
		f    float32
		want uint16
	}{
		{65504, 0x7bff}, {65519.99, 0x7bff}, {65520, 0x7c00}, {1e6, 0x7c00}, {-1e6, 0xfc00},
		{1, 0x3c00}, {1 + 1.0/2048, 0x3c00}, {1 + 3.0/2048, 0x3c02}, // ties to even
		{5.960464477539063e-08, 0x0001}, {2.98023223876953125e-08, 0x0000}, {2.9802326e-08, 0x0001},
	} {
		if got := Float16Bits(c.f); got != c.want {
			t.Errorf("Float16Bits(%v) = %#04x, want %#04x", c.f, got, c.want)
		}
	}
	if got := BFloat16Bits(1 + 1.0/256); got != 0x3f80 {
		t.Errorf("BFloat16Bits(1 + 2^-8) = %#04x, want the even 0x3f80", got)
	}
	if got := BFloat16Bits(1 + 3.0/256); got != 0x3f82 {
		t.Errorf("BFloat16Bits(1 + 3·2^-8) = %#04x, want the even 0x3f82", got)
	}
	if got := Float16.Round(0.1); got != float64(Float16From(0x2e66)) {
		t.Errorf("Float16.Round(0.1) = %v", got)
	}
}
