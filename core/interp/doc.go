// Package interp is neoflow's reference interpreter: a direct, unoptimized
// evaluation of a specialized op (ir.Spec) in float64. It is the ground
// truth that generated kernels are tested against.
//
// Run evaluates the statements in order. For each statement it visits the
// spatial points in row-major order; at each one it folds the right-hand
// side over every reduction point (row-major over the reduction axes)
// starting from the identity of the assignment operator (+= 0, *= 1,
// max= -inf, min= +inf) and stores the result; '=' evaluates the
// right-hand side once. Semantics follow core/ir:
//
//   - Index expressions are int64 arithmetic; '/' and '%' are floor division
//     and floor modulo (-7/2 == -4, -7%2 == 1).
//   - Value expressions are float64; '/' is true division and '%' is
//     x - floor(x/y)*y. An index mixed with a value is converted to float64.
//   - where evaluates only the selected branch, so a guarded access that
//     would be out of bounds is never performed.
//   - sigmoid(x) = 1/(1+exp(-x)), relu(x) = max(x, 0), rsqrt(x) =
//     1/sqrt(x), erf is math.Erf, the trigonometric, hyperbolic, log1p,
//     expm1, log2, exp2, floor, ceil and trunc functions are package math's,
//     round is math.RoundToEven (torch.round), sign is 0 at 0 and NaN
//     (torch.sign), softplus(x) is x above 20, else log1p(exp(x))
//     (torch's threshold); min, max and abs apply to indices and
//     values. On values max, min, relu and the max=/min= folds follow the
//     exact rule of core/ir (max(a, b) = a > b || a != a ? a : b), not
//     math.Max: NaN propagates even against an infinity and of two equal
//     zeros the second operand is returned.
//   - Comparisons of two index expressions compare integers, otherwise
//     float64 values.
//
// For Float32, Float16 and BFloat16 specs every stored element (the
// copied inputs and every element a statement writes) is rounded to the
// dtype (ir.DType.Round), as a kernel storing it would; arithmetic between
// stores is in float64.
//
// The right-hand side is compiled once per statement into closures over
// an environment of index-variable values. An out-of-bounds access, which
// Specialize rules out, stops the run with an error.
package interp
