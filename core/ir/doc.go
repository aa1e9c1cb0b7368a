// Package ir is neoflow's intermediate representation of tensor operators.
//
// An Op is a list of compute statements over named tensors, in the notation
// of the NeoFlow paper and Tensor Comprehensions:
//
//	Y[n,k,p,q] += X[n,c,p*2+r,q*2+s] * W[k,c,r,s]
//
// Conventions fixed here once for every package:
//
//   - Index variables range over [0, extent). Each statement has its own
//     scope: the same name in two statements is two variables.
//   - The left-hand side indexes its tensor with distinct plain index
//     variables; those are the statement's spatial axes. An index variable
//     that appears only on the right is a reduction axis.
//   - Expressions have one of three kinds: KindIndex (int64 arithmetic on
//     index variables, integer literals and integer constants), KindValue
//     (floating point in the op's dtype) and KindBool. Mixing an index with a
//     value promotes the index to a value.
//   - On indices, '/' is floor division and '%' is the matching floor modulo
//     (the result has the sign of the divisor): -7/2 == -4, -7%2 == 1.
//     Divisors in index expressions must be positive constants.
//   - On values, '/' is true division and '%' is floor modulo
//     (x - floor(x/y)*y), as in Python.
//   - where(c, a, b) evaluates only the chosen branch, so a guarded access
//     need not be in bounds when its guard is false.
//   - On values, max, min, relu and the max= and min= reductions follow the
//     exact rule below, not IEEE maxNum or Go's math.Max. On indices min
//     and max are the integer min and max.
//   - Each tensor is written by exactly one statement. Tensors read but never
//     written are the op's inputs; written tensors that no later statement
//     reads are its outputs; the others are temporaries.
//   - Tensors are dense and row-major once specialized (see Spec).
//
// The max/min rule, the one definition every package follows:
//
//	max(a, b) = a > b || a != a ? a : b
//	min(a, b) = a < b || a != a ? a : b
//	relu(x)   = x > 0 || x != x ? x : 0    (that is, max(x, 0))
//
// and max= (min=) folds acc = max(acc, x) (min) from the identity -inf
// (+inf). A NaN operand on either side gives NaN: a NaN a is kept, and
// a > NaN is false, so a NaN b is returned. That holds against an infinity
// too: max(+Inf, NaN) is NaN, and relu(NaN) is NaN. Of two equal operands
// the second is returned, so the sign of a zero result follows operand
// order: max(+0, -0) = -0, max(-0, +0) = +0, relu(-0) = +0. The form is
// branch-free, so kernels vectorize it; folding in another order gives the
// same value, up to the sign of a zero result when +0 and -0 tie (and NaN
// payloads).
//
// Positions (Pos) are 1-based line and column in the op's source text and
// are ignored by Equal and Hash.
package ir
