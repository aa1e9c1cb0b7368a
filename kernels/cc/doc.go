// Package cc compiles generated C kernels into shared objects, loads them
// and calls them.
//
// Compiler runs the system C compiler. Its configuration comes from the
// caller (torchbridge maps NEOFLOW_CC to Compiler.Path); the default is
// "cc" with DefaultFlags, and "-lm" is always linked. Identity describes
// the compiler for cache keys without running it.
//
// Open loads a shared object with dlopen(RTLD_NOW|RTLD_LOCAL); each
// Library.Close undoes one Open, the last unloads it. Kernel.Launch and
// CallRaw call a kernel
//
//	void <symbol>(void **bufs, int64_t nthreads);
//
// through a small C trampoline. CallRaw allocates nothing, so a C caller
// (capi) can pass the void** it received as is.
//
// Background work runs at LowPriority: WithLowPriority marks a context,
// under which Compile starts the compiler from a thread at that priority
// (the compiler and its children are born at it; WithIdleCompiles adds
// SCHED_IDLE, with a fallback for a starved compiler), and
// OnOwnThread runs a function on a C thread of its own at it (the
// background worker, whose OpenMP pool then ends with it). dl.go and
// thread.go use cgo.
package cc
