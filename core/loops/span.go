package loops

import (
	"math"

	"github.com/neoflow/neoflow/core/ir"
)

// span is a closed interval of int64 values.
type span struct{ lo, hi int64 }

// spanLimit keeps interval arithmetic far from overflow; beyond it a
// range is unknown.
const spanLimit = 1 << 40

// indexSpan bounds an index expression whose variables range over
// [0, ext[name]); ok is false when no bound is known. The bound may be
// wider than the truth, never narrower.
func indexSpan(e ir.Expr, ext map[string]int64) (span, bool) {
	r, ok := spanRec(e, ext)
	if !ok || r.lo < -spanLimit || r.hi > spanLimit || r.lo > r.hi {
		return span{}, false
	}
	return r, true
}

func spanRec(e ir.Expr, ext map[string]int64) (span, bool) {
	small := func(v int64) bool { return v > -spanLimit && v < spanLimit }
	switch e := e.(type) {
	case *ir.IntLit:
		return span{e.Value, e.Value}, small(e.Value)
	case *ir.Const:
		return span{e.Int, e.Int}, !e.IsFloat && small(e.Int)
	case *ir.Index:
		n, ok := ext[e.Name]
		return span{0, n - 1}, ok && n >= 1 && n < spanLimit
	case *ir.Unary:
		x, ok := spanRec(e.X, ext)
		return span{-x.hi, -x.lo}, ok && e.Op == ir.Neg
	case *ir.Binary:
		x, okx := spanRec(e.X, ext)
		y, oky := spanRec(e.Y, ext)
		if !okx || !oky || !small(x.lo) || !small(x.hi) || !small(y.lo) || !small(y.hi) {
			return span{}, false
		}
		switch e.Op {
		case ir.Add:
			return span{x.lo + y.lo, x.hi + y.hi}, true
		case ir.Sub:
			return span{x.lo - y.hi, x.hi - y.lo}, true
		case ir.Mul:
			lo, hi := math.Inf(1), math.Inf(-1)
			for _, p := range []float64{float64(x.lo) * float64(y.lo), float64(x.lo) * float64(y.hi),
				float64(x.hi) * float64(y.lo), float64(x.hi) * float64(y.hi)} {
				lo, hi = min(lo, p), max(hi, p)
			}
			if lo < -spanLimit || hi > spanLimit {
				return span{}, false
			}
			return span{int64(lo), int64(hi)}, true
		case ir.Div, ir.Mod:
			if y.lo != y.hi || y.lo <= 0 {
				return span{}, false
			}
			d := y.lo
			if e.Op == ir.Div {
				return span{ir.FloorDiv(x.lo, d), ir.FloorDiv(x.hi, d)}, true
			}
			if x.lo >= 0 && x.hi < d {
				return x, true
			}
			return span{0, d - 1}, true
		}
	case *ir.Call:
		var rs []span
		for _, a := range e.Args {
			r, ok := spanRec(a, ext)
			if !ok {
				return span{}, false
			}
			rs = append(rs, r)
		}
		switch {
		case e.Fn == ir.FuncMin && len(rs) == 2:
			return span{min(rs[0].lo, rs[1].lo), min(rs[0].hi, rs[1].hi)}, true
		case e.Fn == ir.FuncMax && len(rs) == 2:
			return span{max(rs[0].lo, rs[1].lo), max(rs[0].hi, rs[1].hi)}, true
		case e.Fn == ir.FuncAbs && len(rs) == 1:
			x := rs[0]
			switch {
			case x.lo >= 0:
				return x, true
			case x.hi <= 0:
				return span{-x.hi, -x.lo}, true
			}
			return span{0, max(-x.lo, x.hi)}, true
		}
	case *ir.Where:
		a, oka := spanRec(e.Then, ext)
		b, okb := spanRec(e.Else, ext)
		return span{min(a.lo, b.lo), max(a.hi, b.hi)}, oka && okb
	}
	return span{}, false
}

// IndexRange bounds an index expression whose variables range over
// [0, ext[name]): every value lies in [lo, hi]. ok is false when no bound
// is known. Backends use it to prove reads in bounds and divisions
// non-negative, as the lowering does (indexSpan).
func IndexRange(e ir.Expr, ext map[string]int64) (lo, hi int64, ok bool) {
	s, ok := indexSpan(e, ext)
	return s.lo, s.hi, ok
}

// IndexWithin reports whether index expression e provably lies in [0, n)
// for every value of its variables in [0, ext[name]).
func IndexWithin(e ir.Expr, n int64, ext map[string]int64) bool {
	s, ok := indexSpan(e, ext)
	return ok && s.lo >= 0 && s.hi < n
}
