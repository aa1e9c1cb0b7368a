package sema

import (
	"github.com/neoflow/neoflow/core/bounds"
	"github.com/neoflow/neoflow/core/ir"
)

// guardedExtents bounds, to a fixed point, the variables that direct and
// derived constraints left unknown by the accesses under a where, as
// Tensor Comprehensions does: an index expression with exactly one unknown
// variable u gives the largest n such that, with u in [0, n-1] and the
// other variables in their ranges, the expression stays inside its
// dimension wherever the enclosing guards let the access run (proven as
// the bounds proof does, bounds.Scope.Within under bounds.Scope.Guard). Each round every variable takes
// the smallest of its bounds, and the derived constraints apply again
// after it. An access that its guards keep in bounds for every n bounds
// nothing: A[i] in where(i < 4, A[i], B[i - 4]) says nothing about i,
// while B[i - 4] under i >= 4 gives 4 + B's size (the concatenation).
//
// When no round bounds a variable that some guarded access indexes plainly
// (i in where(k >= i, U[i, k], 0.0), which the guard keeps below k's
// extent for every n), the variable takes the extent of the dimension it
// indexes (the smallest, if several), as Tensor Comprehensions does, and
// the rounds go on.
func guardedExtents(op *ir.Op, refs []accessRef, shapes map[string][]int64, ext map[string]int64) error {
	info := bounds.NewInfo()
	for {
		derived := map[string]int64{}
		for _, a := range refs {
			if len(a.guards) == 0 {
				continue
			}
			for d, x := range a.acc.Indices {
				u, ok := soleUnknown(x, ext)
				if !ok || ir.IsIndirect(x) || a.unguardedBy(x) {
					continue // unguarded: the direct and derived constraints decided
				}
				n := largestGuarded(x, u, a.guards, ext, shapes[a.acc.Tensor][d], info)
				if n == 0 {
					continue
				}
				if old, ok := derived[u]; !ok || n < old {
					derived[u] = n
				}
			}
		}
		if len(derived) == 0 {
			derived = plainGuarded(refs, shapes, ext)
		}
		if len(derived) == 0 {
			return nil
		}
		for u, n := range derived {
			ext[u] = n
		}
		if err := derivedExtents(op, refs, shapes, ext); err != nil {
			return err
		}
	}
}

// plainGuarded gives each variable of unknown extent that indexes a
// dimension plainly in a guarded access the smallest such dimension's
// extent.
func plainGuarded(refs []accessRef, shapes map[string][]int64, ext map[string]int64) map[string]int64 {
	out := map[string]int64{}
	for _, a := range refs {
		if len(a.guards) == 0 {
			continue
		}
		for d, x := range a.acc.Indices {
			v, ok := x.(*ir.Index)
			if !ok {
				continue
			}
			if _, known := ext[v.Name]; known {
				continue
			}
			if n, seen := out[v.Name]; !seen || shapes[a.acc.Tensor][d] < n {
				out[v.Name] = shapes[a.acc.Tensor][d]
			}
		}
	}
	return out
}

// largestGuarded is the largest n >= 1 for which x, under the guards,
// stays within [0, size-1] with u in [0, n-1] (largestFitting); 0 when
// any n up to maxExtent fits (no bound) or even
// n = 1 does not (the guards do not keep it in bounds; the bounds proof
// reports such an access).
func largestGuarded(x ir.Expr, u string, guards []guardCond, ext map[string]int64, size int64, info *bounds.Info) int64 {
	fits := func(n int64) bool {
		vars := map[string]bounds.Interval{u: {Lo: 0, Hi: n - 1}}
		for v, e := range ext {
			vars[v] = bounds.Interval{Lo: 0, Hi: e - 1}
		}
		s := bounds.NewScopeInfo(vars, info)
		for _, g := range guards {
			s = s.Guard(g.cond, g.negate)
		}
		if s.Dead() {
			return true
		}
		_, low, high := s.Within(x, size) // as the bounds proof will: ranges, then the guards' facts
		return low && high
	}
	if !fits(1) {
		return 0
	}
	return largestFitting(fits)
}
