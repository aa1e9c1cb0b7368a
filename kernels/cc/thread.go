package cc

/*
#include <stdint.h>
int nf_run_on_thread(uintptr_t h);
*/
import "C"

import (
	"context"
	"runtime/cgo"
)

// OnOwnThread runs fn on a thread of its own, started for it and ended
// after it, at LowPriority when ctx is marked by WithLowPriority, and
// returns fn's panic, if any, as its own.
//
// What fn leaves on its thread ends with it. OpenMP (libgomp) keeps a
// pool of worker threads for every thread that starts a parallel region,
// until that thread ends, and each pool changes how every team in the
// process waits (see torchbridge's background worker). The thread is a C
// thread: a Go thread that ends locked (runtime.LockOSThread) may be the
// runtime's first thread, which Go keeps, pool and all.
func OnOwnThread(ctx context.Context, fn func()) {
	onThread(&threadRun{fn: fn, low: IsLowPriority(ctx)})
}

// onIdleThread runs fn as OnOwnThread does, on a thread at LowPriority
// under SCHED_IDLE (setThreadIdle).
func onIdleThread(fn func()) {
	onThread(&threadRun{fn: fn, low: true, idle: true})
}

// onThread runs run on a thread of its own.
func onThread(run *threadRun) {
	h := cgo.NewHandle(run)
	defer h.Delete()
	if rc := C.nf_run_on_thread(C.uintptr_t(h)); rc != 0 {
		// No thread to be had (resource limits): run here rather than fail.
		run.call()
	}
	if run.panicked != nil {
		panic(run.panicked)
	}
}

// threadRun is a call of OnOwnThread.
type threadRun struct {
	fn       func()
	low      bool
	idle     bool
	panicked any
}

// call runs fn, keeping its panic.
func (r *threadRun) call() {
	defer func() { r.panicked = recover() }()
	r.fn()
}

//export nfRunOnThread
func nfRunOnThread(h C.uintptr_t) {
	run := cgo.Handle(h).Value().(*threadRun)
	if run.low {
		setThreadPriority(LowPriority)
	}
	if run.idle {
		setThreadIdle()
	}
	run.call()
}
