package bounds

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/neoflow/neoflow/core/ir"
)

// Linear is the integer linear form c + Σ coef[k]·atom(k) of an index
// expression: the compiler's one linear form (Linearize). The prover
// bounds it, a guard fact is one known to be >= 0; fuse-split reads a
// condition's cut point from it, the lane choice an access's stride, and
// autodiff the rows of its index systems. An atom is an index variable
// or an opaque non-linear index term (h/2, h%2, min(a, b), i*j, a where,
// ...) keyed by its printed form, so identical terms cancel.
//
// The constant and every coefficient stay within ±maxLinear: arithmetic on
// linear forms is checked and reports failure instead of wrapping around,
// and Linearize keeps a term whose form would not fit as an atom.
type Linear struct {
	c     int64
	coef  map[string]int64
	atoms map[string]ir.Expr // key -> the term, to bound it
}

// maxLinear bounds the numbers of a linear form. It is small enough that
// negating or dividing them never overflows.
const maxLinear = int64(1) << 62

func constLinear(c int64) Linear { return Linear{c: c} }

func atomLinear(e ir.Expr, info *Info) Linear {
	k := info.key(e)
	return Linear{coef: map[string]int64{k: 1}, atoms: map[string]ir.Expr{k: e}}
}

func (l Linear) isConst() bool { return len(l.coef) == 0 }

// shape identifies the non-constant part of l: its atoms and coefficients.
func (l Linear) shape() string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(l.coef)) {
		fmt.Fprintf(&b, "%d*%s\x00", l.coef[k], k)
	}
	return b.String()
}

// checkedMul is a·b when it lies within ±maxLinear.
func checkedMul(a, b int64) (int64, bool) {
	p := end{v: a}.mul(end{v: b})
	return p.v, p.inf == 0 && p.v >= -maxLinear && p.v <= maxLinear
}

// checkedAdd is a+b when it lies within ±maxLinear; a and b must already.
func checkedAdd(a, b int64) (int64, bool) {
	s := a + b // |a|, |b| <= 2^62: no wraparound
	return s, s >= -maxLinear && s <= maxLinear
}

// axpy returns l + k·m, or false when a number would leave ±maxLinear.
func (l Linear) axpy(k int64, m Linear) (Linear, bool) {
	km, ok := checkedMul(k, m.c)
	if !ok {
		return Linear{}, false
	}
	c, ok := checkedAdd(l.c, km)
	if !ok {
		return Linear{}, false
	}
	r := Linear{c: c, coef: maps.Clone(l.coef), atoms: maps.Clone(l.atoms)}
	if r.coef == nil {
		r.coef, r.atoms = map[string]int64{}, map[string]ir.Expr{}
	}
	for key, v := range m.coef {
		kv, ok := checkedMul(k, v)
		if !ok {
			return Linear{}, false
		}
		sum, ok := checkedAdd(r.coef[key], kv)
		if !ok {
			return Linear{}, false
		}
		r.coef[key] = sum
		r.atoms[key] = m.atoms[key]
		if sum == 0 {
			delete(r.coef, key)
			delete(r.atoms, key)
		}
	}
	return r, true
}

func (l Linear) sub(m Linear) (Linear, bool) { return l.axpy(-1, m) }

func (l Linear) scale(k int64) (Linear, bool) { return constLinear(0).axpy(k, l) }

// Linearize writes the index expression e as a linear form, exactly:
// sums, differences, negations and products by a constant distribute;
// literals, integer constants and their quotients and remainders fold;
// every other term is an atom.
func Linearize(e ir.Expr) Linear { return linearizeIn(e, NewInfo()) }

// LinearizeNamed is Linearize with named constants kept as atoms, so that
// a form rebuilt from its terms prints them by name.
func LinearizeNamed(e ir.Expr) Linear {
	info := NewInfo()
	info.named = true
	return linearizeIn(e, info)
}

// Const is the form's constant term.
func (l Linear) Const() int64 { return l.c }

// IsConst reports whether the form has no atom.
func (l Linear) IsConst() bool { return l.isConst() }

// Term is one atom of a linear form with its coefficient.
type Term struct {
	Atom ir.Expr
	Coef int64
}

// Terms lists the form's atoms with their (nonzero) coefficients, in the
// order of their printed forms.
func (l Linear) Terms() []Term {
	out := make([]Term, 0, len(l.coef))
	for _, k := range slices.Sorted(maps.Keys(l.coef)) {
		out = append(out, Term{Atom: l.atoms[k], Coef: l.coef[k]})
	}
	return out
}

// Coef is the coefficient of index variable v (0 when v is not an atom),
// and whether v occurs in no other atom (v/2, i*v, ...): then the form
// is Coef·v plus terms without v.
func (l Linear) Coef(v string) (int64, bool) {
	var c int64
	alone := true
	for k, a := range l.atoms {
		if x, ok := a.(*ir.Index); ok && x.Name == v {
			c = l.coef[k]
			continue
		}
		ir.Walk(a, func(e ir.Expr) bool {
			if x, ok := e.(*ir.Index); ok && x.Name == v {
				alone = false
			}
			return alone
		})
	}
	return c, alone
}

// linearizeIn is Linearize with the printed forms memoized in info. It
// adds the terms of e into one form in place; on an overflow it writes
// the form again the slow way (linearizeSlow), which keeps the overflowing
// term as an atom.
func linearizeIn(e ir.Expr, info *Info) Linear {
	var l Linear
	if l.add(1, e, info) {
		return l
	}
	return linearizeSlow(e, info)
}

// add adds k·e to l in place, making the same decisions as linearizeSlow;
// false when a number would leave ±maxLinear (l is then unusable).
func (l *Linear) add(k int64, e ir.Expr, info *Info) bool {
	switch e := e.(type) {
	case *ir.IntLit:
		return e.Value >= -maxLinear && e.Value <= maxLinear && l.addConst(k, e.Value)
	case *ir.Const:
		if !e.IsFloat && !info.named {
			return e.Int >= -maxLinear && e.Int <= maxLinear && l.addConst(k, e.Int)
		}
	case *ir.Unary:
		if e.Op == ir.Neg {
			return l.add(-k, e.X, info)
		}
	case *ir.Binary:
		switch e.Op {
		case ir.Add:
			return l.add(k, e.X, info) && l.add(k, e.Y, info)
		case ir.Sub:
			return l.add(k, e.X, info) && l.add(-k, e.Y, info)
		case ir.Mul:
			return l.addProduct(k, e, info)
		case ir.Div, ir.Mod:
			x, y, ok := operands(e, info)
			if !ok {
				return false
			}
			if x.isConst() && y.isConst() && y.c > 0 {
				if e.Op == ir.Div {
					return l.addConst(k, floorDiv(x.c, y.c))
				}
				return l.addConst(k, floorMod(x.c, y.c))
			}
		}
	}
	return l.addAtom(k, e, info)
}

// addProduct adds k·e, a product: scaled when a factor is constant, else
// an atom.
func (l *Linear) addProduct(k int64, e *ir.Binary, info *Info) bool {
	if c, ok := literal(e.Y, info); ok { // X * 2, the common form: no form of its own for X
		kc, ok := checkedMul(k, c)
		return ok && l.add(kc, e.X, info)
	}
	x, y, ok := operands(e, info)
	if !ok {
		return false
	}
	switch {
	case x.isConst():
		kc, ok := checkedMul(k, x.c)
		return ok && l.addLinear(kc, y)
	case y.isConst():
		kc, ok := checkedMul(k, y.c)
		return ok && l.addLinear(kc, x)
	}
	return l.addAtom(k, e, info)
}

// operands are the forms of a binary expression's operands.
func operands(e *ir.Binary, info *Info) (x, y Linear, ok bool) {
	ok = x.add(1, e.X, info) && y.add(1, e.Y, info)
	return x, y, ok
}

// literal is the value of an integer literal (or, unless info keeps them,
// an integer named constant) within ±maxLinear.
func literal(e ir.Expr, info *Info) (int64, bool) {
	var v int64
	switch e := e.(type) {
	case *ir.IntLit:
		v = e.Value
	case *ir.Const:
		if e.IsFloat || info.named {
			return 0, false
		}
		v = e.Int
	default:
		return 0, false
	}
	return v, v >= -maxLinear && v <= maxLinear
}

// addConst adds k·v to l's constant.
func (l *Linear) addConst(k, v int64) bool {
	kv, ok := checkedMul(k, v)
	if !ok {
		return false
	}
	l.c, ok = checkedAdd(l.c, kv)
	return ok
}

// addAtom adds k·e, e an atom.
func (l *Linear) addAtom(k int64, e ir.Expr, info *Info) bool {
	return l.addTerm(k, info.key(e), e)
}

// addTerm adds k·atom, keyed key.
func (l *Linear) addTerm(k int64, key string, atom ir.Expr) bool {
	if l.coef == nil {
		l.coef, l.atoms = map[string]int64{}, map[string]ir.Expr{}
	}
	sum, ok := checkedAdd(l.coef[key], k)
	if !ok {
		return false
	}
	if sum == 0 {
		delete(l.coef, key)
		delete(l.atoms, key)
		return true
	}
	l.coef[key], l.atoms[key] = sum, atom
	return true
}

// addLinear adds k·m.
func (l *Linear) addLinear(k int64, m Linear) bool {
	if !l.addConst(k, m.c) {
		return false
	}
	for key, v := range m.coef {
		kv, ok := checkedMul(k, v)
		if !ok || !l.addTerm(kv, key, m.atoms[key]) {
			return false
		}
	}
	return true
}

// linearizeSlow is Linearize built bottom-up, a form per node: a term
// whose form would not fit ±maxLinear stays an atom.
func linearizeSlow(e ir.Expr, info *Info) Linear {
	var r Linear
	ok := false
	switch e := e.(type) {
	case *ir.IntLit:
		r, ok = constLinear(e.Value), e.Value >= -maxLinear && e.Value <= maxLinear
	case *ir.Const:
		if !e.IsFloat && !info.named {
			r, ok = constLinear(e.Int), e.Int >= -maxLinear && e.Int <= maxLinear
		}
	case *ir.Unary:
		if e.Op == ir.Neg {
			r, ok = linearizeSlow(e.X, info).scale(-1)
		}
	case *ir.Binary:
		switch e.Op {
		case ir.Add:
			r, ok = linearizeSlow(e.X, info).axpy(1, linearizeSlow(e.Y, info))
		case ir.Sub:
			r, ok = linearizeSlow(e.X, info).axpy(-1, linearizeSlow(e.Y, info))
		case ir.Mul:
			x, y := linearizeSlow(e.X, info), linearizeSlow(e.Y, info)
			switch {
			case x.isConst():
				r, ok = y.scale(x.c)
			case y.isConst():
				r, ok = x.scale(y.c)
			}
		case ir.Div, ir.Mod:
			// Fold constant operands (C/G with integer constants).
			x, y := linearizeSlow(e.X, info), linearizeSlow(e.Y, info)
			if x.isConst() && y.isConst() && y.c > 0 {
				if e.Op == ir.Div {
					r, ok = constLinear(floorDiv(x.c, y.c)), true
				} else {
					r, ok = constLinear(floorMod(x.c, y.c)), true
				}
			}
		}
	}
	if !ok {
		return atomLinear(e, info)
	}
	return r
}

// eval bounds the linear form in scope s.
func (s *Scope) eval(l Linear) Interval {
	r := point(l.c)
	for _, key := range slices.Sorted(maps.Keys(l.coef)) {
		r = r.add(s.Bound(l.atoms[key]).scale(l.coef[key]))
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
// and a != b gives no fact by itself (Guard narrows the ends of a - b's
// range with it). Comparisons of values give nothing, and so
// does a comparison whose normalized form would not fit (see Linear): a
// missing fact only makes the proof weaker.
func facts(cond ir.Expr, negate bool) []Linear {
	fs, _ := factsIn(cond, negate, NewInfo())
	return fs
}

var negatedCompare = map[ir.BinOp]ir.BinOp{ir.Lt: ir.Ge, ir.Ge: ir.Lt, ir.Le: ir.Gt, ir.Gt: ir.Le, ir.Eq: ir.Ne, ir.Ne: ir.Eq}

// factsIn is facts with the printed forms memoized in info. Its second
// result lists the differences a - b of the comparisons a != b,
// which Guard turns into facts where the difference cannot be negative (or
// positive): a - b >= 1 (or b - a >= 1).
func factsIn(cond ir.Expr, negate bool, info *Info) (out, ne []Linear) {
	var rec func(cond ir.Expr, negate bool)
	rec = func(cond ir.Expr, negate bool) {
		switch e := cond.(type) {
		case *ir.Unary:
			if e.Op == ir.Not {
				rec(e.X, !negate)
			}
		case *ir.Binary:
			switch {
			case e.Op == ir.And && !negate, e.Op == ir.Or && negate:
				rec(e.X, negate)
				rec(e.Y, negate)
			case e.Op.IsCompare():
				if info.Kind(e.X) != ir.KindIndex || info.Kind(e.Y) != ir.KindIndex {
					return
				}
				op := e.Op
				if negate {
					op = negatedCompare[op]
				}
				d, ok := linearizeIn(e.X, info).sub(linearizeIn(e.Y, info)) // a - b
				if !ok {
					return
				}
				var fs []Linear
				switch op {
				case ir.Lt:
					if f, ok := constLinear(-1).sub(d); ok {
						fs = append(fs, f)
					}
				case ir.Le:
					if f, ok := d.scale(-1); ok {
						fs = append(fs, f)
					}
				case ir.Gt:
					if f, ok := d.axpy(1, constLinear(-1)); ok {
						fs = append(fs, f)
					}
				case ir.Ge:
					fs = append(fs, d)
				case ir.Eq:
					if f, ok := d.scale(-1); ok {
						fs = append(fs, d, f)
					}
				case ir.Ne:
					ne = append(ne, d)
				}
				out = append(out, fs...)
			}
		}
	}
	rec(cond, negate)
	return out, ne
}
