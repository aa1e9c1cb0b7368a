package main

/*
#cgo CFLAGS: -O3
#include <stdint.h>
#include <stdlib.h>
*/
import "C"

import (
	"fmt"
	"runtime/debug"
	"unsafe"

	"github.com/golang/protobuf/proto"

	"github.com/neoflow/neoflow/api"
	"github.com/neoflow/neoflow/torchbridge"
)

var rt = torchbridge.Default

//export nf_init
func nf_init(req unsafe.Pointer, reqLen C.int64_t, out **C.char, outLen *C.int64_t) *C.char {
	return control(req, reqLen, out, outLen, &api.InitRequest{}, func(m proto.Message) (proto.Message, error) {
		return rt.Init(m.(*api.InitRequest))
	})
}

//export nf_define
func nf_define(req unsafe.Pointer, reqLen C.int64_t, out **C.char, outLen *C.int64_t) *C.char {
	return control(req, reqLen, out, outLen, &api.DefineRequest{}, func(m proto.Message) (proto.Message, error) {
		return rt.Define(m.(*api.DefineRequest))
	})
}

//export nf_specialize
func nf_specialize(req unsafe.Pointer, reqLen C.int64_t, out **C.char, outLen *C.int64_t) *C.char {
	return control(req, reqLen, out, outLen, &api.SpecializeRequest{}, func(m proto.Message) (proto.Message, error) {
		return rt.Specialize(m.(*api.SpecializeRequest))
	})
}

//export nf_grad
func nf_grad(req unsafe.Pointer, reqLen C.int64_t, out **C.char, outLen *C.int64_t) *C.char {
	return control(req, reqLen, out, outLen, &api.GradRequest{}, func(m proto.Message) (proto.Message, error) {
		return rt.Grad(m.(*api.GradRequest))
	})
}

//export nf_transform
func nf_transform(req unsafe.Pointer, reqLen C.int64_t, out **C.char, outLen *C.int64_t) *C.char {
	return control(req, reqLen, out, outLen, &api.TransformRequest{}, func(m proto.Message) (proto.Message, error) {
		return rt.Transform(m.(*api.TransformRequest))
	})
}

//export nf_release
func nf_release(req unsafe.Pointer, reqLen C.int64_t, out **C.char, outLen *C.int64_t) *C.char {
	return control(req, reqLen, out, outLen, &api.ReleaseRequest{}, func(m proto.Message) (proto.Message, error) {
		return rt.Release(m.(*api.ReleaseRequest))
	})
}

// nf_release_kernel drops one holder of a kernel id that nf_specialize
// handed out (Python's Kernel object, when it is collected).
//
//export nf_release_kernel
func nf_release_kernel(kernel C.uint64_t) (errText *C.char) {
	defer recoverInto(&errText)
	if err := rt.ReleaseKernel(uint64(kernel)); err != nil {
		return C.CString(err.Error())
	}
	return nil
}

// nf_interrupt stops the kernel builds in flight (Ctrl-C in Python): their
// compilers are killed and their calls return an error.
//
//export nf_interrupt
func nf_interrupt() {
	rt.Interrupt()
}

// nf_shutdown kills the C compilers still running (background builds that
// an interrupt leaves alone) and keeps new ones from starting: Python calls
// it as the process exits.
//
//export nf_shutdown
func nf_shutdown() {
	rt.Shutdown()
}

// nf_launch_go runs a kernel: bufs points to nbufs data pointers. Its
// integers are C ints, the type ctypes passes a Python int as when a
// function declares no argument types: converting through declared types
// cost about 1 us a call, as much as the rest of the launch (kernel ids
// are small, table indices). Python calls nf_launch (launch.c), which runs
// the C kernels it knows without entering Go and calls this for the rest.
//
//export nf_launch_go
func nf_launch_go(kernel C.int, bufs unsafe.Pointer, nbufs C.int, nthreads C.int) (errText *C.char) {
	defer recoverInto(&errText)
	if err := rt.Launch(uint64(kernel), bufs, int(nbufs), int(nthreads)); err != nil {
		return C.CString(err.Error())
	}
	return nil
}

// nf_launch_cuda runs a CUDA kernel on stream (a CUstream handle, the
// current stream of PyTorch on the kernel's device): bufs points to nbufs
// device pointers (a kernel with symbolic extents: then its sizes' values).
// In the CPU-only build it returns an error.
//
//export nf_launch_cuda
func nf_launch_cuda(kernel C.uint64_t, bufs unsafe.Pointer, nbufs C.int64_t, stream C.uintptr_t) (errText *C.char) {
	defer recoverInto(&errText)
	if err := rt.LaunchCUDA(uint64(kernel), bufs, int(nbufs), uintptr(stream)); err != nil {
		return C.CString(err.Error())
	}
	return nil
}

// nf_free releases memory returned by any nf_* function.
//
//export nf_free
func nf_free(p unsafe.Pointer) {
	C.free(p)
}

// control decodes a request into msg, runs fn and encodes its response.
func control(req unsafe.Pointer, reqLen C.int64_t, out **C.char, outLen *C.int64_t,
	msg proto.Message, fn func(proto.Message) (proto.Message, error)) (errText *C.char) {
	defer recoverInto(&errText)
	*out, *outLen = nil, 0
	if err := proto.Unmarshal(C.GoBytes(req, C.int(reqLen)), msg); err != nil {
		return C.CString(fmt.Sprintf("neoflow: malformed %T: %v", msg, err))
	}
	resp, err := fn(msg)
	if err != nil {
		return C.CString(err.Error())
	}
	b, err := proto.Marshal(resp)
	if err != nil {
		return C.CString(fmt.Sprintf("neoflow: encoding %T: %v", resp, err))
	}
	*out = (*C.char)(C.CBytes(b))
	*outLen = C.int64_t(len(b))
	return nil
}

// recoverInto turns a panic into an error text.
func recoverInto(errText **C.char) {
	if r := recover(); r != nil {
		*errText = C.CString(fmt.Sprintf("neoflow: internal error (panic): %v\n%s", r, debug.Stack()))
	}
}
