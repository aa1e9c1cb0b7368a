package bounds

import (
	"maps"
	"slices"

	"github.com/neoflow/neoflow/core/ir"
)

// Info caches per-node facts about one statement's expressions, keyed
// by node pointer and shared by every Scope of a proof: kinds and printed
// forms. Without it, asking for the kind of every node of a deep
// expression is quadratic (ir.KindOf recurses).
type Info struct {
	kinds ir.KindMemo
	keys  map[ir.Expr]string
	named bool // Linearize keeps named constants as atoms (LinearizeNamed)
}

// NewInfo is an empty Info; its memos are made on first use.
func NewInfo() *Info { return &Info{} }

// Kind is ir.KindOf(e), memoized per node.
func (c *Info) Kind(e ir.Expr) ir.Kind {
	if c.kinds == nil {
		c.kinds = ir.KindMemo{}
	}
	return c.kinds.Of(e)
}

// key is the printed form of e, which keys atoms (see linear.go): an
// index variable's name, else memoized per node.
func (c *Info) key(e ir.Expr) string {
	if x, ok := e.(*ir.Index); ok {
		return x.Name
	}
	if s, ok := c.keys[e]; ok {
		return s
	}
	s := ir.ExprString(e)
	if c.keys == nil {
		c.keys = map[ir.Expr]string{}
	}
	c.keys[e] = s
	return s
}

// Scope is what is known at a point of a statement: the Interval of each
// index variable, tightened bounds of opaque atoms (see linear.go) and the
// guard facts that hold there. A Scope does not change once built, so the
// intervals of expressions and the scopes of guards under it are memoized:
// bounding an expression costs time linear in its size per Scope.
type Scope struct {
	vars  map[string]Interval
	atoms map[string]Interval
	// atomExprs are the atoms' expressions, by key, for the dead-scope
	// check of Guard.
	atomExprs map[string]ir.Expr
	// facts are the guard facts that tightening did not capture (see
	// guard): those with two or more atoms, or on a variable without a
	// range. Of facts L + c >= 0 with the same L only the one with the
	// least c, which implies the others, is kept; factIndex maps the
	// shape of L (see linear.shape) to its fact.
	facts     []Linear
	factIndex map[string]int
	// dead is set when the guards contradict each other: the code under
	// them never runs.
	dead bool

	info   *Info
	memo   map[ir.Expr]Interval
	guards map[guardKey]*Scope
	// byAtom indexes facts by the atoms they mention, for proveNonneg;
	// built on first use.
	byAtom map[string][]int
	// sized maps each loop variable that runs to a size variable to that
	// size, and sizes holds the size variables (ForSymbolicExtents), for
	// GuardsWithin.
	sized map[string]string
	sizes map[string]bool
}

type guardKey struct {
	cond   ir.Expr
	negate bool
}

func NewScope(vars map[string]Interval) *Scope {
	return NewScopeInfo(vars, NewInfo())
}

func NewScopeInfo(vars map[string]Interval, info *Info) *Scope {
	return &Scope{vars: vars, atoms: map[string]Interval{}, info: info, memo: map[ir.Expr]Interval{}, guards: map[guardKey]*Scope{}}
}

// Bound bounds the integer expression e in scope s. Unknown variables
// and non-index terms are unbounded.
func (s *Scope) Bound(e ir.Expr) Interval {
	if r, ok := s.memo[e]; ok {
		return r
	}
	r := s.rawInterval(e)
	if len(s.atoms) > 0 && mayBeAtom(e) {
		if t, ok := s.atoms[s.info.key(e)]; ok {
			r = r.intersect(t)
		}
	}
	s.memo[e] = r
	return r
}

// mayBeAtom reports whether linearize can make e an opaque atom whose
// bounds a guard may have tightened. Sums and differences are never atoms
// unless their linear form overflows; skipping them only loses precision.
func mayBeAtom(e ir.Expr) bool {
	switch e := e.(type) {
	case *ir.Binary:
		return e.Op != ir.Add && e.Op != ir.Sub
	case *ir.Call, *ir.Where:
		return true
	}
	return false
}

func (s *Scope) rawInterval(e ir.Expr) Interval {
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
			return s.Bound(e.X).neg()
		}
	case *ir.Binary:
		switch e.Op {
		case ir.Add:
			return s.Bound(e.X).add(s.Bound(e.Y))
		case ir.Sub:
			return s.Bound(e.X).sub(s.Bound(e.Y))
		case ir.Mul:
			return s.Bound(e.X).mul(s.Bound(e.Y))
		case ir.Div:
			if k, ok := ConstDivisor(e.Y); ok {
				return s.Bound(e.X).div(k)
			}
		case ir.Mod:
			if k, ok := ConstDivisor(e.Y); ok {
				return s.Bound(e.X).mod(k)
			}
		}
	case *ir.Call:
		switch {
		case e.Fn == ir.FuncAbs && len(e.Args) == 1:
			return s.Bound(e.Args[0]).abs()
		case e.Fn == ir.FuncMin && len(e.Args) == 2:
			a, b := s.Bound(e.Args[0]), s.Bound(e.Args[1])
			return Interval{min(a.Lo, b.Lo), min(a.Hi, b.Hi)}
		case e.Fn == ir.FuncMax && len(e.Args) == 2:
			a, b := s.Bound(e.Args[0]), s.Bound(e.Args[1])
			return Interval{max(a.Lo, b.Lo), max(a.Hi, b.Hi)}
		}
	case *ir.Where:
		r := Interval{posInf, negInf} // empty
		if t := s.Guard(e.Cond, false); !t.dead {
			r = r.hull(t.branch(e.Then))
		}
		if f := s.Guard(e.Cond, true); !f.dead {
			r = r.hull(f.branch(e.Else))
		}
		if r.empty() {
			return full // both branches dead: no information worth keeping
		}
		return r
	}
	return full
}

// Guard returns the scope inside a where branch: s plus the facts of cond
// (negated for the else branch), with the Interval of every variable or
// atom that a fact mentions alone tightened: a·x + c >= 0 gives
// x >= ceil(-c/a) for a > 0 and x <= floor(c/-a) for a < 0.
//
// Whether a tightened atom's Interval became empty is judged with the
// atom's Interval in s (then intersected with the new bounds), never in
// the scope under construction: bounding the atom there would build the
// guard scopes of the wheres inside it again, once per enclosing Scope,
// which is exponential in the nesting depth. The bounds in s are looser,
// so the check finds fewer dead branches, never a live one dead. When cond
// narrows a variable, the atoms outer guards bounded that have no where
// inside are bounded in the new scope (which builds no guard scope): one
// left without values makes the branch dead.
func (s *Scope) Guard(cond ir.Expr, negate bool) *Scope {
	k := guardKey{cond, negate}
	if t, ok := s.guards[k]; ok {
		return t
	}
	fs, ne := factsIn(cond, negate, s.info)
	for _, d := range ne {
		// d != 0 where d >= 0 (or d <= 0) in s: d - 1 >= 0 (or -d - 1 >= 0).
		r := s.eval(d)
		if r.Lo == 0 {
			if f, ok := d.axpy(1, constLinear(-1)); ok {
				fs = append(fs, f)
			}
		} else if r.Hi == 0 {
			if f, ok := constLinear(-1).sub(d); ok {
				fs = append(fs, f)
			}
		}
	}
	t := NewScopeInfo(maps.Clone(s.vars), s.info)
	t.atoms, t.atomExprs, t.dead, t.sized, t.sizes = maps.Clone(s.atoms), maps.Clone(s.atomExprs), s.dead, s.sized, s.sizes
	narrowed := false // a variable's interval
	t.facts, t.factIndex = slices.Clone(s.facts), maps.Clone(s.factIndex)
	for _, f := range fs {
		switch len(f.coef) {
		case 0:
			if f.c < 0 {
				t.dead = true
			}
			continue
		case 1:
		default:
			t.addFact(f)
			continue
		}
		for key, a := range f.coef {
			// |a| and |c| are at most maxLinear < 2^63, so neither the
			// division nor the negation overflows.
			b := full
			if a > 0 {
				b.Lo = -floorDiv(f.c, a) // ceil(-c/a)
			} else {
				b.Hi = floorDiv(f.c, -a)
			}
			if x, ok := f.atoms[key].(*ir.Index); ok {
				v, known := t.vars[x.Name]
				if !known {
					t.addFact(f) // not captured: keep it
					continue
				}
				t.vars[x.Name] = v.intersect(b)
				if t.vars[x.Name].empty() {
					t.dead = true
				}
				narrowed = narrowed || t.vars[x.Name] != v
				continue
			}
			if !mayBeAtom(f.atoms[key]) {
				t.addFact(f) // intervalOf ignores such atoms
				continue
			}
			if old, ok := t.atoms[key]; ok {
				b = b.intersect(old)
			}
			t.atoms[key] = b
			if t.atomExprs == nil {
				t.atomExprs = map[string]ir.Expr{}
			}
			t.atomExprs[key] = f.atoms[key]
			if s.Bound(f.atoms[key]).intersect(b).empty() {
				t.dead = true
			}
		}
	}
	if narrowed && !t.dead {
		// A narrower variable can leave an atom an outer guard bounded
		// without values: where(i % 2 >= 1, where(i <= 0, ...)) never
		// runs its inner branch. Only atoms without a where inside are
		// bounded here, in t: theirs need no guard scope (see above).
		for _, e := range t.atomExprs {
			if !hasWhere(e) && t.Bound(e).empty() {
				t.dead = true
				break
			}
		}
	}
	s.guards[k] = t
	return t
}

// hasWhere reports whether e has a where inside.
func hasWhere(e ir.Expr) bool {
	return ir.Contains(e, func(x ir.Expr) bool { _, ok := x.(*ir.Where); return ok })
}

// addFact records the fact f >= 0 in t, which is under construction.
// Of facts L + c >= 0 with the same L the one with the least c implies the
// others and proves at least as much (l - L - c is largest), so only it is
// kept: a guard repeating a condition thousands of times adds one fact.
func (t *Scope) addFact(f Linear) {
	k := f.shape()
	if i, ok := t.factIndex[k]; ok {
		if f.c < t.facts[i].c {
			t.facts[i] = f
		}
		return
	}
	if t.factIndex == nil {
		t.factIndex = map[string]int{}
	}
	t.factIndex[k] = len(t.facts)
	t.facts = append(t.facts, f)
}

// Limits of proveNonneg's search among the facts.
const (
	maxSingleTries = 512 // facts tried alone
	maxPairFirsts  = 16  // facts tried as the first of a pair
	maxPairSeconds = 16  // second facts tried with each first one
)

// proveNonneg tries to prove l >= 0 in scope s: from the bounds of l
// alone, or from l - F >= 0 for a guard fact F >= 0, or from l - F1 - F2 >= 0
// for two facts. The differences cancel identical atoms, which is what
// proves guarded accesses such as X[p+r-1] under p+r-1 >= 0.
//
// Only facts that share an atom with what is left to prove are tried: a
// fact with no atom in common with l cannot raise the lower bound of
// l - F (its own lower bound is at most 0 wherever the scope is live).
// Facts about a single atom are not tried at all, since guard already
// narrowed that atom's Interval to exactly where they hold. The number of
// tries is capped, so a guard with thousands of conjuncts stays cheap.
func (s *Scope) proveNonneg(l Linear) bool { return s.proveNonnegBy(l, false) }

// proveNonnegBy is proveNonneg, with scaled also from l - c·F >= 0 for the
// c > 1 that cancels a shared atom (WithinSize: 2s - 1 - 2i - j under
// s - 1 - i >= 0 leaves 1 - j). The constant-extent proofs do without it:
// sema infers extents from how far they reach (largestGuarded), which a
// stronger proof would change.
func (s *Scope) proveNonnegBy(l Linear, scaled bool) bool {
	if s.nonneg(l) {
		return true
	}
	cands := s.sharing(l, -1)
	if len(cands) > maxSingleTries {
		cands = cands[:maxSingleTries]
	}
	diffs := make([]Linear, 0, maxPairFirsts)
	firsts := make([]int, 0, maxPairFirsts)
	for _, i := range cands {
		if c := scaleFor(l, s.facts[i]); scaled && c > 1 {
			if d, ok := l.axpy(-c, s.facts[i]); ok && s.nonneg(d) {
				return true
			}
		}
		d, ok := l.sub(s.facts[i])
		if !ok {
			continue
		}
		if s.nonneg(d) {
			return true
		}
		if len(diffs) < maxPairFirsts {
			diffs, firsts = append(diffs, d), append(firsts, i)
		}
	}
	for n, d := range diffs {
		seconds := s.sharing(d, firsts[n])
		if len(seconds) > maxPairSeconds {
			seconds = seconds[:maxPairSeconds]
		}
		for _, j := range seconds {
			if dd, ok := d.sub(s.facts[j]); ok && s.nonneg(dd) {
				return true
			}
		}
	}
	return false
}

// scaleFor is the positive integer c > 1 that makes c·f cancel l's term
// in the first atom (in key order) they share, or 0.
func scaleFor(l, f Linear) int64 {
	for _, key := range slices.Sorted(maps.Keys(f.coef)) {
		a, ok := l.coef[key]
		if !ok {
			continue
		}
		if b := f.coef[key]; a%b == 0 && a/b > 1 {
			return a / b
		}
		return 0
	}
	return 0
}

// nonneg reports whether the bounds of l prove l >= 0. An empty range
// proves nothing: sound bounds are empty only where the code never runs,
// and an empty range is not worth trusting anywhere else.
func (s *Scope) nonneg(l Linear) bool {
	r := s.eval(l)
	return !r.empty() && r.Lo >= 0
}

// sharing lists, in order, the facts other than skip that mention an atom
// of l.
func (s *Scope) sharing(l Linear, skip int) []int {
	if len(s.facts) == 0 || len(l.coef) == 0 {
		return nil
	}
	if s.byAtom == nil {
		s.byAtom = map[string][]int{}
		for i, f := range s.facts {
			for key := range f.coef {
				s.byAtom[key] = append(s.byAtom[key], i)
			}
		}
	}
	var out []int
	for key := range l.coef {
		out = append(out, s.byAtom[key]...)
	}
	slices.Sort(out)
	out = slices.Compact(out)
	if i, found := slices.BinarySearch(out, skip); found {
		out = slices.Delete(out, i, i+1)
	}
	return out
}
