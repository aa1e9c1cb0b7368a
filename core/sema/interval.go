package sema

import (
	"fmt"
	"math"

	"github.com/neoflow/neoflow/core/ir"
)

// Infinite interval ends. Arithmetic saturates at them, so overflow never
// wraps around into a wrong (and unsound) finite bound.
const (
	negInf = math.MinInt64
	posInf = math.MaxInt64
)

// interval is the integer interval [lo, hi]; it is empty when lo > hi.
type interval struct{ lo, hi int64 }

var full = interval{negInf, posInf}

func point(v int64) interval { return interval{v, v} }

func (a interval) empty() bool { return a.lo > a.hi }

func (a interval) String() string {
	end := func(v int64) string {
		switch v {
		case negInf:
			return "-inf"
		case posInf:
			return "+inf"
		}
		return fmt.Sprint(v)
	}
	return "[" + end(a.lo) + ", " + end(a.hi) + "]"
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

func (a interval) add(b interval) interval {
	return interval{sadd(a.lo, b.lo), sadd(a.hi, b.hi)}
}

func (a interval) neg() interval { return interval{sneg(a.hi), sneg(a.lo)} }

func (a interval) sub(b interval) interval { return a.add(b.neg()) }

func (a interval) mul(b interval) interval {
	p := [4]int64{smul(a.lo, b.lo), smul(a.lo, b.hi), smul(a.hi, b.lo), smul(a.hi, b.hi)}
	r := interval{p[0], p[0]}
	for _, v := range p[1:] {
		r.lo, r.hi = min(r.lo, v), max(r.hi, v)
	}
	return r
}

// scale multiplies by a constant.
func (a interval) scale(k int64) interval { return a.mul(point(k)) }

// div is floor division by a positive constant k; it is exact because
// floor(x/k) is monotone in x.
func (a interval) div(k int64) interval { return interval{floorDiv(a.lo, k), floorDiv(a.hi, k)} }

// mod is floor modulo by a positive constant k: exact when the interval
// lies within one period, [0, k-1] otherwise.
func (a interval) mod(k int64) interval {
	if a.lo != negInf && a.hi != posInf && floorDiv(a.lo, k) == floorDiv(a.hi, k) {
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
	return interval{0, max(sneg(a.lo), a.hi)}
}

// sadd adds with saturation at the infinite ends. An infinite operand wins;
// lo+lo and hi+hi never mix opposite infinities for non-empty intervals.
func sadd(a, b int64) int64 {
	switch {
	case a == negInf || a == posInf:
		return a
	case b == negInf || b == posInf:
		return b
	}
	s := a + b
	if a > 0 && b > 0 && s < 0 {
		return posInf
	}
	if a < 0 && b < 0 && s >= 0 {
		return negInf
	}
	return s
}

func sneg(a int64) int64 {
	switch a {
	case negInf:
		return posInf
	case posInf:
		return negInf
	}
	return -a
}

// smul multiplies with saturation at the infinite ends.
func smul(a, b int64) int64 {
	if a == 0 || b == 0 {
		return 0
	}
	negative := (a < 0) != (b < 0)
	inf := func() int64 {
		if negative {
			return negInf
		}
		return posInf
	}
	if a == negInf || a == posInf || b == negInf || b == posInf {
		return inf()
	}
	p := a * b
	if p/b != a || (a == -1 && b == negInf) || (b == -1 && a == negInf) {
		return inf()
	}
	return p
}

// floorDiv is floor(a/k) for k > 0; infinities stay infinite.
func floorDiv(a, k int64) int64 {
	if a == negInf || a == posInf {
		return a
	}
	return ir.FloorDiv(a, k)
}

// floorMod is a - floorDiv(a, k)*k for k > 0: in [0, k-1].
func floorMod(a, k int64) int64 {
	return ir.FloorMod(a, k)
}

// scope is what is known at a point of a statement: the interval of each
// index variable, tightened bounds of opaque atoms (see linear.go) and the
// guard facts that hold there.
type scope struct {
	vars  map[string]interval
	atoms map[string]interval
	facts []linear
	// dead is set when the guards contradict each other: the code under
	// them never runs.
	dead bool
}

func newScope(vars map[string]interval) *scope {
	return &scope{vars: vars, atoms: map[string]interval{}}
}

// intervalOf bounds the integer expression e in scope s. Unknown variables
// and non-index terms are unbounded.
func (s *scope) intervalOf(e ir.Expr) interval {
	r := s.rawInterval(e)
	if len(s.atoms) > 0 {
		switch e.(type) {
		case *ir.Binary, *ir.Call, *ir.Where:
			if t, ok := s.atoms[ir.ExprString(e)]; ok {
				r = r.intersect(t)
			}
		}
	}
	return r
}

func (s *scope) rawInterval(e ir.Expr) interval {
	switch e := e.(type) {
	case *ir.IntLit:
		return point(e.Value)
	case *ir.Const:
		if !e.IsFloat {
			return point(e.Int)
		}
	case *ir.Index:
		if v, ok := s.vars[e.Name]; ok {
			return v
		}
	case *ir.Unary:
		if e.Op == ir.Neg {
			return s.intervalOf(e.X).neg()
		}
	case *ir.Binary:
		switch e.Op {
		case ir.Add:
			return s.intervalOf(e.X).add(s.intervalOf(e.Y))
		case ir.Sub:
			return s.intervalOf(e.X).sub(s.intervalOf(e.Y))
		case ir.Mul:
			return s.intervalOf(e.X).mul(s.intervalOf(e.Y))
		case ir.Div:
			if k, ok := constDivisor(e.Y); ok {
				return s.intervalOf(e.X).div(k)
			}
		case ir.Mod:
			if k, ok := constDivisor(e.Y); ok {
				return s.intervalOf(e.X).mod(k)
			}
		}
	case *ir.Call:
		switch {
		case e.Fn == ir.FuncAbs && len(e.Args) == 1:
			return s.intervalOf(e.Args[0]).abs()
		case e.Fn == ir.FuncMin && len(e.Args) == 2:
			a, b := s.intervalOf(e.Args[0]), s.intervalOf(e.Args[1])
			return interval{min(a.lo, b.lo), min(a.hi, b.hi)}
		case e.Fn == ir.FuncMax && len(e.Args) == 2:
			a, b := s.intervalOf(e.Args[0]), s.intervalOf(e.Args[1])
			return interval{max(a.lo, b.lo), max(a.hi, b.hi)}
		}
	case *ir.Where:
		r := interval{posInf, negInf} // empty
		if t := s.guard(e.Cond, false); !t.dead {
			r = r.hull(t.intervalOf(e.Then))
		}
		if f := s.guard(e.Cond, true); !f.dead {
			r = r.hull(f.intervalOf(e.Else))
		}
		if r.empty() {
			return full // both branches dead: no information worth keeping
		}
		return r
	}
	return full
}
