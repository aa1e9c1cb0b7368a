// Package cgen renders a lowered kernel (loops.Func) as C99 source with
// neoflow's kernel ABI:
//
//	void <symbol>(void **bufs, int64_t nthreads);
//
// bufs holds one pointer per entry of spec.Tensors (inputs, outputs,
// temporaries), each a dense row-major array of the spec's dtype (float or
// double). Inputs are read through const restrict pointers; outputs and
// temporaries must not alias each other or any input. Local arrays are
// 64-byte aligned; a pack's or relayout's (loops.Local.Copy) is read
// through a restrict pointer, which keeps GCC from spilling a register
// tile's accumulators beside it. nthreads is the OpenMP team size of every
// parallel loop; values below 1 mean 1.
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
//   - min and max on values (and max=/min= reductions, and relu) follow
//     the exact rule of core/ir, as the interpreter does:
//     max(a, b) = a > b || a != a ? a : b (min with <), relu(x) = max(x, 0).
//     They are rendered as branch-free conditionals (nf_max, nf_min,
//     nf_relu), which GCC vectorizes. A NaN operand gives NaN, also against
//     an infinity, and of two equal operands the second is returned, so
//     max(+0, -0) = -0 and relu(-0) = +0;
//   - a lane-parallel reduction (the lane axis is a reduction axis, see
//     core/loops) reassociates += and *=: float results then differ from
//     the interpreter's sequential fold by rounding only. max= and min= are
//     exact, except that a zero result may have the other sign when +0
//     and -0 tie;
//   - where is a C conditional, so only the chosen branch (and any guarded
//     access in it) is evaluated; && and || short-circuit. Inside a lane
//     loop a value where whose condition reads no tensor is a blend
//     instead (blend.go): nf_blend(C, T', E) evaluates both operands and
//     keeps the bits of one, and T' reads each element that may lie
//     outside its tensor as (C ? read : 0), a masked load. The value is
//     the same; the lane loop then vectorizes, where a conditional around
//     a read keeps it scalar (GCC 12);
//   - an index used as a value is converted to the value type;
//   - a guard (loops.If) is a C if; a scatter statement (see core/loops)
//     is a zero fill followed by a serial loop nest that adds each point's
//     term to the element its target indices select, in the interpreter's
//     order.
//
// Float32 kernels compute in float, while the interpreter computes in
// float64 and rounds on every store, so float32 results agree to about
// 1e-4 relative, float64 ones to rounding. Kernels must be compiled
// without -ffast-math; package cc's default flags allow FP contraction
// (a*b + c as one fused multiply-add, rounded once), which changes results
// by rounding only.
//
// Float16 and bfloat16 kernels (C and CUDA, half.go) take tensors of the
// 16-bit type, as its bits in an unsigned short so that no CUDA header is
// needed: every read converts to float (nf_ld), locals, shared arrays and
// arithmetic are float, and every store to a tensor rounds once to nearest
// even (nf_st); a combining store reads, combines in float and rounds, and
// an atomic add is a compare-and-swap loop on the element's 32-bit word.
// Rounding each stored element, as the interpreter does, they agree with
// it bit for bit on nearly every element.
//
// Parallel loops get "#pragma omp parallel for num_threads(nf_nt)" (with
// collapse(k) when collapsed), lane loops "#pragma omp simd"; extents and
// strides are constants.
//
// RenderProfiled renders the same kernel with per-statement timing, for
// the autotuner: it takes one more buffer, bufs[len(spec.Tensors)], a
// double array with one entry per nest, and adds to entry i the seconds
// nest i took (clock_gettime(CLOCK_MONOTONIC) before and after the nest,
// outside any parallel region). Its source defines _POSIX_C_SOURCE
// 199309L before the includes, as -std=c11 hides clock_gettime otherwise.
//
// RenderCUDA (cuda.go) renders the same nests as CUDA C for NVRTC, with
// the same expression rules (where a conditional, no blends), helpers as
// __device__ functions and index arithmetic in nf_i, a 32-bit int unless
// a tensor or iteration space exceeds 2^30. Each parallel loop at the top
// of a nest is one __global__ function, a grid-stride loop over its
// collapsed iteration space with one iteration per thread; any other
// top-level code is a function run by one thread; functions run in order
// (Launch). A block loop (loops.BindBlock, from the GPU tiling and the GPU
// reduction) is a function whose blocks stride over the loop's collapsed
// iterations, its block size the iteration count of the thread loop
// (loops.BindThread) inside: each thread binds the thread loop's
// variables from threadIdx.x, shared Locals are __shared__ arrays, a
// loops.Sync is __syncthreads(), and a loops.BlockCombine folds a
// register across the block with __shfl_down_sync in each warp, then
// across the warps' results in shared memory, its storing thread then
// running the reduction's epilogue (loops.BlockCombine.Then). The nests of
// a fused group's members lowered one by one as block loops of one block
// size, none reading what another writes, are one function whose grid is
// their grids side by side (cudagroup.go: horizontal fusion). An atomic store (a scatter
// under loops.Schedule.Atomic) is an atomicAdd. The module compiles
// without headers: it defines NAN and INFINITY itself. The C renderer
// refuses GPU nodes.
package cgen
