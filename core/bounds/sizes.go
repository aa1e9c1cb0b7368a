package bounds

import (
	"github.com/neoflow/neoflow/core/ir"
)

// Symbolic extents: a statement whose extents are not all known when its
// kernel is built (one kernel for every batch size) is proven in bounds
// for every value of its size variables at once. A size variable is an
// index variable of the scope that ranges over [least, MaxSize]; a loop
// variable whose extent is a size variable s ranges over [0, MaxSize), and
// the scope holds the fact s - 1 - v >= 0, which proveNonneg combines
// with the guards' facts. A tensor's dimension is then an index
// expression over size variables (s, s + 2, 2 * s), and WithinSize proves
// an index below it by proving size - 1 - index >= 0 from the facts.

// MaxSize bounds every size variable: extents stay below 2^31, so index
// arithmetic over them keeps the margin to int64's range that the
// overflow check of the bounds proof asks for.
const MaxSize = int64(1)<<31 - 1

// ForSymbolicExtents is the scope where each variable v ranges over
// [0, E): E is ext[v], a constant, or sym[v], the name of a size variable
// whose least value is least[sym[v]] (1 when least does not say). Every
// size variable is a variable of the scope, over [least, MaxSize].
func ForSymbolicExtents(ext map[string]int64, sym map[string]string, least map[string]int64) *Scope {
	vars := make(map[string]Interval, len(ext)+len(sym)+len(least))
	for v, n := range ext {
		vars[v] = Interval{0, n - 1}
	}
	for s, lo := range least {
		vars[s] = Interval{lo, MaxSize}
	}
	s := NewScope(vars)
	s.sized, s.sizes = sym, map[string]bool{}
	for size := range least {
		s.sizes[size] = true
	}
	for v, size := range sym {
		s.sizes[size] = true
		if _, ok := vars[size]; !ok {
			s.vars[size] = Interval{1, MaxSize} // an extent is at least 1
		}
		s.vars[v] = Interval{0, MaxSize - 1}
		s.addFact(linearizeIn(&ir.Binary{Op: ir.Sub, X: &ir.Binary{Op: ir.Sub, X: &ir.Index{Name: size}, Y: &ir.IntLit{Value: 1}},
			Y: &ir.Index{Name: v}}, s.info))
	}
	return s
}

// WithinSize proves the index expression x within [0, size-1] in s for
// every value of the size variables, where size is an index expression
// over them (a constant size is Within's case).
func (s *Scope) WithinSize(x, size ir.Expr) (lowOK, highOK bool) {
	if s.dead {
		return true, true
	}
	return s.nonnegForSizes(x), s.belowSize(x, size)
}

// nonnegForSizes proves x >= 0 for every value of the size variables: by
// its range, through min, max and where by their arguments, else by the
// facts.
func (s *Scope) nonnegForSizes(x ir.Expr) bool {
	if r := s.Range(x); !r.empty() && r.Lo >= 0 {
		return true
	}
	if a, b, fn, ok := minMax(x); ok {
		if fn == ir.FuncMax {
			return s.nonnegForSizes(a) || s.nonnegForSizes(b)
		}
		return s.nonnegForSizes(a) && s.nonnegForSizes(b)
	}
	if w, ok := x.(*ir.Where); ok && s.nonnegForSizes(w.Then) && s.nonnegForSizes(w.Else) {
		return true
	}
	return s.proveNonnegBy(linearizeIn(x, s.info), true)
}

// belowSize proves x <= size - 1 for every value of the size variables:
// through min, max and where by their arguments, else by the facts.
func (s *Scope) belowSize(x, size ir.Expr) bool {
	if a, b, fn, ok := minMax(x); ok {
		if fn == ir.FuncMin {
			return s.belowSize(a, size) || s.belowSize(b, size)
		}
		return s.belowSize(a, size) && s.belowSize(b, size)
	}
	if w, ok := x.(*ir.Where); ok && s.belowSize(w.Then, size) && s.belowSize(w.Else, size) {
		return true
	}
	hl, ok := linearizeIn(size, s.info).axpy(-1, linearizeIn(x, s.info))
	if ok {
		hl, ok = hl.axpy(1, constLinear(-1))
	}
	return ok && s.proveNonnegBy(hl, true)
}

// minMax splits min(a, b) and max(a, b).
func minMax(x ir.Expr) (a, b ir.Expr, fn ir.Func, ok bool) {
	c, isCall := x.(*ir.Call)
	if !isCall || len(c.Args) != 2 || c.Fn != ir.FuncMin && c.Fn != ir.FuncMax {
		return nil, nil, 0, false
	}
	return c.Args[0], c.Args[1], c.Fn, true
}
