package bounds

import (
	"math"

	"github.com/neoflow/neoflow/core/ir"
)

// Dead reports whether the guards of s contradict each other: code under
// them never runs.
func (s *Scope) Dead() bool { return s.dead }

// ForExtents is the scope where each variable ranges over [0, ext[name]).
func ForExtents(ext map[string]int64) *Scope {
	vars := make(map[string]Interval, len(ext))
	for v, n := range ext {
		vars[v] = Interval{0, n - 1}
	}
	return NewScope(vars)
}

// Range bounds the index expression e in s: its interval, narrowed by its
// linear form, in which equal terms cancel (i - i + 3 is 3).
func (s *Scope) Range(e ir.Expr) Interval {
	r := s.Bound(e)
	if t := r.intersect(s.eval(linearizeIn(e, s.info))); !t.empty() {
		r = t
	}
	return r
}

// Within proves the index expression x within [0, size-1] in s: from its
// range, else from the guard facts of s (see proveNonneg). r is the range
// as far as it is known, narrowed by what was proven.
func (s *Scope) Within(x ir.Expr, size int64) (r Interval, lowOK, highOK bool) {
	l := linearizeIn(x, s.info)
	iv := s.Bound(x)
	r = iv.intersect(s.eval(l))
	if r.empty() {
		// Two sound bounds of the same value are disjoint only where the
		// access never runs; prove nothing from them.
		r = iv
		if r.empty() {
			r = full
		}
	}
	lowOK = r.Lo >= 0
	if !lowOK {
		lowOK = s.proveNonneg(l)
	}
	highOK = r.Hi <= size-1
	if !highOK {
		if hl, ok := constLinear(0).axpy(-1, l); ok {
			if hl, ok = hl.axpy(1, constLinear(size-1)); ok {
				highOK = s.proveNonneg(hl)
			}
		}
	}
	if lowOK {
		r.Lo = max(r.Lo, 0)
	}
	if highOK {
		r.Hi = min(r.Hi, size-1)
	}
	return r, lowOK, highOK
}

// branch bounds a where's branch e in the branch's scope s: its interval,
// narrowed by the guard facts of s that share a term with it. A fact
// F >= 0 bounds e below by the least value of e - F and above by minus the
// least value of -e - F, which is what bounds where(i > 0, i - 1, 0) below
// by 0 once i is split into i.o * 16 + i.l (the fact i.o*16 + i.l - 1 >= 0
// has two terms, so the guard does not narrow any one variable).
func (s *Scope) branch(e ir.Expr) Interval {
	r := s.Bound(e)
	if len(s.facts) == 0 || s.info.Kind(e) != ir.KindIndex {
		return r
	}
	l := linearizeIn(e, s.info)
	neg, okNeg := l.scale(-1)
	cands := s.sharing(l, -1)
	if len(cands) > maxSingleTries {
		cands = cands[:maxSingleTries]
	}
	for _, i := range cands {
		if !overVariables(s.facts[i]) {
			// A fact about an opaque term (a where, a read) would bound
			// that term in this scope again: only facts over variables,
			// which bounding never recurses into, are used.
			continue
		}
		if d, ok := l.sub(s.facts[i]); ok {
			if lo := s.eval(d).Lo; lo != negInf && lo > r.Lo {
				r.Lo = lo
			}
		}
		if !okNeg {
			continue
		}
		if d, ok := neg.sub(s.facts[i]); ok {
			if lo := s.eval(d).Lo; lo != negInf && lo > math.MinInt64 && -lo < r.Hi {
				r.Hi = -lo
			}
		}
	}
	return r
}

// overVariables reports whether every atom of l is an index variable.
func overVariables(l Linear) bool {
	for _, a := range l.atoms {
		if _, ok := a.(*ir.Index); !ok {
			return false
		}
	}
	return true
}
