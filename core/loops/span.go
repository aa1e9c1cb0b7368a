package loops

import (
	"math"

	"github.com/neoflow/neoflow/core/ir"
)

// span is a closed interval of int64 values.
type span struct{ lo, hi int64 }

// spanLimit keeps interval arithmetic far from overflow; beyond it a
// range is unknown. Sums of two values below it fit in int64, and sema
// allows tensors of up to 2^62 elements, so every extent of a valid spec
// is below it.
const spanLimit = 1 << 61

// indexSpan bounds an index expression whose variables range over
// [0, ext[name]); ok is false when no bound is known. The bound may be
// wider than the truth, never narrower.
func indexSpan(e ir.Expr, ext map[string]int64) (span, bool) {
	r, ok := spanRec(e, &spanEnv{ext: ext})
	if !ok || r.lo < -spanLimit || r.hi > spanLimit || r.lo > r.hi {
		return span{}, false
	}
	return r, true
}

// spanEnv is what bounds an expression: the loops' extents, and facts a
// where's condition establishes in a branch about subexpressions (by their
// printed form), so that where(i > 0, i - 1, 0) is bounded below by 0
// however i was split or substituted, as sema proved it.
type spanEnv struct {
	ext   map[string]int64
	facts map[string]span
}

func spanRec(e ir.Expr, env *spanEnv) (span, bool) {
	r, ok := spanOf(e, env)
	if f, known := env.facts[ir.ExprString(e)]; known {
		if !ok {
			return f, true
		}
		r = span{max(r.lo, f.lo), min(r.hi, f.hi)}
	}
	return r, ok
}

func small(v int64) bool { return v > -spanLimit && v < spanLimit }

func spanOf(e ir.Expr, env *spanEnv) (span, bool) {
	switch e := e.(type) {
	case *ir.IntLit:
		return span{e.Value, e.Value}, small(e.Value)
	case *ir.Const:
		return span{e.Int, e.Int}, !e.IsFloat && small(e.Int)
	case *ir.Index:
		n, ok := env.ext[e.Name]
		return span{0, n - 1}, ok && n >= 1 && n < spanLimit
	case *ir.Unary:
		x, ok := spanRec(e.X, env)
		return span{-x.hi, -x.lo}, ok && e.Op == ir.Neg
	case *ir.Binary:
		return binarySpan(e, env)
	case *ir.Call:
		return callSpan(e, env)
	case *ir.Where:
		return whereSpan(e, env)
	}
	return span{}, false
}

func binarySpan(e *ir.Binary, env *spanEnv) (span, bool) {
	if e.Op == ir.Sub && ir.Equal(e.X, e.Y) {
		return span{0, 0}, true // x - x, whatever x's range (i - i survives splitting i)
	}
	x, okx := spanRec(e.X, env)
	y, oky := spanRec(e.Y, env)
	if !okx || !oky || !small(x.lo) || !small(x.hi) || !small(y.lo) || !small(y.hi) {
		return span{}, false
	}
	switch e.Op {
	case ir.Add:
		return span{x.lo + y.lo, x.hi + y.hi}, true
	case ir.Sub:
		return span{x.lo - y.hi, x.hi - y.lo}, true
	case ir.Mul:
		lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
		for _, p := range [][2]int64{{x.lo, y.lo}, {x.lo, y.hi}, {x.hi, y.lo}, {x.hi, y.hi}} {
			v, ok := mulSmall(p[0], p[1])
			if !ok {
				return span{}, false
			}
			lo, hi = min(lo, v), max(hi, v)
		}
		return span{lo, hi}, true
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
	return span{}, false
}

// mulSmall is a*b, exactly, when it lies within the span limit.
func mulSmall(a, b int64) (int64, bool) {
	if a == 0 || b == 0 {
		return 0, true
	}
	p := a * b
	return p, p/b == a && small(p)
}

func callSpan(e *ir.Call, env *spanEnv) (span, bool) {
	var rs []span
	for _, a := range e.Args {
		r, ok := spanRec(a, env)
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
	return span{}, false
}

// whereSpan joins the spans of the branches a where can take, each bounded
// under what its condition (or the condition's failure) establishes.
func whereSpan(e *ir.Where, env *spanEnv) (span, bool) {
	out, seen := span{}, false
	for _, branch := range []struct {
		x    ir.Expr
		cond bool
	}{{e.Then, true}, {e.Else, false}} {
		benv, possible := env.assume(e.Cond, branch.cond)
		if !possible {
			continue // the condition never (or always) holds: the branch is never taken
		}
		r, ok := spanRec(branch.x, benv)
		if !ok {
			return span{}, false
		}
		if !seen {
			out, seen = r, true
		} else {
			out = span{min(out.lo, r.lo), max(out.hi, r.hi)}
		}
	}
	return out, seen
}

// assume is env where cond evaluates to holds; possible is false when that
// cannot happen. Conditions it does not understand add no fact.
func (env *spanEnv) assume(cond ir.Expr, holds bool) (*spanEnv, bool) {
	switch c := cond.(type) {
	case *ir.Unary:
		if c.Op == ir.Not {
			return env.assume(c.X, !holds)
		}
	case *ir.Binary:
		if (c.Op == ir.And && holds) || (c.Op == ir.Or && !holds) {
			a, ok := env.assume(c.X, holds)
			if !ok {
				return env, false
			}
			return a.assume(c.Y, holds)
		}
		if c.Op.IsCompare() {
			return env.compare(c, holds)
		}
	}
	return env, true
}

// compare assumes x op k (or its negation) for an integer constant k,
// narrowing what is known of x.
func (env *spanEnv) compare(c *ir.Binary, holds bool) (*spanEnv, bool) {
	k, ok := spanOf(c.Y, &spanEnv{})
	if !ok || k.lo != k.hi {
		return env, true
	}
	x, ok := spanRec(c.X, env)
	if !ok || !small(k.lo) {
		return env, true
	}
	op := c.Op
	if !holds {
		op = map[ir.BinOp]ir.BinOp{ir.Lt: ir.Ge, ir.Le: ir.Gt, ir.Gt: ir.Le, ir.Ge: ir.Lt, ir.Eq: ir.Ne, ir.Ne: ir.Eq}[op]
	}
	v := k.lo
	switch op {
	case ir.Lt:
		x.hi = min(x.hi, v-1)
	case ir.Le:
		x.hi = min(x.hi, v)
	case ir.Gt:
		x.lo = max(x.lo, v+1)
	case ir.Ge:
		x.lo = max(x.lo, v)
	case ir.Eq:
		x = span{max(x.lo, v), min(x.hi, v)}
	default: // != narrows an interval only at its ends
		if x.lo == v {
			x.lo++
		}
		if x.hi == v {
			x.hi--
		}
	}
	if x.lo > x.hi {
		return env, false
	}
	facts := make(map[string]span, len(env.facts)+1)
	for k, f := range env.facts {
		facts[k] = f
	}
	if !derive(facts, c.X, x) {
		return env, false
	}
	return &spanEnv{ext: env.ext, facts: facts}, true
}

// derive records that e lies in x, and what follows for the operand of e
// when e is that operand shifted, negated or scaled by a constant: from
// -l + 1 > 0 follows l <= 0, so the branch's -l is bounded below by 0.
// It reports false when the facts contradict (the branch is never taken).
func derive(facts map[string]span, e ir.Expr, x span) bool {
	key := ir.ExprString(e)
	if f, ok := facts[key]; ok {
		x = span{max(x.lo, f.lo), min(x.hi, f.hi)}
	}
	if x.lo > x.hi {
		return false
	}
	facts[key] = x
	inner, y, ok := operandSpan(e, x)
	if !ok {
		return true
	}
	return derive(facts, inner, y)
}

// operandSpan inverts e = f(inner) for f a shift, negation or scaling by
// an integer constant: inner lies in the returned span when e lies in x.
func operandSpan(e ir.Expr, x span) (ir.Expr, span, bool) {
	constant := func(e ir.Expr) (int64, bool) {
		k, ok := spanOf(e, &spanEnv{})
		return k.lo, ok && k.lo == k.hi && small(k.lo)
	}
	switch e := e.(type) {
	case *ir.Unary:
		if e.Op == ir.Neg {
			return e.X, span{-x.hi, -x.lo}, true
		}
	case *ir.Binary:
		if c, ok := constant(e.Y); ok {
			switch e.Op {
			case ir.Add:
				return e.X, span{x.lo - c, x.hi - c}, true
			case ir.Sub:
				return e.X, span{x.lo + c, x.hi + c}, true
			case ir.Mul:
				if c > 0 {
					return e.X, span{ceilDiv(x.lo, c), floorDiv(x.hi, c)}, true
				}
			}
		}
		if c, ok := constant(e.X); ok {
			switch e.Op {
			case ir.Add:
				return e.Y, span{x.lo - c, x.hi - c}, true
			case ir.Sub:
				return e.Y, span{c - x.hi, c - x.lo}, true
			case ir.Mul:
				if c > 0 {
					return e.Y, span{ceilDiv(x.lo, c), floorDiv(x.hi, c)}, true
				}
			}
		}
	}
	return nil, span{}, false
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

func ceilDiv(a, b int64) int64 { return -floorDiv(-a, b) }

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
