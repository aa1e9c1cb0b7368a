// Package autodiff derives gradient ops: for a specialized op (ir.Spec)
// it builds another ordinary op, in the same IR, that computes the
// gradients of the outputs with respect to selected inputs (reverse
// mode, Grad), or their tangents along tangents of the inputs (forward
// mode, Tangent).
//
//	g, err := autodiff.Grad(spec, wrt)
//	gspec, err := sema.Specialize(g.Op, spec.DType, shapes(inputs ++ outputs), g.Sizes)
//	fmt.Println(autodiff.Explain(g))
//
// The gradient op's inputs are the forward inputs (same names) followed by
// d_<Out> for every forward output (in spec.Outputs() order, the output's
// shape); its outputs are d_<In> for every selected input, in input
// order. For loss L = Σ_outputs Σ d_<Out> · <Out>, it computes
// d_<In> = ∂L/∂<In>. Because the result is an ordinary op, Grad applies to
// its Spec again (double backward).
//
// # Per statement
//
// A statement Y[x] op= F(x, r), with spatial axes x and reduction axes r,
// contributes to the gradient of every tensor A it reads:
//
//	dA[z] += Σ_{(x, r): f(x, r) = z} R(x, r) · ∂F/∂A[f(x, r)]
//
// summed over every read A[f] of A (reads with the same index tuple are
// inverted together, the others give separate parts).
//
// ∂F/∂A[f] comes from the elementwise table (table.go): the product of the
// local partials along the path from the root to the read. A where does
// not become a factor: the partial stays under the where's condition
// (where(c, ∂, 0) in the then branch, where(c, 0, ∂) in the else
// branch), nested as in the forward expression, so every read the partial
// evaluates is guarded exactly as in the forward op and sema's bounds
// proof goes through the same way. Comparisons, logic and index
// expressions have no derivative; the literal 0 is a structural zero, so
// products with it vanish. Conventions at non-differentiable points:
// relu'(0) = 0, abs'(0) = 0, max/min route the derivative to the operand
// the value rule of core/ir selects (a tie goes to the second operand),
// pow's derivative in the exponent is 0 for a non-positive base.
//
// R(x, r) = dY[x] · ∂fold/∂F(x, r) depends on the reduction (reduce.go):
//
//   - '=' and '+=': R = dY[x].
//   - '*=': with Z[x] = #{r: F = 0} and P[x] = Π_{F ≠ 0} F (temporaries that
//     recompute F), the product of the other factors is
//     G = where(Z == 0, P / F, where(Z == 1 && F == 0, P, 0)): P/F without
//     zeros, P at the only zero, 0 with two zeros or more. R = dY[x] · G.
//   - 'max=' / 'min=': the gradient goes to the FIRST arg-extremum, in the
//     row-major (lexicographic) order of the reduction axes as the spec
//     lists them (order of first appearance on the right), which is the
//     order the interpreter folds in. With lin(r) the row-major linear
//     index of r and N the number of reduction points, a temporary
//     I[x] min= where(F == Y[x], lin(r), N) finds it and
//     R = where(lin(r) == I[x], dY[x], 0). Y is recomputed. When F is not a
//     plain stored value (it has arithmetic), F is stored first,
//     T[x, r] = F, and the extremum is retaken over T, so that the equality
//     compares the very values the extremum was taken of, whatever the
//     kernel's rounding. A NaN extremum routes no gradient. lin(r) is a
//     value in the op's dtype, so more than 2^24 reduction points (float32)
//     or 2^53 (float64) is an error.
//   - a reduction statement with no reduction axes is treated as '='.
//
// # Index inversion
//
// The sum over {(x, r): f(x, r) = z} becomes a gather indexed by A's own
// indices z (invert.go):
//
//  1. Quasi-affine form (affine.go): every index of the read is written as
//     an integer affine form over the statement's variables and auxiliary
//     unknowns: e / c and e % c (c a positive constant, e quasi-affine)
//     introduce q and s with e = c·q + s, 0 <= s < c, shared by every / and
//     % of the same e and c (nested ones recursively). This gives the system
//     M·u = z + c0 over u = (x, r, q, s), with the rows e - c·q - s = 0.
//  2. Mixed-radix splitting (split.go): a row c·H(u) + L(u) = z whose low
//     part L stays within one period of c splits exactly into H + m = z / c
//     and L - c·m = z % c, with z / c and z % c as new right-hand symbols.
//     depth2space, pixel shuffle and non-overlapping windows then invert
//     with no free variable at all.
//  3. Gauss-Jordan elimination, tried first (solve.go): exact elimination
//     over the rationals, pivoting on the unknowns in order of preference:
//     spatial variables first (larger ranges first), then quotients,
//     remainders, and reduction variables last, so reduction variables
//     stay free and keep their plain ranges. Each dependent unknown is
//     u = N(z, t) / D with N integer affine in z and the free unknowns t
//     and D > 0; the integer solutions are exactly those with N % D == 0
//     (divisibility guards), plus the conditions of the rows that
//     eliminated to zero (equality guards). For fixed z the free unknowns
//     determine the rest, so every integer solution is visited exactly
//     once, and the free unknowns are original unknowns, which is what
//     makes the ranges trivial: the conv stride-2 gradient reduces over r
//     and s with p = (h - r) / 2 under (h - r) % 2 == 0. A free forward
//     variable keeps its extent, a free remainder ranges over [0, c), a
//     free quotient over the interval of e / c, shifted to start at 0.
//     Every dependent forward variable and remainder gets the guards
//     lo <= u(z, t) <= hi that the ranges of z and t do not already imply
//     (exact interval reasoning over the concrete extents); quotients
//     need none (q is floor(e / c) once s is in range).
//  4. Residue stepping, tried before plain elimination (invertStepped):
//     a dependent u = (a + σ·f) / D whose numerator uses a free unknown f
//     with coefficient σ = ±1 is an integer for exactly one residue of f
//     mod D, so f steps through that class instead of running over its
//     whole range under the guard: f = (-σ·a) % D + D·w over a new
//     reduction variable w of extent ceil(E / D), u = a / D - w (σ = -1)
//     or (a + D - 1) / D + w (σ = +1), and f < E is a guard unless D
//     divides E. The stride-2 conv gradient then reduces over 2 of the 3
//     taps per axis with no divisibility guard: r = x2 % 2 + 2·r_step,
//     p = x2 / 2 - r_step. Each step takes its own f, and a step's a may
//     not use another step's f, so every residue is an expression of z
//     and the unstepped unknowns. A gather with no such dependent, or
//     whose stepped form fails the bounds proof, is built without steps.
//  5. Smith normal form, the general method (snf.go, fm.go): used when
//     elimination fails (an intermediate leaves int64, say) or none of its
//     gathers passes the bounds proof (below). The unknowns that appear in
//     some row form the matrix M (the others stay free under their own
//     names and extents); S = U·M·V with U, V unimodular and S diagonal,
//     S_ii | S_(i+1)(i+1), computed over int64 with overflow checks. With
//     u = V·y the system M·u = w(z) becomes S·y = U·w(z):
//     for i < rank, y_i = (U·w)_i / S_ii under the divisibility guard
//     (U·w)_i % S_ii == 0 (none when S_ii == 1; printed with the
//     coefficients reduced modulo S_ii); for the rows i >= rank, the
//     equality guard (U·w)_i == 0; the y_j with j >= rank are new reduction
//     axes (t, t_1, ...). Because U and V are unimodular, each integer
//     solution has exactly one y, so each is visited exactly once. V's
//     columns are size-reduced against the free ones (this changes neither
//     S nor the solution set) for smaller coefficients. The ranges of the
//     new axes come from Fourier-Motzkin elimination: the system
//     lo_k <= (V·y)_k <= hi_k over every unknown, the box of z
//     (0 <= z_d <= dim - 1, and the ranges of the split symbols), the
//     equality rows, and the box of each free y_j that y = V⁻¹·u gives
//     from the unknowns' ranges; the determined y_i are substituted
//     exactly (S_ii·y_i = (U·w)_i), then z and the other free y_j are
//     eliminated, which leaves the loosest constant bounds over the whole
//     z box (an over-approximation of the integer projection, so sound;
//     each axis is shifted to start at 0). Every bound
//     lo_k <= u_k <= hi_k of a forward variable or remainder that the
//     ranges do not imply (interval reasoning over the printed form, with
//     each y_i = (U·w)_i / S_ii an atom bounded by floor division) stays a
//     guard; quotients again need none. When Fourier-Motzkin finds no
//     solution in range, the gather is zero (a guard that never holds).
//     Gauss-Jordan stays first because it keeps the original variables
//     as the loop variables, which gives the simpler expressions; the
//     Smith form's axes are lattice coordinates and its constant ranges
//     can be looser (X[2*i + 3*j] with i, j < 3: Gauss-Jordan loops over
//     j, 3 points; the Smith form over t with i = 3t - x, j = x - 2t, 5
//     points). In practice elimination succeeds on every quasi-affine read
//     the tests and fuzzers produce, so this path is a safety net; the
//     tests force it (an internal option) over the whole gradient table
//     and the fuzz corpus to keep it exact.
//  5. Substitution: the contribution R · ∂F/∂A is rewritten with every
//     solved forward variable replaced by its expression; reads of A at the
//     inverted indices become A[z]. Affine subexpressions whose terms
//     cancel are rewritten in canonical form, and guards that hold (or
//     fail) for every point of the ranges are dropped (or resolved)
//     (guards.go). Guards and reads are printed from the same canonical
//     forms, so the opaque atoms of sema's linear facts ((x2 - r) / 2) match
//     by text and sema's bounds proof accepts the reads.
//
// Each gather is checked with sema.Specialize on its own, in this order:
// Gauss-Jordan with plain substitution; Gauss-Jordan with opaque
// substitution, (x - j) / 1 in place of x - j, an atom that the guards
// bound directly, which reproduces the forward op's own proof when a
// solved variable is used with another coefficient elsewhere; the Smith
// normal form, plain, then opaque. Each is tried with and without guard
// simplification. Only a read that is not quasi-affine (a product of
// variables such as i*j or i*i, min, max, abs or where in an index,
// division by a non-constant) goes to the always-correct indicator form,
// which reduces over the whole forward iteration space:
//
//	dA[z] += where(f(x, r) == z, R · ∂F/∂A, 0)
//
// In the IR it reads as a gather over the whole iteration space, but
// core/loops recognizes the shape and lowers it as an accumulate-by-scatter
// (a zero fill, then one serial pass over x and r adding into
// dA[f(x, r)]), so it costs |dA| + |x|·|r|, not their product. A parallel
// scatter (atomics on a GPU, privatized accumulation on a CPU) is future
// work. The
// indicator form also remains the last resort should every exact gather
// of a quasi-affine read fail the bounds proof; no known case does, and
// the tests check that none of theirs does.
//
// Explain notes how each statement was derived: "exact inversion"
// (Gauss-Jordan), "exact inversion (Smith normal form)", either followed
// by ", opaque substitution" when used and "; reduces over ..." with the
// gather's reduction axes, or "indicator fallback ..." with the reason.
// Anything the method cannot handle is an error naming the read and the
// reason; Grad never returns an op it has not checked: the whole gradient
// op must parse back, specialize with Sizes (bounds proof included) and
// have the promised outputs, else Grad reports an internal error.
//
// A gather variable that sema could not accept is repaired (fixVars): one
// that the guards use but no read does gets a read in a branch that never
// runs, where(v < 0, A[v, 0, ...], 0.0) (sema requires every variable in
// some read); one used nowhere is summed out by scaling with its extent.
//
// # Reverse mode over statements
//
// reverse.go walks the statements backwards. Only tensors on a path from
// a selected input get gradients. The gradient of an output is its input
// d_<Out>; the gradient of a forward temporary T is the sum of the parts
// contributed by the statements reading T (one '=' statement summing them,
// or the single part renamed; an elementwise part, an '=' gather with no
// reduction axes, is summed in place rather than stored in a temporary of
// its own), complete when T's writer is reached;
// gradients of temporaries are temporaries of the gradient op. The
// statements the gradient reads (T, Y for max=, ...) are recomputed: the
// needed forward statements are copied in, in forward order, as
// temporaries. The gradients of the selected inputs come last, in input
// order; statements whose gradient reaches nothing are dropped. An input
// that nothing reads (an unneeded forward input, or d_<Out> of an output
// that depends on no selected input) is read in a never-taken branch
// where(0 > 1, X[0, ...], rhs) of the first output statement, because an
// op must read each of its inputs.
//
// # Forward mode
//
// Tangent (tangent.go) derives the tangent op: given the forward inputs
// and t_<X> for each selected input, it computes t_<Y> = Σ_X ∂Y/∂X · t_X
// for every output Y. It walks the statements forwards; the tangent of
// Y[x] op= F(x, r) is
//
//	t_Y[x] += v(x, r) · ∂fold/∂F(x, r),  v = Σ_{reads A[f]} ∂F/∂A[f] · t_A[f]
//
// with the partials of the same table, product rule and guards as
// reverse mode, and the same reduction rules with v in place of dY[x]
// ('=' and '+=': v itself; '*=': v · G; 'max=' / 'min=': v at the first
// arg-extremum). No index is inverted: t_A is read where A is, so the
// tangent statement has the forward statement's variables, guards and
// bounds proof. A reduction variable the tangent no longer reads is
// handled as in a gather (fixVars). Tensors on no path from a selected
// input have no tangent, nor do integer tensors; an output with none gets
// t_Y = 0. The forward statements the tangents read are recomputed first,
// in forward order, as Grad recomputes them, and the whole op is checked
// the same way. Because the tangent op is an ordinary op, Tangent and
// Grad apply to it again, and Tangent of a gradient op's Spec is a
// Hessian-vector product (forward over reverse, as torch.func.hessian
// computes it).
//
// # Expression size
//
// Derivatives can be much larger than the expression they come from; Grad
// keeps its work linear where it can and bounded everywhere (size.go,
// product.go). Partials share subexpressions (the path's factor is passed
// down by pointer; a product's partials share prefix and suffix products),
// equal subexpressions are found by interning, not by printing or
// comparing trees, and every memo is keyed by node pointer. Equal factors
// of a product chain are collected: for distinct factors g_j taken c_j
// times, the partial with respect to g_j is
// c_j · g_j^(c_j - 1) · Π_{i≠j} g_i^(c_i), a power of more than 4 written
// pow(g, k), so X[i] * ... * X[i] (2,000 factors) differentiates to
// d_Y[i] * (2000.0 * pow(X[i], 1999.0)). Equal terms of a contribution
// are collected with a count: X[i] + ... + X[i] gives 2000.0 * d_Y[i].
// When no factor repeats, the binary rule applies unchanged. The partials
// of a product of n distinct reads remain n products of n - 1 factors: the
// size of each statement's contributions, as trees, is counted on the
// DAG before any gather is built, and a gradient past ir.MaxNodes nodes is
// refused ("expression too large: the gradient of op f (through statement
// 1, ...) has at least N nodes, the limit is 50000 (ir.MaxNodes) ..."), as
// is a finished gradient op past it, before it is printed or checked.
//
// # Names and sizes
//
// Tensors: d_<T> for gradients (suffixed when taken), d_<T>_1, d_<T>_2 for
// parts, nz_/pnz_ (product rule), v_/m_/arg_ (extremum rule); a forward
// tensor whose name a gradient needs is recomputed as <T>_f. Index
// variables reuse the forward names when a variable solves to exactly a
// gradient index; other gradient indices are named after the tensor's
// dimension (the writer's left-hand side, a plain forward index, else the
// lowercased tensor name and dimension: x2), remainders and quotients after
// their variable (h_mod2, h_div3). sema.Specialize applies Sizes by name to
// every statement, so a variable that sema cannot infer (not a plain
// index of an unguarded read) goes into Sizes, and wherever the same name
// has another extent it is renamed (r_1).
package autodiff
