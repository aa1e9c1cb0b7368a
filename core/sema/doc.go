// Package sema checks ops and specializes them for concrete shapes.
//
// # Check
//
// Check verifies an op at define time and returns a user-facing *ir.Error
// (line:col and a caret) for the first problem:
//
//   - Size: at most ir.MaxNodes expression nodes over all statements
//     ("expression too large: op f has 123456 nodes, the limit is
//     100000 ..."). The parser refuses such text already; this holds ops
//     built as IR (gradient ops, lowered graphs) to the same bound.
//   - Kinds (ir.KindOf): access indices must be integer (KindIndex)
//     expressions; where's condition and the operands of &&, || and ! must
//     be bools; a bool cannot be used as a value or an index anywhere else;
//     comparisons take index or value operands. Division and modulo in an
//     index expression need a positive integer constant divisor (an integer
//     literal or integer constant).
//   - Index literals: an integer literal or integer constant used in index
//     arithmetic (as an access index, as an operand of an integer
//     operation or of a comparison of two integers, or as a branch of an
//     integer where) must have a magnitude below 2^62 ("index arithmetic
//     may overflow int64: integer literal 9223372036854775807 is too large
//     for index arithmetic (its magnitude must be below 2^62)"). An integer
//     literal used as a value (X[i] * 9223372036854775807) is a float
//     constant and may be anything.
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
//     for index k: X dim 1 gives 3 but W dim 0 gives 4"). A user size
//     replaces the direct constraints of its variable: it may be smaller
//     than a dimension (the statement reads a prefix, as a gate split off a
//     concatenation does), and a size larger than a dimension is an error.
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
//  4. Guarded constraints (guarded.go), for the variables still unknown,
//     as Tensor Comprehensions infers ranges: an index expression under a
//     where with exactly one unknown variable u gives the largest n such
//     that, with u in [0, n-1], the bounds proof shows it inside its
//     dimension wherever the guards let the access run (so a guard that
//     keeps it in bounds by itself bounds nothing); the smallest such n,
//     and then the derived constraints again, to a fixed point.
//     where(k <= i, L[i, k], 0.0) gives i L's first dimension;
//     where(i < 4, A[i], B[i - 4]) gives i 4 plus B's size.
//
//  5. A variable still unknown is an error asking for its size.
//
// A written tensor's shape is the extents of its left-hand-side variables.
// Every tensor, input or written, must have fewer than 2^62 elements, so
// that element offsets fit in int64.
// The Spec lists the inputs (Op.Inputs order), then the outputs, then the
// temporaries (tensors read by a later statement), each in statement order.
//
// # Bounds proof
//
// Every access must be provably in bounds in every dimension for the
// inferred extents, and every integer sub-expression provably free of
// int64 overflow, or the op is rejected with an error naming the access,
// the dimension and the index's range (or the expression and its range).
// The prover described here lives in core/bounds, which the lowering's
// bounds check, the renderers and autodiff's guard simplification use as
// well.
//
// Expressions are proven where they are evaluated, in the scope of the
// guards around them, sub-expressions first: the indices of an access,
// with any reads and wheres inside them (X[where(A[i] > 0.0, i, 0)] reads
// A), are proven before the access itself.
//
//   - Guard facts. Walking down from the root, where(c, a, b) adds facts to
//     the scope of a: the facts of c; and to b: the facts of !c. A
//     conjunction gives the facts of its operands, ! negates, a negated
//     disjunction gives the facts of its negated operands, and a
//     disjunction (or a negated conjunction) gives none. Comparisons of
//     two index expressions normalize into facts L >= 0, where L is a
//     linear form with integer coefficients over atoms: index variables and
//     opaque non-linear index terms (h/2, h%2, min(a, b), i*j), keyed by
//     their printed form so that identical terms cancel:
//     a < b gives b - a - 1 >= 0, a <= b gives b - a >= 0, a == b gives
//     a - b >= 0 and b - a >= 0, and a != b gives nothing; comparisons of
//     values give nothing. The constant and coefficients of a linear form
//     stay within ±2^62: arithmetic on forms is checked, a term whose form
//     would leave that range stays an opaque atom, and a comparison whose
//     fact would leave it gives no fact.
//   - Tightening. A fact that mentions a single atom, a·x + c >= 0, narrows
//     that atom's interval (x >= ceil(-c/a) or x <= floor(c/-a)). If an
//     interval becomes empty the guards contradict each other and the
//     branch is never evaluated, so it needs no proof. (An opaque atom's
//     narrowed interval is checked for emptiness against the atom's bounds
//     outside the where, which finds fewer contradictions but keeps
//     nested wheres linear to bound.)
//   - Proof. An index e in a dimension of size D is in bounds when both
//     e >= 0 and D-1-e >= 0 are proven. A linear form l >= 0 is proven when
//     interval(l) >= 0, or interval(l - F) >= 0 for a fact F >= 0, or
//     interval(l - F1 - F2) >= 0 for two facts. Only facts that share an
//     atom with what is left to prove are tried (F1 with l, F2 with
//     l - F1); a fact about a single atom is not, since tightening already
//     applied it; of facts L + c >= 0 with the same L only the one with
//     the least c, which implies the others, is kept. At most 512 single
//     facts and 16 × 16 pairs are tried. An empty interval proves nothing.
//   - Overflow. Kernels compute index expressions in int64 (C's int64_t,
//     where overflow is undefined). Every integer operation (+, -, *, /,
//     %, unary -, min, max, abs, an integer where) must have a range inside
//     (-2^62, 2^62) where it is evaluated (branches whose guards contradict
//     each other are exempt), or the op is rejected: "index arithmetic may
//     overflow int64: i * 2305843009213693952 ranges over
//     [0, 6917529027641081856], beyond the limit of ±2^62 for index
//     values". This covers index expressions in where conditions and index
//     expressions used as values. Its operands are operations checked the
//     same way, literals below 2^62 or variables below their extents, so
//     every integer value is computed exactly, and the guard facts, which
//     are exact integer statements, hold in the kernels too. The margin
//     below 2^63 leaves room for the rearrangements of lowering.
//
// Interval ends are integers or infinities: a lower end is an integer or
// -inf, an upper end an integer or +inf, so no literal is ever taken for
// an infinity and infinities of opposite signs never meet in a sum. An end
// that does not fit in int64 is rounded outward (a lower end down, an
// upper end up), never wrapped around. Interval arithmetic is exact, up to
// that rounding, for sums and multiplication by constants, for floor
// division by a positive constant, and for floor modulo within one period
// (else [0, k-1]); products of intervals, min, max and abs take the bounds
// of the endpoint combinations; a where inside an index expression is the
// hull of its branches, each bounded under its own guard facts. Intervals
// are memoized per scope and guard scopes per where, so bounding an
// expression takes time linear in its size in each scope.
// The left-hand side indexes its tensor with plain variables, so it is in
// bounds by construction.
//
// # Index tensors
//
// SpecializeTyped takes the element types of integer inputs. A read that
// stands as a whole index (ir.Access.Indirect, E[I[b, k], d]) must be of
// an int32 or int64 input; its value cannot be bounded here, so the proof
// skips that index and records instead, in the input's TensorDecl.Limit,
// the least extent the tensor indexes: each dimension it stands in, and
// the extent of each variable a scatter compares it with (v == Dst[e]).
// An indirect read anywhere else is refused. Whoever launches the kernel
// checks every element of the tensor against [0, Limit) first. A cast
// int32(...) or int64(...) may only be the whole right-hand side of an
// '=' statement, whose tensor then gets that integer type.
//
// # Symbolic extents
//
// ProveSymbolic (symbolic.go) proves a spec's accesses for every value of
// size variables that name some of the inputs' dimensions (a batch, a
// sequence length), not only for the shapes it was specialized at: the
// variables that index such a dimension plainly take the size variable as
// their extent, written dimensions follow from the left-hand sides, and
// each access is proven below its dimension, an expression over size
// variables, with core/bounds' WithinSize. An access it cannot prove for
// every size but whose index and dimension are linear in the loop and size
// variables gets launch guards (bounds.GuardsWithin), conditions on the
// sizes alone that the kernel checks at each launch. It is the proof of
// kernels whose extents are arguments (core/pipeline's Symbolic).
package sema
