// Package bounds is neoflow's one bounds prover and its one interval
// type. sema proves a statement's accesses in bounds with it
// (sema.Specialize), the lowering checks the loop nests it builds with it
// (core/loops, the check-bounds pass) after splitting indices for vectors,
// tiles and threads, the renderers ask it about divisions and masked
// loads (kernels/cgen), and autodiff decides the guards of gradient ops
// with it. So a fact that sema proved survives scheduling: the lowering
// asks the same prover about the split forms.
//
// Interval is an integer interval with infinite ends, computed exactly and
// rounded outward, never wrapping. An index expression is bounded
// (Scope.Bound) by interval arithmetic over the variables' intervals, and
// written as a linear form over atoms (variables and opaque terms keyed by
// their printed form) so that equal terms cancel (Scope.Range: i - i is
// 0). A where's condition becomes guard facts L >= 0 in the scope of each
// branch (Scope.Guard): a fact about one atom narrows its interval, the
// others are kept and tried against what is to be proven (Scope.Within:
// X[p + r - 1] under p + r - 1 >= 0), and bound the branch's value
// (where(i.o*16 + i.l > 0, i.o*16 + i.l - 1, 0) is at least 0). The method
// and its limits are described in core/sema's documentation.
//
// Extents may be symbolic (ForSymbolicExtents, sizes.go): a size variable
// is a variable of the scope over [least, MaxSize], a loop variable of that
// extent carries the fact s - 1 - v >= 0, and WithinSize proves an index
// below a dimension that is an index expression over size variables
// (s + 2, 2 * s), for every value they take, from those facts (scaled:
// 2s - 1 - 2i - j under s - 1 - i >= 0 leaves 1 - j). This is the prover
// of the kernels whose extents are arguments (one kernel for every batch
// size); sizes_test.go checks it against exhaustive evaluation. Where the
// facts do not suffice, GuardsWithin (guards.go) derives launch guards:
// linear conditions on the sizes under which the index is in bounds at
// every point, which the kernel checks per launch; sizes_test.go checks
// them the same way.
//
// The linear form (Linear, Linearize) is the compiler's one: besides the
// prover, fuse-split reads where a condition changes value from it,
// the lane choice and the renderers an access's step along a loop
// (loops.Coefficient), and autodiff both the rows of its index systems
// and the canonical form of its guards.
package bounds
