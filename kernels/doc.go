// Package kernels turns a specialized op (ir.Spec) into a callable native
// kernel: the build passes of core/pipeline (schedule, lower, hoist-guards,
// version-lanes, fuse-nests, parallel-rows, hoist-invariants,
// check-bounds) -> cgen.Render -> the on-disk
// cache (compiling with the system C compiler on a miss) -> dlopen.
//
// A kernel has the ABI
//
//	void <symbol>(void **bufs, int64_t nthreads);
//
// with one pointer per entry of spec.Tensors (inputs in Op.Inputs order,
// then outputs, then temporaries), each a dense row-major, suitably aligned
// array of spec.DType. The caller allocates every buffer, temporaries
// included (their contents need not be initialized: every statement
// writes its whole tensor before anything reads it). Outputs and
// temporaries must not alias each other or the inputs.
//
// The symbol is "nf_<op name>_<first 16 hex digits of the cache key>"; the
// key is computed over the source rendered with the placeholder symbol
// PlaceholderSymbol, so it is a function of the op, shapes, dtype and
// schedule (and compiler, flags, version, host), and the compiled source
// is that source with the symbol substituted.
//
// Builder.BuildProfiled builds the profiled variant the autotuner times
// (cgen.RenderProfiled): one more buffer, last, a float64 array with one
// entry per statement to which each launch adds the seconds the statement
// took. Its canonical source differs, so it has its own cache key.
//
// Builder.BuildKernels (BuildBatch, and BuildKernelsParallel for several
// at once) builds a Batch of C kernels into one shared object: one
// translation unit (cgen.RenderBatch: one prelude, a function each, under
// each kernel's own symbol), one compiler run, cached under a key over
// all their sources. A compiler run costs about 0.04 s before any kernel
// (the compiler's start, the headers), as much as a small kernel; the
// fusion reward's rates kernels, a search's candidates and a pick's are
// built so.
//
// Builder.BuildCUDA builds the CUDA kernel of a spec for one GPU
// architecture: loops.GPUSchedule (or given schedules) -> cgen.RenderCUDA
// -> NVRTC (package nvrtc, dlopen'd from Options.NVRTCDirs) -> a CUBIN
// (or PTX) image in the same cache, keyed by the source, NVRTC's version,
// options and target. Loading and launching it is package cudadrv's job,
// in the CUDA build of the library only.
package kernels
