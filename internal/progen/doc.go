// Package progen generates random programs in neoflow's language for
// property tests: one to three statements over inputs X[M, N], V[M] and
// W[N] with index variables i (over M) and j (over N), every reduction
// (=, +=, max=, min=), index arithmetic (affine, /, %, min, abs, where),
// reads guarded by where, the elementwise intrinsics, and reads of
// tensors that earlier statements wrote, with the inputs and the outputs
// in a random order.
//
// A program is not guaranteed to be accepted: the semantic checker has the
// last word (a read it cannot prove in bounds, an '=' that would reduce).
// Tests specialize what it accepts and skip the rest; the generator keeps
// most programs acceptable, and tests check that most are.
//
//	p := progen.New(seed)
//	spec, err := p.Spec(ir.Float64)
package progen
