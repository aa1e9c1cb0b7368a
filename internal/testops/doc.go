// Package testops is a table of operators used by the kernels tests:
// matmul, bmm, convolutions, pooling, softmax, reductions and index and
// value arithmetic, each with input shapes, parsed and specialized through
// core/parse and core/sema.
package testops
