package bounds

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/neoflow/neoflow/core/ir"
)

// Launch guards: an access of a kernel with symbolic extents that the
// facts cannot prove in bounds for every value of the size variables may
// still be in bounds for the values a kernel is launched at. X[i + 2] with
// i over [0, s0) and X of s1 elements is, exactly when s1 - s0 - 2 >= 0.
// Where an index and its dimension are linear in the loop and size
// variables, GuardsWithin derives such conditions on the sizes alone; the
// kernel checks them once per launch, on the host, and a launch that
// breaks one is refused (its caller builds a kernel for that shape).

// A Guard is a condition on size variables: sum of Coef[s]·s + Const >= 0.
type Guard struct {
	Coef  map[string]int64
	Const int64
}

// Holds reports whether g holds at values, the size variables' values by
// name; a size variable values lacks makes it false.
func (g Guard) Holds(values map[string]int64) bool {
	sum := g.Const
	for s, c := range g.Coef {
		v, known := values[s]
		p, fits := checkedMul(c, v)
		if !known || !fits {
			return false
		}
		var ok bool
		if sum, ok = checkedAdd(sum, p); !ok {
			return false
		}
	}
	return sum >= 0
}

// String is g as "2*$s0 - $s1 + 3 >= 0".
func (g Guard) String() string {
	var b strings.Builder
	for _, s := range slices.Sorted(maps.Keys(g.Coef)) {
		c := g.Coef[s]
		switch {
		case b.Len() == 0 && c < 0:
			b.WriteString("-")
		case b.Len() > 0 && c < 0:
			b.WriteString(" - ")
		case b.Len() > 0:
			b.WriteString(" + ")
		}
		if c != 1 && c != -1 {
			fmt.Fprintf(&b, "%d*", max(c, -c))
		}
		b.WriteString(s)
	}
	switch {
	case b.Len() == 0:
		fmt.Fprint(&b, g.Const)
	case g.Const < 0:
		fmt.Fprintf(&b, " - %d", -g.Const)
	case g.Const > 0:
		fmt.Fprintf(&b, " + %d", g.Const)
	}
	return b.String() + " >= 0"
}

// GuardsWithin returns the guards on the size variables under which the
// index x lies in [0, size - 1] at every point of the scope's loops; low
// and high say which of the two bounds are wanted (those WithinSize could
// not prove). Each loop variable is taken over its interval in s, one
// that runs to a size over [its least value, size - 1]; facts of guards
// with several atoms are not used, so a guard may ask more than the
// access needs, never less. ok is false when x or size is not linear in
// the loop and size variables (x / 2, min, an indirect read) or a bound
// fails for every size.
func (s *Scope) GuardsWithin(x, size ir.Expr, low, high bool) (guards []Guard, ok bool) {
	lx, ls := linearizeIn(x, s.info), linearizeIn(size, s.info)
	lo, hi, ok := s.extremes(lx)
	if !ok {
		return nil, false
	}
	sizeTerms, ok := s.sizesOnly(ls)
	if !ok {
		return nil, false
	}
	add := func(g Guard, want bool) bool {
		if !want {
			return true
		}
		if len(g.Coef) == 0 {
			return g.Const >= 0
		}
		guards = append(guards, g)
		return true
	}
	upper, ok := sizeTerms.minus(hi, 1) // size - 1 - max(x) >= 0
	ok = ok && add(lo, low) && add(upper, high)
	return guards, ok
}

// extremes bounds the linear form l over the scope's loop variables: its
// least and greatest values as guards' sums over the size variables.
func (s *Scope) extremes(l Linear) (lo, hi Guard, ok bool) {
	lo, hi = Guard{Coef: map[string]int64{}, Const: l.c}, Guard{Coef: map[string]int64{}, Const: l.c}
	for k, c := range l.coef {
		v, isIndex := l.atoms[k].(*ir.Index)
		if !isIndex {
			return lo, hi, false
		}
		if s.sizes[v.Name] {
			if !lo.addTerm(c, v.Name, 0) || !hi.addTerm(c, v.Name, 0) {
				return lo, hi, false
			}
			continue
		}
		r, known := s.vars[v.Name]
		if !known || r.empty() {
			return lo, hi, false
		}
		least, most := Guard{Const: r.Lo}, Guard{Const: r.Hi}
		if sz := s.sized[v.Name]; sz != "" && r.Hi >= MaxSize-1 {
			most = Guard{Coef: map[string]int64{sz: 1}, Const: -1}
		}
		if c < 0 {
			least, most = most, least
		}
		if !lo.addScaled(c, least) || !hi.addScaled(c, most) {
			return lo, hi, false
		}
	}
	return lo, hi, true
}

// sizesOnly is l as a guard's sum, when its atoms are all size variables.
func (s *Scope) sizesOnly(l Linear) (Guard, bool) {
	g := Guard{Coef: map[string]int64{}, Const: l.c}
	for k, c := range l.coef {
		v, isIndex := l.atoms[k].(*ir.Index)
		if !isIndex || !s.sizes[v.Name] || !g.addTerm(c, v.Name, 0) {
			return g, false
		}
	}
	return g, true
}

// addTerm adds c·s + k to g, checked.
func (g *Guard) addTerm(c int64, s string, k int64) bool {
	n, ok := checkedAdd(g.Coef[s], c)
	if !ok || n > maxLinear || n < -maxLinear {
		return false
	}
	if n == 0 {
		delete(g.Coef, s)
	} else {
		g.Coef[s] = n
	}
	g.Const, ok = checkedAdd(g.Const, k)
	return ok
}

// addScaled adds c·h to g, checked.
func (g *Guard) addScaled(c int64, h Guard) bool {
	for s, k := range h.Coef {
		p, ok := checkedMul(c, k)
		if !ok || !g.addTerm(p, s, 0) {
			return false
		}
	}
	p, ok := checkedMul(c, h.Const)
	if !ok {
		return false
	}
	g.Const, ok = checkedAdd(g.Const, p)
	return ok
}

// minus is g - h - k, checked.
func (g Guard) minus(h Guard, k int64) (Guard, bool) {
	out := Guard{Coef: maps.Clone(g.Coef), Const: g.Const}
	if out.Coef == nil {
		out.Coef = map[string]int64{}
	}
	ok := out.addScaled(-1, h) && out.addTerm(0, "", -k)
	delete(out.Coef, "")
	return out, ok
}
