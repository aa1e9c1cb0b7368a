package bounds

import (
	"math"
	"testing"
)

// TestIntervalInfinities checks that no finite end is mistaken for an
// infinity and that infinities of opposite signs never cancel.
func TestIntervalInfinities(t *testing.T) {
	iv := func(lo, hi int64) Interval { return Interval{lo, hi} }
	contains := func(r Interval, vs ...int64) bool {
		for _, v := range vs {
			if v < r.Lo || v > r.Hi {
				return false
			}
		}
		return true
	}
	const maxI, minI = math.MaxInt64, math.MinInt64
	tests := []struct {
		desc string
		got  Interval
		want []int64 // values the result must contain
	}{
		{"MaxInt64 - MaxInt64", point(maxI).sub(point(maxI)), []int64{0}},
		{"MinInt64 - MinInt64", point(minI).sub(point(minI)), []int64{0}},
		{"MaxInt64 + MinInt64", point(maxI).add(point(minI)), []int64{-1}},
		{"MinInt64 + MaxInt64", point(minI).add(point(maxI)), []int64{-1}},
		{"-MinInt64 - 1", point(minI).neg().sub(point(1)), []int64{maxI}},
		{"unbounded minus unbounded", iv(0, posInf).sub(iv(0, posInf)), []int64{minI + 1, 0, maxI}},
		{"abs of MinInt64", point(minI).abs(), []int64{maxI}},
		{"MaxInt64 * -1", point(maxI).scale(-1), []int64{-maxI}},
		{"MinInt64 * -1 stays above MaxInt64", point(minI).scale(-1), []int64{maxI}},
		{"div of MaxInt64", point(maxI).div(2), []int64{maxI / 2}},
		{"min with MaxInt64", point(maxI).sub(point(maxI)).add(iv(0, 100)), []int64{0, 100}},
	}
	for _, tc := range tests {
		if !contains(tc.got, tc.want...) {
			t.Errorf("%s: got %v, want it to contain %v", tc.desc, tc.got, tc.want)
		}
	}
	// The index of the once-accepted repro, bounded without Check.
	s := NewScope(map[string]Interval{"i": {0, 100}})
	r := s.Bound(index(t, "1000000000 - min(9223372036854775807 - 9223372036854775807 + i, 999999900)"))
	// MaxInt64 - MaxInt64 is exactly 0 (equal terms cancel), so the index
	// is 1000000000 - i: every value from 999999900 to 1000000000.
	if !contains(r, 999999900, 1000000000) {
		t.Errorf("interval of the repro: got %v, want it to contain 999999900 and 1000000000", r)
	}
}

// TestLinearOverflow checks that linear forms never wrap around: a term
// whose form would overflow stays an atom, and facts that would overflow
// are dropped.
func TestLinearOverflow(t *testing.T) {
	tests := []struct {
		desc string
		expr string
		want string
	}{
		{"product", "i * 2305843009213693952 * 4", "0 + 1*i * 2305843009213693952 * 4"},
		{"sum", "i + 4611686018427387903 + 4611686018427387903", "0 + 1*i + 4611686018427387903 + 4611686018427387903"},
		{"huge literal", "i + 9223372036854775807", "0 + 1*9223372036854775807 + 1*i"},
		{"negated MinInt64", "-(i - -9223372036854775808)", "0 + 1*-9223372036854775808 + -1*i"},
	}
	for _, tc := range tests {
		if got := linearString(Linearize(index(t, tc.expr))); got != tc.want {
			t.Errorf("%s: Linearize(%s): got %q, want %q", tc.desc, tc.expr, got, tc.want)
		}
	}
	if fs := facts(index(t, "i*4611686018427387904*2 >= 0"), false); len(fs) != 1 || linearString(fs[0]) != "0 + 1*i * 4611686018427387904 * 2" {
		t.Errorf("facts of a wrapping product: got %d facts, want the product as an atom", len(fs))
	}
	// -2^62 - 2^62 does not fit a linear form: it stays an atom.
	fs := facts(index(t, "i + 4611686018427387904 >= -4611686018427387904 - 4611686018427387904"), false)
	if want := "4611686018427387904 + -1*-4611686018427387904 - 4611686018427387904 + 1*i"; len(fs) != 1 || linearString(fs[0]) != want {
		var got []string
		for _, f := range fs {
			got = append(got, linearString(f))
		}
		t.Errorf("facts of an overflowing comparison: got %q, want %q", got, want)
	}
	// A tightened guard on the most negative coefficient does not negate
	// MinInt64.
	s := NewScope(map[string]Interval{"i": {0, 3}}).Guard(index(t, "-9223372036854775808 * i >= 0"), false)
	if s.dead {
		t.Errorf("guard -9223372036854775808 * i >= 0 with i in [0, 3]: got a dead branch, i = 0 satisfies it")
	}
}
