package sema

import (
	"fmt"
	"math"
	"math/bits"

	"github.com/neoflow/neoflow/core/ir"
)

// Interval ends. An interval's lower end is an integer or -infinity and its
// upper end an integer or +infinity. The encoding is directional:
// math.MinInt64 as a lower end means -infinity and math.MaxInt64 as an
// upper end means +infinity; nothing else is infinite. A lower end of
// MaxInt64 is finite (the values are at least MaxInt64) and so is an upper
// end of MinInt64. Every operation computes each end exactly and rounds it
// outward when it does not fit: a lower end down (to -infinity, or to
// MaxInt64 when it exceeds MaxInt64), an upper end up. So no end ever wraps
// around, and no literal can stand for an infinity of the wrong sign.
const (
	negInf = math.MinInt64 // as a lower end
	posInf = math.MaxInt64 // as an upper end
)

// interval is the integer interval [lo, hi]; it is empty when lo > hi.
type interval struct{ lo, hi int64 }

var full = interval{negInf, posInf}

// point is the interval of the single value v. Rounded outward, the point
// MinInt64 is [-inf, MinInt64] and the point MaxInt64 is [MaxInt64, +inf].
func point(v int64) interval { return interval{v, v} }

func (a interval) empty() bool { return a.lo > a.hi }

func (a interval) String() string {
	lo, hi := fmt.Sprint(a.lo), fmt.Sprint(a.hi)
	if a.lo == negInf {
		lo = "-inf"
	}
	if a.hi == posInf {
		hi = "+inf"
	}
	return "[" + lo + ", " + hi + "]"
}

func (a interval) intersect(b interval) interval {
	return interval{max(a.lo, b.lo), min(a.hi, b.hi)}
}

func (a interval) hull(b interval) interval {
	if a.empty() {
		return b
	}
	if b.empty() {
		return a
	}
	return interval{min(a.lo, b.lo), max(a.hi, b.hi)}
}

// end is an extended integer: a finite int64 (inf == 0) or an infinity of
// the sign of inf. An exact result too large for an int64 is also recorded
// as an infinity of its sign: rounding outward maps it to the same
// interval end as the true value would be.
type end struct {
	v   int64
	inf int8
}

func lowerEnd(v int64) end {
	if v == negInf {
		return end{inf: -1}
	}
	return end{v: v}
}

func upperEnd(v int64) end {
	if v == posInf {
		return end{inf: 1}
	}
	return end{v: v}
}

// less orders extended integers.
func (x end) less(y end) bool {
	if x.inf != y.inf {
		return x.inf < y.inf
	}
	return x.inf == 0 && x.v < y.v
}

// lower rounds x down to a lower interval end.
func (x end) lower() int64 {
	switch {
	case x.inf < 0:
		return negInf
	case x.inf > 0:
		return math.MaxInt64 // finite: the values exceed MaxInt64
	}
	return x.v
}

// upper rounds x up to an upper interval end.
func (x end) upper() int64 {
	switch {
	case x.inf > 0:
		return posInf
	case x.inf < 0:
		return math.MinInt64 // finite: the values are below MinInt64
	}
	return x.v
}

func (x end) neg() end {
	if x.inf != 0 {
		return end{inf: -x.inf}
	}
	if x.v == math.MinInt64 {
		return end{inf: 1} // 2^63
	}
	return end{v: -x.v}
}

// mul multiplies extended integers; zero times an infinity is zero, since
// an infinite end stands for unbounded finite values.
func (x end) mul(y end) end {
	if (x.inf == 0 && x.v == 0) || (y.inf == 0 && y.v == 0) {
		return end{}
	}
	sign := int8(1)
	if (x.inf < 0 || (x.inf == 0 && x.v < 0)) != (y.inf < 0 || (y.inf == 0 && y.v < 0)) {
		sign = -1
	}
	if x.inf != 0 || y.inf != 0 {
		return end{inf: sign}
	}
	hi, lo := bits.Mul64(absU(x.v), absU(y.v))
	switch {
	case hi != 0 || lo > 1<<63 || (lo == 1<<63 && sign > 0):
		return end{inf: sign}
	case sign < 0:
		return end{v: int64(-lo)} // -lo wraps to MinInt64 for lo == 2^63
	}
	return end{v: int64(lo)}
}

func absU(v int64) uint64 {
	if v < 0 {
		return uint64(-v) // MinInt64 wraps to 2^63
	}
	return uint64(v)
}

func (a interval) add(b interval) interval {
	lo, hi := int64(negInf), int64(posInf)
	if a.lo != negInf && b.lo != negInf {
		lo = addEnds(a.lo, b.lo).lower()
	}
	if a.hi != posInf && b.hi != posInf {
		hi = addEnds(a.hi, b.hi).upper()
	}
	return interval{lo, hi}
}

// addEnds adds two finite ends exactly.
func addEnds(x, y int64) end {
	s := x + y
	switch {
	case x >= 0 && y >= 0 && s < 0:
		return end{inf: 1}
	case x < 0 && y < 0 && s >= 0:
		return end{inf: -1}
	}
	return end{v: s}
}

func (a interval) neg() interval {
	return interval{upperEnd(a.hi).neg().lower(), lowerEnd(a.lo).neg().upper()}
}

func (a interval) sub(b interval) interval { return a.add(b.neg()) }

// mul bounds a product by the products of the ends.
func (a interval) mul(b interval) interval {
	if a.empty() || b.empty() {
		return interval{posInf, negInf}
	}
	x := [2]end{lowerEnd(a.lo), upperEnd(a.hi)}
	y := [2]end{lowerEnd(b.lo), upperEnd(b.hi)}
	lo, hi := x[0].mul(y[0]), x[0].mul(y[0])
	for _, p := range [...]end{x[0].mul(y[1]), x[1].mul(y[0]), x[1].mul(y[1])} {
		if p.less(lo) {
			lo = p
		}
		if hi.less(p) {
			hi = p
		}
	}
	return interval{lo.lower(), hi.upper()}
}

// scale multiplies by a constant.
func (a interval) scale(k int64) interval { return a.mul(point(k)) }

// div is floor division by a positive constant k; it is exact because
// floor(x/k) is monotone in x.
func (a interval) div(k int64) interval {
	r := a
	if a.lo != negInf {
		r.lo = ir.FloorDiv(a.lo, k)
	}
	if a.hi != posInf {
		r.hi = ir.FloorDiv(a.hi, k)
	}
	return r
}

// mod is floor modulo by a positive constant k: exact when the interval
// lies within one period, [0, k-1] otherwise.
func (a interval) mod(k int64) interval {
	if a.lo != negInf && a.hi != posInf && !a.empty() && floorDiv(a.lo, k) == floorDiv(a.hi, k) {
		return interval{floorMod(a.lo, k), floorMod(a.hi, k)}
	}
	return interval{0, k - 1}
}

func (a interval) abs() interval {
	switch {
	case a.lo >= 0:
		return a
	case a.hi <= 0:
		return a.neg()
	}
	return interval{0, max(lowerEnd(a.lo).neg().upper(), a.hi)}
}

// floorDiv is floor(a/k) for k > 0.
func floorDiv(a, k int64) int64 { return ir.FloorDiv(a, k) }

// floorMod is a - floorDiv(a, k)*k for k > 0: in [0, k-1].
func floorMod(a, k int64) int64 { return ir.FloorMod(a, k) }
