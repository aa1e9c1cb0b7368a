package cgen

import (
	"math"

	"github.com/neoflow/neoflow/core/ir"
)

// interval is a closed range of int64 values.
type interval struct{ lo, hi int64 }

// limit keeps interval arithmetic far from overflow; beyond it a range is
// unknown.
const limit = 1 << 40

// rangeOf bounds an index expression given the extents of the loop
// variables in scope; ok is false when no bound is known.
func rangeOf(e ir.Expr, vars map[string]int64) (interval, bool) {
	r, ok := rangeRec(e, vars)
	if !ok || r.lo < -limit || r.hi > limit {
		return interval{}, false
	}
	return r, true
}

func rangeRec(e ir.Expr, vars map[string]int64) (interval, bool) {
	switch e := e.(type) {
	case *ir.IntLit:
		return interval{e.Value, e.Value}, e.Value > -limit && e.Value < limit
	case *ir.Const:
		if e.IsFloat {
			return interval{}, false
		}
		return interval{e.Int, e.Int}, e.Int > -limit && e.Int < limit
	case *ir.Index:
		ext, ok := vars[e.Name]
		if !ok || ext < 1 || ext > limit {
			return interval{}, false
		}
		return interval{0, ext - 1}, true
	case *ir.Unary:
		x, ok := rangeRec(e.X, vars)
		return interval{-x.hi, -x.lo}, ok && e.Op == ir.Neg
	case *ir.Binary:
		x, okx := rangeRec(e.X, vars)
		y, oky := rangeRec(e.Y, vars)
		if !okx || !oky || x.lo < -limit || x.hi > limit || y.lo < -limit || y.hi > limit {
			return interval{}, false
		}
		switch e.Op {
		case ir.Add:
			return interval{x.lo + y.lo, x.hi + y.hi}, true
		case ir.Sub:
			return interval{x.lo - y.hi, x.hi - y.lo}, true
		case ir.Mul:
			// Operands are below 2^40 in magnitude; products fit in float64
			// exactly enough to compare against the limit.
			ps := []float64{float64(x.lo) * float64(y.lo), float64(x.lo) * float64(y.hi),
				float64(x.hi) * float64(y.lo), float64(x.hi) * float64(y.hi)}
			lo, hi := math.Inf(1), math.Inf(-1)
			for _, p := range ps {
				lo, hi = min(lo, p), max(hi, p)
			}
			if lo < -limit || hi > limit {
				return interval{}, false
			}
			return interval{int64(lo), int64(hi)}, true
		case ir.Div, ir.Mod:
			if y.lo != y.hi || y.lo <= 0 {
				return interval{}, false
			}
			d := y.lo
			if e.Op == ir.Div {
				return interval{ir.FloorDiv(x.lo, d), ir.FloorDiv(x.hi, d)}, true
			}
			if x.lo >= 0 && x.hi < d {
				return x, true
			}
			return interval{0, d - 1}, true
		}
	case *ir.Call:
		var rs []interval
		for _, a := range e.Args {
			r, ok := rangeRec(a, vars)
			if !ok {
				return interval{}, false
			}
			rs = append(rs, r)
		}
		switch {
		case e.Fn == ir.FuncMin && len(rs) == 2:
			return interval{min(rs[0].lo, rs[1].lo), min(rs[0].hi, rs[1].hi)}, true
		case e.Fn == ir.FuncMax && len(rs) == 2:
			return interval{max(rs[0].lo, rs[1].lo), max(rs[0].hi, rs[1].hi)}, true
		case e.Fn == ir.FuncAbs && len(rs) == 1:
			x := rs[0]
			if x.lo >= 0 {
				return x, true
			}
			if x.hi <= 0 {
				return interval{-x.hi, -x.lo}, true
			}
			return interval{0, max(-x.lo, x.hi)}, true
		}
	case *ir.Where:
		a, oka := rangeRec(e.Then, vars)
		b, okb := rangeRec(e.Else, vars)
		return interval{min(a.lo, b.lo), max(a.hi, b.hi)}, oka && okb
	}
	return interval{}, false
}
