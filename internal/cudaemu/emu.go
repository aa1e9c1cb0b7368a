package cudaemu

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"unsafe"

	"github.com/pkg/errors"

	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/kernels/cc"
	"github.com/neoflow/neoflow/kernels/cgen"
)

// prelude makes CUDA C compile as host C++. Each thread of a block is a
// fiber (ucontext) on its own stack; the fibers of a block take turns,
// each running until it waits at a barrier or returns, so
// __syncthreads() and the warp shuffles are real rendezvous. threadIdx is
// the running fiber's; a __shared__ array is a static one, shared by the
// fibers of the block (blocks run one after the other). A barrier that
// some threads of the block never reach is reported, not hung on.
const prelude = `#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>
struct nf_dim3 { unsigned x, y, z; };
static nf_dim3 blockIdx, blockDim, gridDim;
enum { nf_max_threads = 1024, nf_stack = 1 << 16 };
static nf_dim3 nf_thread_idx[nf_max_threads];
static int nf_cur;
#define threadIdx (nf_thread_idx[nf_cur])
static ucontext_t nf_sched, nf_ctx[nf_max_threads];
static char *nf_stacks;
static int nf_n, nf_done[nf_max_threads], nf_ndone;
static const char *nf_err;
static void nf_yield(void) { swapcontext(&nf_ctx[nf_cur], &nf_sched); }
// nf_wait is a barrier of the threads [first, first+count): the last to
// arrive opens it.
struct nf_barrier { int arrived; unsigned gen; };
static nf_barrier nf_block_bar, nf_warp_bar[nf_max_threads / 32];
static void nf_wait(nf_barrier *b, int count) {
	unsigned gen = b->gen;
	if (++b->arrived == count) { b->arrived = 0; b->gen++; return; }
	while (b->gen == gen && !nf_err) nf_yield();
}
static inline void __syncthreads(void) {
	if (nf_ndone > 0) nf_err = "__syncthreads() after a thread of the block returned";
	nf_wait(&nf_block_bar, nf_n);
}
static double nf_slot[nf_max_threads];
static inline void nf_warp_wait(void) {
	int w = nf_cur / 32, lanes = nf_n - w * 32 < 32 ? nf_n - w * 32 : 32;
	nf_wait(&nf_warp_bar[w], lanes);
}
template <typename T> static inline T nf_shfl(unsigned mask, T v, int src) {
	if (mask != 0xffffffffu) nf_err = "a warp shuffle with a partial mask";
	nf_slot[nf_cur] = (double)v;
	nf_warp_wait();
	if (src >= nf_n) nf_err = "a warp shuffle reads a lane past the block's last thread";
	T r = src >= 0 && src / 32 == nf_cur / 32 && src < nf_n ? (T)nf_slot[src] : v;
	nf_warp_wait();
	return r;
}
template <typename T> static inline T __shfl_down_sync(unsigned mask, T v, unsigned d) { return nf_shfl(mask, v, nf_cur % 32 + (int)d < 32 ? nf_cur + (int)d : -1); }
template <typename T> static inline T __shfl_sync(unsigned mask, T v, int lane) { return nf_shfl(mask, v, (nf_cur / 32) * 32 + (lane & 31)); }
template <typename T> static inline T __shfl_xor_sync(unsigned mask, T v, int m) { return nf_shfl(mask, v, (nf_cur / 32) * 32 + ((nf_cur % 32) ^ m)); }
static void (*nf_entry)(void);
static void nf_fiber(void) {
	nf_entry();
	nf_done[nf_cur] = 1;
	nf_ndone++;
	if (nf_block_bar.arrived > 0) nf_err = "a thread returned while others wait at __syncthreads()";
}
// nf_run runs blocks x threads of fn; it returns an error message or NULL.
static const char *nf_run(void (*fn)(void), unsigned blocks, unsigned threads) {
	if (threads > nf_max_threads) return "more threads per block than 1024";
	if (!nf_stacks && !(nf_stacks = (char *)malloc((size_t)nf_max_threads * nf_stack))) return "out of memory for the thread stacks";
	gridDim.x = blocks; blockDim.x = threads; nf_entry = fn; nf_n = (int)threads;
	for (unsigned b = 0; b < blocks && !nf_err; b++) {
		blockIdx.x = b;
		memset(&nf_block_bar, 0, sizeof nf_block_bar);
		memset(nf_warp_bar, 0, sizeof nf_warp_bar);
		for (int t = 0; t < nf_n; t++) {
			nf_thread_idx[t].x = (unsigned)t;
			nf_done[t] = 0;
			getcontext(&nf_ctx[t]);
			nf_ctx[t].uc_stack.ss_sp = nf_stacks + (size_t)t * nf_stack;
			nf_ctx[t].uc_stack.ss_size = nf_stack;
			nf_ctx[t].uc_link = &nf_sched;
			makecontext(&nf_ctx[t], nf_fiber, 0);
		}
		nf_ndone = 0;
		while (nf_ndone < nf_n && !nf_err)
			for (nf_cur = 0; nf_cur < nf_n && !nf_err; nf_cur++)
				if (!nf_done[nf_cur]) swapcontext(&nf_sched, &nf_ctx[nf_cur]);
	}
	return nf_err;
}
#define __global__
#define __device__
#define __shared__ static
#define __forceinline__ inline
#define __launch_bounds__(n)
#define __restrict__ __restrict
#define __align__(n) __attribute__((aligned(n)))
struct float4 { float x, y, z, w; };
struct double2 { double x, y; };
struct uint2 { unsigned int x, y; };
struct uint4 { unsigned int x, y, z, w; };
static inline float4 make_float4(float x, float y, float z, float w) { float4 v = {x, y, z, w}; return v; }
static inline double2 make_double2(double x, double y) { double2 v = {x, y}; return v; }
static inline uint2 make_uint2(unsigned int x, unsigned int y) { uint2 v = {x, y}; return v; }
static inline uint4 make_uint4(unsigned int x, unsigned int y, unsigned int z, unsigned int w) { uint4 v = {x, y, z, w}; return v; }
static inline float __int_as_float(int i) { float f; memcpy(&f, &i, sizeof f); return f; }
static inline float atomicAdd(float *p, float v) { float o = *p; *p = o + v; return o; }
static inline double atomicAdd(double *p, double v) { double o = *p; *p = o + v; return o; }
static inline unsigned atomicCAS(unsigned *p, unsigned cmp, unsigned v) { unsigned o = *p; if (o == cmp) *p = v; return o; }
#undef NAN
#undef INFINITY
`

// serial numbers the libraries: dlopen returns a loaded path's handle.
var serial atomic.Int64

// Kernel is a module compiled for the host.
type Kernel struct {
	fn    uintptr
	nbufs int
}

// Compile compiles mod, whose functions take one pointer per entry of
// spec.Tensors (and a kernel with symbolic extents, the values of its
// sizes), with g++ into dir. Run then takes the tensors' pointers, and
// for a kernel with symbolic extents a pointer to the sizes' values, an
// int64 array in mod.Sizes order.
func Compile(ctx context.Context, spec *ir.Spec, mod *cgen.CUDAModule, dir string) (*Kernel, error) {
	var b strings.Builder
	b.WriteString(prelude)
	b.WriteString(mod.Source)
	args := make([]string, len(spec.Tensors))
	for i, t := range spec.Tensors {
		cst := ""
		if t.Role == ir.RoleInput {
			cst = "const "
		}
		args[i] = fmt.Sprintf("(%s%s *)nf_bufs[%d]", cst, cgen.ElemType(spec.ElemType(t)), i)
	}
	nbufs := len(spec.Tensors)
	for j := range mod.Sizes { // a kernel with symbolic extents: the sizes' values, from the int64 array after the tensors
		args = append(args, fmt.Sprintf("((const long long *)nf_bufs[%d])[%d]", nbufs, j))
	}
	if len(mod.Sizes) > 0 {
		nbufs++
	}
	b.WriteString("\nstatic void **nf_bufs;\n")
	for i, l := range mod.Launches {
		fmt.Fprintf(&b, "static void nf_launch%d(void) { %s(%s); }\n", i, l.Entry, strings.Join(args, ", "))
	}
	// bufs[len(spec.Tensors)] receives an error message.
	b.WriteString("\nextern \"C\" void nf_emulate(void **bufs, int64_t nthreads)\n{\n\t(void)nthreads;\n\tnf_bufs = bufs;\n\tnf_err = 0;\n\tconst char *err = 0;\n")
	for i, l := range mod.Launches {
		fmt.Fprintf(&b, "\tif (!err) err = nf_run(nf_launch%d, %d, %d);\n", i, l.Blocks, l.Threads)
	}
	fmt.Fprintf(&b, "\tif (err) snprintf((char *)bufs[%d], %d, \"%%s\", err);\n}\n", nbufs, errLen)
	out := filepath.Join(dir, fmt.Sprintf("emu-%d-%d.so", os.Getpid(), serial.Add(1)))
	c := cc.Compiler{Path: "g++", Flags: []string{"-x", "c++", "-O1", "-fPIC", "-shared", "-Wall", "-Wno-unknown-pragmas", "-Wno-unused-variable", "-Wno-unused-parameter", "-Werror"}}
	if err := c.Compile(ctx, b.String(), out); err != nil {
		return nil, errors.Wrap(err, "compiling the CUDA module for the host")
	}
	lib, err := cc.Open(out)
	if err != nil {
		return nil, err
	}
	fn, err := lib.Symbol("nf_emulate")
	if err != nil {
		return nil, err
	}
	return &Kernel{fn: fn, nbufs: nbufs}, nil
}

// errLen bounds the error message of a run.
const errLen = 256

// Run runs every launch of the module on bufs, one pointer per tensor
// (Go memory pinned by the caller). A barrier or shuffle that the threads
// do not all reach is an error.
func (k *Kernel) Run(bufs []unsafe.Pointer) error {
	if len(bufs) != k.nbufs {
		return errors.Errorf("cudaemu: %d buffers for a kernel of %d", len(bufs), k.nbufs)
	}
	msg := make([]byte, errLen)
	var pin runtime.Pinner
	pin.Pin(&msg[0])
	defer pin.Unpin()
	args := append(slices.Clone(bufs), unsafe.Pointer(&msg[0]))
	cc.CallRaw(k.fn, unsafe.Pointer(&args[0]), 1)
	if n := bytes.IndexByte(msg, 0); n > 0 {
		return errors.Errorf("cudaemu: %s", msg[:n])
	}
	return nil
}
