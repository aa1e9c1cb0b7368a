// Package cudaemu runs a CUDA module rendered by kernels/cgen on the host,
// for tests on machines without a GPU: the source is compiled as C++ with
// g++ after a prelude that defines CUDA's qualifiers, built-in variables
// and atomics, and every launch runs its blocks and threads one after the
// other. That is exact for the kernels cgen renders today, whose threads
// never wait for each other (no barriers, shared memory or warp
// shuffles): each thread's result does not depend on the order threads
// run in. Atomic adds run in that sequential order, so a float sum is
// deterministic here where the GPU's is not.
package cudaemu
