package kernels

import (
	"unsafe"

	"github.com/neoflow/neoflow/core/bounds"
	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/loops"
	"github.com/neoflow/neoflow/kernels/cache"
	"github.com/neoflow/neoflow/kernels/cc"
)

// Kernel is a loaded kernel of one spec.
type Kernel struct {
	spec *ir.Spec
	src  string
	key  string
	// portable is the key a bundle holds it under (cache.PortableKey);
	// path is its shared object.
	portable, path string
	outcome        cache.Outcome
	k              *cc.Kernel
	// sizes are the size variables of a kernel with symbolic extents, and
	// guards the conditions on their values a launch must meet.
	sizes  []string
	guards []bounds.Guard
	// fn is the loop nests the kernel was rendered from.
	fn *loops.Func
}

// Close releases the kernel's library (one Close per Build that returned
// it); the last Close unloads it. The kernel must not be launched after.
func (k *Kernel) Close() error { return k.k.Lib.Close() }

// Func is the loop nests the kernel was rendered from (a kernel with
// symbolic extents is loaded again from them for each size bucket whose
// schedules are picked, torchbridge/buckets.go).
func (k *Kernel) Func() *loops.Func { return k.fn }

// Source is the C source the kernel was compiled from.
func (k *Kernel) Source() string { return k.src }

// Symbol is the kernel function's name.
func (k *Kernel) Symbol() string { return k.k.Symbol }

// Key is the kernel's cache key.
func (k *Kernel) Key() string { return k.key }

// PortableKey is the kernel's key in a bundle (cache.PortableKey).
func (k *Kernel) PortableKey() string { return k.portable }

// Path is the kernel's shared object: its cache entry's, or the file a
// bundle extracted.
func (k *Kernel) Path() string { return k.path }

// Spec is the spec the kernel computes.
func (k *Kernel) Spec() *ir.Spec { return k.spec }

// Outcome says whether the kernel came from the cache or was compiled.
func (k *Kernel) Outcome() cache.Outcome { return k.outcome }

// NumBufs is the number of buffers Launch takes: len(Spec().Tensors),
// plus one (the sizes' values) for a kernel with symbolic extents, plus
// one (the timing buffer) for a profiled kernel.
func (k *Kernel) NumBufs() int { return k.k.NumBufs }

// Profiled reports whether the kernel was built by Builder.BuildProfiled:
// its last buffer is a float64 array with one entry per statement, to
// which every launch adds the seconds that statement took.
func (k *Kernel) Profiled() bool {
	n := len(k.spec.Tensors)
	if len(k.sizes) > 0 {
		n++
	}
	return k.k.NumBufs > n
}

// Sizes names the size variables of a kernel with symbolic extents
// (Builder.BuildSymbolic), in the order of its sizes buffer; nil for a
// kernel of fixed shapes.
func (k *Kernel) Sizes() []string { return k.sizes }

// Guards are the launch guards of a kernel with symbolic extents
// (loops.Func.Guards): conditions on its sizes' values that Shapes and
// LaunchSized check.
func (k *Kernel) Guards() []bounds.Guard { return k.guards }

// Addr is the kernel function's address, to call it from C directly or
// with cc.CallRaw(k.Addr(), bufs, nthreads), which allocates nothing.
func (k *Kernel) Addr() uintptr { return k.k.Fn }

// Launch runs the kernel on one pointer per spec.Tensors entry (and, for
// a profiled kernel, the timing buffer last) with nthreads threads
// (values below 1 mean 1). It checks the number of buffers and that none
// is nil; sizes, dtype and aliasing are the caller's responsibility. Go-allocated buffers must be pinned
// (runtime.Pinner) during the call.
func (k *Kernel) Launch(bufs []unsafe.Pointer, nthreads int) error {
	return k.k.Launch(bufs, nthreads)
}
