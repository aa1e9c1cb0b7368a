package sema

import (
	"fmt"
	"slices"
	"strings"

	"github.com/pkg/errors"

	"github.com/neoflow/neoflow/core/bounds"
	"github.com/neoflow/neoflow/core/ir"
)

// maxExtent caps the search for a derived extent: a constraint that still
// holds at this extent does not bound its variable at all (as for h%2).
const maxExtent = int64(1) << 40

// direct records where a direct constraint on a variable came from.
type direct struct {
	tensor string
	dim    int
	size   int64
}

// stmtVars lists a statement's index variables: the left-hand side in order,
// then the reduction variables in order of first appearance on the right.
func stmtVars(s *ir.Stmt) []string {
	var out []string
	seen := map[string]bool{}
	for _, x := range s.Indices {
		seen[x.Name] = true
		out = append(out, x.Name)
	}
	for _, v := range varNames(s.RHS) {
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}

// inferExtents computes the extent of every index variable of statement s,
// given the shapes of the tensors it reads and the user's sizes. See the
// package documentation for the algorithm.
func inferExtents(op *ir.Op, s *ir.Stmt, shapes map[string][]int64, sizes map[string]int64) (map[string]int64, error) {
	ext := map[string]int64{}
	for _, v := range stmtVars(s) {
		if n, ok := sizes[v]; ok {
			ext[v] = n
		}
	}
	refs := accesses(s.RHS)

	// Direct constraints: a plain variable indexing a dimension.
	if err := directExtents(op, refs, shapes, sizes, ext); err != nil {
		return nil, err
	}

	// Derived constraints, to a fixed point: an index expression with one
	// variable of unknown extent bounds it.
	if err := derivedExtents(op, refs, shapes, ext); err != nil {
		return nil, err
	}

	// Guarded constraints, for the variables still unknown.
	if err := guardedExtents(op, refs, shapes, ext); err != nil {
		return nil, err
	}

	if err := unknownExtents(op, s, refs, ext); err != nil {
		return nil, err
	}
	return ext, nil
}

// directExtents records in ext the extent of each variable that indexes a
// dimension plainly (unguarded), checking it against sizes and against
// the other dimensions it indexes.
func directExtents(op *ir.Op, refs []accessRef, shapes map[string][]int64, sizes map[string]int64, ext map[string]int64) error {
	directs := map[string]direct{}
	for _, a := range refs {
		for d, x := range a.acc.Indices {
			v, ok := x.(*ir.Index)
			if !ok || !a.unguardedBy(x) {
				continue
			}
			here := direct{a.acc.Tensor, d, shapes[a.acc.Tensor][d]}
			if n, ok := sizes[v.Name]; ok {
				// An explicit size may read a prefix of a dimension, never past it.
				if n > here.size {
					return op.Errorf(x.At(), "inconsistent ranges for index %s: sizes gives %d but %s dim %d has only %d",
						v.Name, n, here.tensor, here.dim, here.size)
				}
				continue
			}
			if first, ok := directs[v.Name]; ok {
				if first.size != here.size {
					return op.Errorf(x.At(), "inconsistent ranges for index %s: %s dim %d gives %d but %s dim %d gives %d "+
						"(to read only the first %d, pass sizes={'%s': %d})",
						v.Name, first.tensor, first.dim, first.size, here.tensor, here.dim, here.size,
						min(first.size, here.size), v.Name, min(first.size, here.size))
				}
				continue
			}
			directs[v.Name] = here
			ext[v.Name] = here.size
		}
	}
	return nil
}

// derivedExtents bounds, to a fixed point, each variable of unknown extent
// that is the only one in an unguarded composite index expression, and
// records the smallest such bound in ext.
func derivedExtents(op *ir.Op, refs []accessRef, shapes map[string][]int64, ext map[string]int64) error {
	for {
		derived := map[string]int64{}
		for _, a := range refs {
			for d, x := range a.acc.Indices {
				if _, ok := x.(*ir.Index); ok || ir.IsIndirect(x) || !a.unguardedBy(x) {
					continue
				}
				u, ok := soleUnknown(x, ext)
				if !ok {
					continue
				}
				size := shapes[a.acc.Tensor][d]
				n, err := largestExtent(x, u, ext, size)
				if err != nil {
					return op.Errorf(a.acc.Pos, "access %s can never be in bounds: dimension %d index %s %v, but %s has size %d there",
						ir.ExprString(a.acc), d, ir.ExprString(x), err, a.acc.Tensor, size)
				}
				if n == 0 {
					continue // no bound
				}
				if old, ok := derived[u]; !ok || n < old {
					derived[u] = n
				}
			}
		}
		if len(derived) == 0 {
			break
		}
		for u, n := range derived {
			ext[u] = n
		}
	}
	return nil
}

// soleUnknown is the one variable of x whose extent ext does not know;
// false when x has none or several.
func soleUnknown(x ir.Expr, ext map[string]int64) (string, bool) {
	u, n := "", 0
	for _, v := range varNames(x) {
		if _, ok := ext[v]; !ok {
			u, n = v, n+1
		}
	}
	return u, n == 1
}

// unknownExtents reports the first variable of s whose extent is still
// unknown, and why; nil when every extent is known.
func unknownExtents(op *ir.Op, s *ir.Stmt, refs []accessRef, ext map[string]int64) error {
	var unknown []string
	for _, v := range stmtVars(s) {
		if _, ok := ext[v]; !ok {
			unknown = append(unknown, v)
		}
	}
	if len(unknown) > 0 {
		v := unknown[0]
		if d, via, ok := ir.ScatterTarget(s, v); ok {
			return op.Errorf(via.Pos, "cannot infer the size of dimension %d of %s, which the op writes through %s (a scatter): pass it, e.g. out_shapes={'%s': (...)}",
				d, s.Tensor, ir.ExprString(via), s.Tensor)
		}
		why := "it appears only in composite accesses, or in guarded ones whose guards do not bound it, and indexes no dimension plainly"
		if !inAccess(v, refs) {
			why = "it appears in no tensor access on the right-hand side"
		}
		also := ""
		switch rest := unknown[1:]; len(rest) {
		case 0:
		case 1:
			also = fmt.Sprintf(" (%s is unknown too)", rest[0])
		default:
			also = fmt.Sprintf(" (%s are unknown too)", strings.Join(rest, ", "))
		}
		return op.Errorf(firstUse(s, v), "cannot infer the range of index %s (%s); pass its size explicitly, e.g. sizes={'%s': ...}%s",
			v, why, v, also)
	}
	return nil
}

// largestExtent returns the largest n >= 1 such that x stays within
// [0, size-1] when u ranges over [0, n-1] and the other variables over
// their extents, by binary search (interval bounds grow with n). It returns
// 0 when no n up to maxExtent violates the bounds (x does not bound u), and
// an error describing the range of x when even n = 1 does.
func largestExtent(x ir.Expr, u string, ext map[string]int64, size int64) (int64, error) {
	vars := map[string]bounds.Interval{}
	for v, n := range ext {
		vars[v] = bounds.Interval{Lo: 0, Hi: n - 1}
	}
	info := bounds.NewInfo()
	at := func(n int64) bounds.Interval {
		vars[u] = bounds.Interval{Lo: 0, Hi: n - 1}
		return bounds.NewScopeInfo(vars, info).Bound(x) // scopes memoize: a fresh one per n
	}
	fits := func(n int64) bool {
		r := at(n)
		return r.Lo >= 0 && r.Hi <= size-1
	}
	if !fits(1) {
		return 0, errors.Errorf("ranges over %v even when %s = 0", at(1), u)
	}
	return largestFitting(fits), nil
}

// largestFitting is the largest n in [1, maxExtent) with fits(n), for a
// fits that holds at 1 and, once false, stays false as n grows (interval
// bounds only grow with n), by binary search; 0 when fits(maxExtent)
// holds too (no bound).
func largestFitting(fits func(int64) bool) int64 {
	if fits(maxExtent) {
		return 0
	}
	lo, hi := int64(1), maxExtent // fits(lo), !fits(hi)
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if fits(mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}

// inAccess reports whether v appears in an index of any access.
func inAccess(v string, refs []accessRef) bool {
	for _, a := range refs {
		for _, x := range a.acc.Indices {
			if slices.Contains(varNames(x), v) {
				return true
			}
		}
	}
	return false
}

// firstUse is the position of the first use of variable v in s.
func firstUse(s *ir.Stmt, v string) ir.Pos {
	for _, x := range s.Indices {
		if x.Name == v {
			return x.Pos
		}
	}
	for _, x := range indexUses(s.RHS) {
		if x.Name == v {
			return x.Pos
		}
	}
	return s.Pos
}
