// Package cgen renders a lowered kernel (loops.Func) as C99 source with
// neoflow's kernel ABI:
//
//	void <symbol>(void **bufs, int64_t nthreads);
//
// bufs holds one pointer per entry of spec.Tensors (inputs, outputs,
// temporaries), each a dense row-major array of the spec's dtype (float or
// double). Inputs are read through const restrict pointers; outputs and
// temporaries must not alias each other or any input. nthreads is the
// OpenMP team size of every parallel loop; values below 1 mean 1.
//
// The rendering is deterministic (it is part of the kernel cache key) and
// matches the reference interpreter (core/interp):
//
//   - index arithmetic is int64_t; '/' and '%' on indices are floor division
//     and floor modulo (nf_floordiv, nf_floormod), rendered as plain C '/'
//     and '%' only when the dividend is provably non-negative and the
//     divisor a positive constant;
//   - values are float or double with the f-suffixed <math.h> functions for
//     float; value '%' is x - floor(x/y)*y; sigmoid is 1/(1+exp(-x)), rsqrt
//     1/sqrt(x), relu max(x, 0);
//   - min and max on values (and max=/min= reductions, and relu) follow Go's
//     math.Max/math.Min as the interpreter does: max with +inf is +inf even
//     against NaN (min with -inf likewise), otherwise a NaN operand gives
//     NaN, and max(-0, +0) = +0, min(-0, +0) = -0. So relu(NaN) is NaN, and
//     a max= reduction over a row holding NaN is NaN unless it holds +inf;
//   - where is a C conditional, so only the chosen branch (and any guarded
//     access in it) is evaluated; && and || short-circuit;
//   - an index used as a value is converted to the value type.
//
// Float32 kernels compute in float, while the interpreter computes in
// float64 and rounds on every store, so float32 results agree to about
// 1e-4 relative, float64 ones to rounding. Kernels must be compiled
// without -ffast-math and without FP contraction (GCC's -std=c11 implies
// -ffp-contract=off).
//
// Parallel loops get "#pragma omp parallel for num_threads(nf_nt)" (with
// collapse(k) when collapsed), lane loops "#pragma omp simd"; extents and
// strides are constants.
package cgen
