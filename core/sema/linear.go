package sema

import (
	"maps"
	"slices"

	"github.com/neoflow/neoflow/core/ir"
)

// linear is the integer linear form c + Σ coef[k]·atom(k). An atom is an
// index variable or an opaque non-linear index term (h/2, h%2, min(a, b),
// i*j, a where, ...) keyed by its printed form, so identical terms cancel.
// A guard fact is a linear form known to be >= 0.
type linear struct {
	c     int64
	coef  map[string]int64
	atoms map[string]ir.Expr // key -> the term, to bound it
}

func constLinear(c int64) linear { return linear{c: c} }

func atomLinear(e ir.Expr) linear {
	k := ir.ExprString(e)
	return linear{coef: map[string]int64{k: 1}, atoms: map[string]ir.Expr{k: e}}
}

func (l linear) isConst() bool { return len(l.coef) == 0 }

// axpy returns l + k·m.
func (l linear) axpy(k int64, m linear) linear {
	r := linear{c: l.c + k*m.c, coef: maps.Clone(l.coef), atoms: maps.Clone(l.atoms)}
	if r.coef == nil {
		r.coef, r.atoms = map[string]int64{}, map[string]ir.Expr{}
	}
	for key, v := range m.coef {
		r.coef[key] += k * v
		r.atoms[key] = m.atoms[key]
		if r.coef[key] == 0 {
			delete(r.coef, key)
			delete(r.atoms, key)
		}
	}
	return r
}

func (l linear) sub(m linear) linear { return l.axpy(-1, m) }

func (l linear) scale(k int64) linear { return constLinear(0).axpy(k, l) }

// linearize writes the index expression e as a linear form, exactly.
func linearize(e ir.Expr) linear {
	switch e := e.(type) {
	case *ir.IntLit:
		return constLinear(e.Value)
	case *ir.Const:
		if !e.IsFloat {
			return constLinear(e.Int)
		}
	case *ir.Unary:
		if e.Op == ir.Neg {
			return linearize(e.X).scale(-1)
		}
	case *ir.Binary:
		switch e.Op {
		case ir.Add:
			return linearize(e.X).axpy(1, linearize(e.Y))
		case ir.Sub:
			return linearize(e.X).axpy(-1, linearize(e.Y))
		case ir.Mul:
			x, y := linearize(e.X), linearize(e.Y)
			if x.isConst() {
				return y.scale(x.c)
			}
			if y.isConst() {
				return x.scale(y.c)
			}
		case ir.Div, ir.Mod:
			// Fold constant operands (C/G with integer constants).
			x, y := linearize(e.X), linearize(e.Y)
			if x.isConst() && y.isConst() && y.c > 0 {
				if e.Op == ir.Div {
					return constLinear(floorDiv(x.c, y.c))
				}
				return constLinear(floorMod(x.c, y.c))
			}
		}
	}
	return atomLinear(e)
}

// eval bounds the linear form in scope s.
func (s *scope) eval(l linear) interval {
	r := point(l.c)
	for _, key := range slices.Sorted(maps.Keys(l.coef)) {
		r = r.add(s.intervalOf(l.atoms[key]).scale(l.coef[key]))
	}
	return r
}

// facts turns a guard condition into facts L >= 0 that hold where the
// condition is true (negate=false) or false (negate=true). Conjunctions
// split into their conjuncts; a disjunction gives nothing (its negation
// gives the negations of its operands); comparisons of two index
// expressions normalize as
//
//	a < b  ->  b - a - 1 >= 0      a <= b  ->  b - a >= 0
//	a > b  ->  a - b - 1 >= 0      a >= b  ->  a - b >= 0
//	a == b ->  a - b >= 0 and b - a >= 0
//
// and a != b gives nothing. Comparisons of values give nothing.
func facts(cond ir.Expr, negate bool) []linear {
	switch e := cond.(type) {
	case *ir.Unary:
		if e.Op == ir.Not {
			return facts(e.X, !negate)
		}
	case *ir.Binary:
		switch {
		case e.Op == ir.And && !negate, e.Op == ir.Or && negate:
			return append(facts(e.X, negate), facts(e.Y, negate)...)
		case e.Op.IsCompare():
			if ir.KindOf(e.X) != ir.KindIndex || ir.KindOf(e.Y) != ir.KindIndex {
				return nil
			}
			op := e.Op
			if negate {
				op = map[ir.BinOp]ir.BinOp{ir.Lt: ir.Ge, ir.Ge: ir.Lt, ir.Le: ir.Gt, ir.Gt: ir.Le, ir.Eq: ir.Ne, ir.Ne: ir.Eq}[op]
			}
			d := linearize(e.X).sub(linearize(e.Y)) // a - b
			switch op {
			case ir.Lt:
				return []linear{d.scale(-1).axpy(1, constLinear(-1))}
			case ir.Le:
				return []linear{d.scale(-1)}
			case ir.Gt:
				return []linear{d.axpy(1, constLinear(-1))}
			case ir.Ge:
				return []linear{d}
			case ir.Eq:
				return []linear{d, d.scale(-1)}
			}
		}
	}
	return nil
}

// guard returns the scope inside a where branch: s plus the facts of cond
// (negated for the else branch), with the interval of every variable or
// atom that a fact mentions alone tightened: a·x + c >= 0 gives
// x >= ceil(-c/a) for a > 0 and x <= floor(c/-a) for a < 0.
func (s *scope) guard(cond ir.Expr, negate bool) *scope {
	fs := facts(cond, negate)
	t := &scope{vars: maps.Clone(s.vars), atoms: maps.Clone(s.atoms), facts: append(slices.Clip(s.facts), fs...), dead: s.dead}
	for _, f := range fs {
		if len(f.coef) == 0 {
			if f.c < 0 {
				t.dead = true
			}
			continue
		}
		if len(f.coef) != 1 {
			continue
		}
		for key, a := range f.coef {
			b := full
			if a > 0 {
				b.lo = -floorDiv(f.c, a) // ceil(-c/a)
			} else {
				b.hi = floorDiv(f.c, -a)
			}
			if x, ok := f.atoms[key].(*ir.Index); ok {
				v, known := t.vars[x.Name]
				if !known {
					continue
				}
				t.vars[x.Name] = v.intersect(b)
				if t.vars[x.Name].empty() {
					t.dead = true
				}
				continue
			}
			if old, ok := t.atoms[key]; ok {
				b = b.intersect(old)
			}
			t.atoms[key] = b
			if t.intervalOf(f.atoms[key]).empty() {
				t.dead = true
			}
		}
	}
	return t
}

// proveNonneg tries to prove l >= 0 in scope s: from the bounds of l
// alone, or from l - F >= 0 for a guard fact F >= 0, or from l - F1 - F2 >= 0
// for two facts. The differences cancel identical atoms, which is what
// proves guarded accesses such as X[p+r-1] under p+r-1 >= 0.
func (s *scope) proveNonneg(l linear) bool {
	if s.eval(l).lo >= 0 {
		return true
	}
	for i, f := range s.facts {
		d := l.sub(f)
		if s.eval(d).lo >= 0 {
			return true
		}
		for _, g := range s.facts[i+1:] {
			if s.eval(d.sub(g)).lo >= 0 {
				return true
			}
		}
	}
	return false
}
