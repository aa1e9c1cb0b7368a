// Package sema checks ops and specializes them for concrete shapes.
//
// # Check
//
// Check verifies an op at define time and returns a user-facing *ir.Error
// (line:col and a caret) for the first problem:
//
//   - Kinds (ir.KindOf): access indices must be integer (KindIndex)
//     expressions; where's condition and the operands of &&, || and ! must
//     be bools; a bool cannot be used as a value or an index anywhere else;
//     comparisons take index or value operands. Division and modulo in an
//     index expression need a positive integer constant divisor (an integer
//     literal or integer constant).
//   - Data flow: each tensor is written by exactly one statement; a
//     statement may not read the tensor it writes; an op input may not be
//     written; a statement may only read inputs and tensors written by
//     earlier statements; every name in Op.Inputs must be read.
//   - Ranks: every use of a tensor has the same number of indices.
//   - Index variables: the left-hand side lists distinct variables; every
//     variable of a statement appears on the left-hand side or inside some
//     tensor access (else it could have no range); '=' statements have no
//     reduction axes.
//
// An op with at least one statement always has an output: the tensor of
// its last statement is read by no later statement.
//
// # Range inference
//
// Specialize infers extents statement by statement, in order, so the
// shapes of tensors written by earlier statements are known. For one
// statement:
//
//  1. User sizes (by variable name) fix extents first.
//
//  2. Direct constraints: in every access, an index position holding a
//     plain variable v of a dimension of size D gives extent(v) = D. Two
//     direct constraints that disagree are an error ("inconsistent ranges
//     for index k: X dim 1 gives 3 but W dim 0 gives 4"), and so is a size
//     that disagrees with a direct constraint.
//
//  3. Derived constraints, iterated to a fixed point: an index expression
//     with exactly one variable u of unknown extent (the others known)
//     gives the largest n >= 1 such that, with u in [0, n-1] and the others
//     in their ranges, the interval of the expression stays inside
//     [0, D-1]. Interval bounds only grow with n, so n is found by binary
//     search up to 2^40; an expression that fits even then (h%2) does not
//     bound u, and one that does not fit at n = 1 can never be in bounds (an
//     error). In each round every variable takes the minimum of its derived
//     constraints; the round's results then count as known. Direct
//     constraints and sizes always win over derived ones. Examples:
//     p*2+r in a dimension of size H with r in [0, R-1] gives
//     (H-R)/2 + 1; h/2 gives 2H; c*4 + (h%2)*2 + w%2 gives C/4; c/4 gives 4C.
//
//     Guards: an index expression inside a where branch constrains nothing
//     when the where's condition (or that of an enclosing where) mentions
//     one of its variables, since the guard may be what keeps it in bounds
//     (A[i] in where(i < 4, A[i], B[i-4]) says nothing about i). When no
//     guard mentions its variables, the guards cannot restrict it: whenever
//     the access runs, it runs for every value of those variables, so it
//     constrains them as if unguarded (n and c in the padded convolution
//     where(p+r-1 >= 0 && ..., X[n, c, p+r-1, q+s-1], 0.0)).
//
//  4. A variable still unknown is an error asking for its size.
//
// A written tensor's shape is the extents of its left-hand-side variables.
// The Spec lists the inputs (Op.Inputs order), then the outputs, then the
// temporaries (tensors read by a later statement), each in statement order.
//
// # Bounds proof
//
// Every access must be provably in bounds in every dimension for the
// inferred extents, or the op is rejected with an error naming the access,
// the dimension and the index's range. Accesses are proven where they sit:
//
//   - Guard facts. Walking down from the root, where(c, a, b) adds facts to
//     the scope of a: the conjuncts of c (split on &&); and to b: the
//     negation of c when c is a single comparison (or a negated
//     disjunction, which splits into negated comparisons). Comparisons of
//     two index expressions normalize into facts L >= 0, where L is a
//     linear form with integer coefficients over atoms: index variables and
//     opaque non-linear index terms (h/2, h%2, min(a, b), i*j), keyed by
//     their printed form so that identical terms cancel:
//     a < b gives b - a - 1 >= 0, a <= b gives b - a >= 0, a == b gives
//     a - b >= 0 and b - a >= 0, and a != b gives nothing.
//   - Tightening. A fact that mentions a single atom, a·x + c >= 0, narrows
//     that atom's interval (x >= ceil(-c/a) or x <= floor(c/-a)). If an
//     interval becomes empty the guards contradict each other and the
//     branch is never evaluated, so it needs no proof.
//   - Proof. An index e in a dimension of size D is in bounds when both
//     e >= 0 and D-1-e >= 0 are proven. A linear form l >= 0 is proven when
//     interval(l) >= 0, or interval(l - F) >= 0 for a fact F >= 0, or
//     interval(l - F1 - F2) >= 0 for two facts.
//
// Interval arithmetic is exact for sums and multiplication by constants,
// for floor division by a positive constant, and for floor modulo within
// one period (else [0, k-1]); products of intervals, min, max and abs take
// the bounds of the endpoint combinations; a where inside an index
// expression is the hull of its branches, each bounded under its own
// guard facts. Arithmetic saturates at ±infinity instead of overflowing.
// The left-hand side indexes its tensor with plain variables, so it is in
// bounds by construction.
package sema
