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
	for v, size := range sym {
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
	l := linearizeIn(x, s.info)
	r := s.Range(x)
	lowOK = !r.empty() && r.Lo >= 0 || s.proveNonnegBy(l, true)
	hl, ok := linearizeIn(size, s.info).axpy(-1, l)
	if ok {
		hl, ok = hl.axpy(1, constLinear(-1))
	}
	highOK = ok && s.proveNonnegBy(hl, true)
	return lowOK, highOK
}
