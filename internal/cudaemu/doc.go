// Package cudaemu runs a CUDA module rendered by kernels/cgen on the host,
// for tests on machines without a GPU: the source is compiled as C++ with
// g++ after a prelude that defines CUDA's qualifiers, built-in variables
// atomics, barriers and warp shuffles, and every launch runs its blocks
// one after the other. The threads of a block are fibers (ucontext) that
// take turns: each runs until it waits at a barrier (__syncthreads, or
// the rendezvous of a warp shuffle) or returns, so shared memory and
// barriers behave as on the GPU for any kernel that is free of data
// races; a barrier that not every thread reaches is an error, not a hang.
// Atomic adds run in the fibers' order, so a float sum is deterministic
// here where the GPU's is not.
package cudaemu
