package loops

import (
	"github.com/neoflow/neoflow/core/bounds"
	"github.com/neoflow/neoflow/core/ir"
)

// span is an interval of index values, the core's one interval type.
type span = bounds.Interval

// spanLimit keeps the code that uses a span far from overflow; beyond it
// a range counts as unknown. Sums of two values below it fit in int64,
// and sema allows tensors of up to 2^62 elements, so every extent of a
// valid spec is below it.
const spanLimit = 1 << 61

// indexSpan bounds an index expression whose variables range over
// [0, ext[name]); ok is false when no finite bound is known. It asks the
// prover that sema proves accesses with (core/bounds), so what sema proved
// survives splitting an index: i - i is 0, a where's condition bounds its
// branches (where(i > 0, i - 1, 0) and its split forms such as
// where(i.o * 16 + i.l > 0, ...)), a never-taken branch adds nothing. The
// bound may be wider than the truth, never narrower.
func indexSpan(e ir.Expr, ext map[string]int64) (span, bool) {
	r := bounds.ForExtents(ext).Range(e)
	if r.Lo <= -spanLimit || r.Hi >= spanLimit || r.Lo > r.Hi {
		return span{}, false
	}
	return r, true
}

// IndexRange bounds an index expression whose variables range over
// [0, ext[name]): every value lies in [lo, hi]. ok is false when no bound
// is known. Backends use it to prove divisions non-negative and to size
// staged windows, as the lowering does (indexSpan).
func IndexRange(e ir.Expr, ext map[string]int64) (lo, hi int64, ok bool) {
	s, ok := indexSpan(e, ext)
	return s.Lo, s.Hi, ok
}

// IndexWithin reports whether index expression e provably lies in [0, n)
// for every value of its variables in [0, ext[name]), by the bounds of e
// or the facts of the wheres inside it.
func IndexWithin(e ir.Expr, n int64, ext map[string]int64) bool {
	_, low, high := bounds.ForExtents(ext).Within(e, n)
	return low && high
}
