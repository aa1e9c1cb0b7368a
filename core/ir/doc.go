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
//   - Each tensor is written by exactly one statement. Tensors read but never
//     written are the op's inputs; written tensors that no later statement
//     reads are its outputs; the others are temporaries.
//   - Tensors are dense and row-major once specialized (see Spec).
//
// Positions (Pos) are 1-based line and column in the op's source text and
// are ignored by Equal and Hash.
package ir
