// Package cc compiles generated C kernels into shared objects, loads them
// and calls them.
//
// Compiler runs the system C compiler. Its configuration comes from the
// caller (torchbridge maps NEOFLOW_CC to Compiler.Path); the default is
// "cc" with DefaultFlags, and "-lm" is always linked. Identity describes
// the compiler for cache keys without running it.
//
// Open loads a shared object with dlopen(RTLD_NOW|RTLD_LOCAL); libraries
// are never unloaded, so kernel pointers stay valid for the life of the
// process. Kernel.Launch and CallRaw call a kernel
//
//	void <symbol>(void **bufs, int64_t nthreads);
//
// through a small C trampoline. CallRaw allocates nothing, so a C caller
// (capi) can pass the void** it received as is. dl.go is the only file
// using cgo.
package cc
