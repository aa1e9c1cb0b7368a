package cudaemu

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"unsafe"

	"github.com/pkg/errors"

	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/kernels/cc"
	"github.com/neoflow/neoflow/kernels/cgen"
)

// prelude makes CUDA C compile as host C++.
const prelude = `#include <math.h>
#include <stdint.h>
#include <string.h>
struct nf_dim3 { unsigned x, y, z; };
static nf_dim3 threadIdx, blockIdx, blockDim, gridDim;
#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(n)
#define __restrict__ __restrict
static inline float __int_as_float(int i) { float f; memcpy(&f, &i, sizeof f); return f; }
static inline float atomicAdd(float *p, float v) { float o = *p; *p = o + v; return o; }
static inline double atomicAdd(double *p, double v) { double o = *p; *p = o + v; return o; }
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
// spec.Tensors, with g++ into dir.
func Compile(ctx context.Context, spec *ir.Spec, mod *cgen.CUDAModule, dir string) (*Kernel, error) {
	var b strings.Builder
	b.WriteString(prelude)
	b.WriteString(mod.Source)
	ctype := "float"
	if spec.DType == ir.Float64 {
		ctype = "double"
	}
	args := make([]string, len(spec.Tensors))
	for i, t := range spec.Tensors {
		cst := ""
		if t.Role == ir.RoleInput {
			cst = "const "
		}
		args[i] = fmt.Sprintf("(%s%s *)bufs[%d]", cst, ctype, i)
	}
	b.WriteString("\nextern \"C\" void nf_emulate(void **bufs, int64_t nthreads)\n{\n\t(void)nthreads;\n")
	for _, l := range mod.Launches {
		fmt.Fprintf(&b, "\tgridDim.x = %d; blockDim.x = %d;\n", l.Blocks, l.Threads)
		fmt.Fprintf(&b, "\tfor (unsigned b = 0; b < %d; b++)\n\t\tfor (unsigned t = 0; t < %d; t++) {\n", l.Blocks, l.Threads)
		fmt.Fprintf(&b, "\t\t\tblockIdx.x = b; threadIdx.x = t;\n\t\t\t%s(%s);\n\t\t}\n", l.Entry, strings.Join(args, ", "))
	}
	b.WriteString("}\n")
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
	return &Kernel{fn: fn, nbufs: len(spec.Tensors)}, nil
}

// Run runs every launch of the module on bufs, one pointer per tensor
// (Go memory pinned by the caller).
func (k *Kernel) Run(bufs []unsafe.Pointer) error {
	if len(bufs) != k.nbufs {
		return errors.Errorf("cudaemu: %d buffers for a kernel of %d", len(bufs), k.nbufs)
	}
	cc.CallRaw(k.fn, unsafe.Pointer(&bufs[0]), 1)
	return nil
}
