package bounds

import (
	"fmt"
	"math"
	"math/bits"

	"github.com/neoflow/neoflow/core/ir"
)

// Interval ends. An Interval's lower end is an integer or -infinity and its
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

// Interval is the integer Interval [lo, hi]; it is empty when lo > hi.
type Interval struct{ Lo, Hi int64 }

var full = Interval{negInf, posInf}

// point is the Interval of the single value v. Rounded outward, the point
// MinInt64 is [-inf, MinInt64] and the point MaxInt64 is [MaxInt64, +inf].
func point(v int64) Interval { return Interval{v, v} }

func (a Interval) empty() bool { return a.Lo > a.Hi }

func (a Interval) String() string {
	lo, hi := fmt.Sprint(a.Lo), fmt.Sprint(a.Hi)
	if a.Lo == negInf {
		lo = "-inf"
	}
	if a.Hi == posInf {
		hi = "+inf"
	}
	return "[" + lo + ", " + hi + "]"
}

func (a Interval) intersect(b Interval) Interval {
	return Interval{max(a.Lo, b.Lo), min(a.Hi, b.Hi)}
}

func (a Interval) hull(b Interval) Interval {
	if a.empty() {
		return b
	}
	if b.empty() {
		return a
	}
	return Interval{min(a.Lo, b.Lo), max(a.Hi, b.Hi)}
}

// end is an extended integer: a finite int64 (inf == 0) or an infinity of
// the sign of inf. An exact result too large for an int64 is also recorded
// as an infinity of its sign: rounding outward maps it to the same
// Interval end as the true value would be.
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

// lower rounds x down to a lower Interval end.
func (x end) lower() int64 {
	switch {
	case x.inf < 0:
		return negInf
	case x.inf > 0:
		return math.MaxInt64 // finite: the values exceed MaxInt64
	}
	return x.v
}

// upper rounds x up to an upper Interval end.
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

func (a Interval) add(b Interval) Interval {
	lo, hi := int64(negInf), int64(posInf)
	if a.Lo != negInf && b.Lo != negInf {
		lo = addEnds(a.Lo, b.Lo).lower()
	}
	if a.Hi != posInf && b.Hi != posInf {
		hi = addEnds(a.Hi, b.Hi).upper()
	}
	return Interval{lo, hi}
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

func (a Interval) neg() Interval {
	return Interval{upperEnd(a.Hi).neg().lower(), lowerEnd(a.Lo).neg().upper()}
}

func (a Interval) sub(b Interval) Interval { return a.add(b.neg()) }

// mul bounds a product by the products of the ends.
func (a Interval) mul(b Interval) Interval {
	if a.empty() || b.empty() {
		return Interval{posInf, negInf}
	}
	x := [2]end{lowerEnd(a.Lo), upperEnd(a.Hi)}
	y := [2]end{lowerEnd(b.Lo), upperEnd(b.Hi)}
	lo, hi := x[0].mul(y[0]), x[0].mul(y[0])
	for _, p := range [...]end{x[0].mul(y[1]), x[1].mul(y[0]), x[1].mul(y[1])} {
		if p.less(lo) {
			lo = p
		}
		if hi.less(p) {
			hi = p
		}
	}
	return Interval{lo.lower(), hi.upper()}
}

// scale multiplies by a constant.
func (a Interval) scale(k int64) Interval { return a.mul(point(k)) }

// div is floor division by a positive constant k; it is exact because
// floor(x/k) is monotone in x.
func (a Interval) div(k int64) Interval {
	r := a
	if a.Lo != negInf {
		r.Lo = ir.FloorDiv(a.Lo, k)
	}
	if a.Hi != posInf {
		r.Hi = ir.FloorDiv(a.Hi, k)
	}
	return r
}

// mod is floor modulo by a positive constant k: exact when the Interval
// lies within one period, [0, k-1] otherwise.
func (a Interval) mod(k int64) Interval {
	if a.Lo != negInf && a.Hi != posInf && !a.empty() && floorDiv(a.Lo, k) == floorDiv(a.Hi, k) {
		return Interval{floorMod(a.Lo, k), floorMod(a.Hi, k)}
	}
	return Interval{0, k - 1}
}

func (a Interval) abs() Interval {
	switch {
	case a.Lo >= 0:
		return a
	case a.Hi <= 0:
		return a.neg()
	}
	return Interval{0, max(lowerEnd(a.Lo).neg().upper(), a.Hi)}
}

// floorDiv is floor(a/k) for k > 0.
func floorDiv(a, k int64) int64 { return ir.FloorDiv(a, k) }

// floorMod is a - floorDiv(a, k)*k for k > 0: in [0, k-1].
func floorMod(a, k int64) int64 { return ir.FloorMod(a, k) }

// ConstDivisor returns the value of a positive integer constant divisor.
func ConstDivisor(e ir.Expr) (int64, bool) {
	switch e := e.(type) {
	case *ir.IntLit:
		return e.Value, e.Value > 0
	case *ir.Const:
		return e.Int, !e.IsFloat && e.Int > 0
	}
	return 0, false
}
