package cc

import (
	"context"
	"syscall"
	"unsafe"
)

// Background work (the tuner's and the picks' builds and timings while
// training runs) runs at a low CPU priority (LowPriority), so that it
// takes the cores the training leaves idle and little of those it uses.
// The compilers the background tuner (NEOFLOW_TUNE=background) starts
// run under SCHED_IDLE besides (WithIdleCompiles, setThreadIdle). At nice
// 10 alone, a compiler on the second of two cores kept the training's
// OpenMP thread waiting for the scheduler's next tick (4 ms) when it woke
// for a parallel region: in 40 s of LLTM training beside the picks and the
// search, 412 launches of 0.3-0.5 ms kernels took 4.4 ms or, in bursts,
// 15.8 and 23.6 ms, and whole steps 100-290 ms against 15-20. A CPU that
// runs only SCHED_IDLE work counts as idle to a waking thread, which takes
// it at once: 13 such launches in 60 s. A SCHED_IDLE compiler gets no CPU
// while the training keeps every core busy, though, so the training's
// launches leave one free while that tuner works (torchbridge's
// launchThreads), and a compiler still running after IdleCompileLimit is
// stopped and run again at nice 10 alone (an unprivileged process cannot
// move a running one out of SCHED_IDLE). The default mode's picks keep
// nice 10 and every thread for the training: there, with a core left
// free, MI-LSTM's and subLSTM's steps ran 1.5 and 2 times as long while
// they were picked (their picks landed sooner, at 38 s against more than
// 40), a price a mode nobody asked to tune in should not charge. The
// worker's own thread stays at nice 10 only: it holds locks and a Go P
// that the training's calls may wait for.

// LowPriority is the nice value of background compilers and threads.
const LowPriority = 10

type lowPriorityKey struct{}

// WithLowPriority marks ctx: compilers started under it run at LowPriority.
func WithLowPriority(ctx context.Context) context.Context {
	return context.WithValue(ctx, lowPriorityKey{}, true)
}

// IsLowPriority reports whether ctx was marked by WithLowPriority.
func IsLowPriority(ctx context.Context) bool {
	low, _ := ctx.Value(lowPriorityKey{}).(bool)
	return low
}

type idleKey struct{}

// WithIdleCompiles marks ctx as WithLowPriority does, and compilers started
// under it run under SCHED_IDLE besides (see above).
func WithIdleCompiles(ctx context.Context) context.Context {
	return context.WithValue(WithLowPriority(ctx), idleKey{}, true)
}

// isIdle reports whether ctx was marked by WithIdleCompiles.
func isIdle(ctx context.Context) bool {
	idle, _ := ctx.Value(idleKey{}).(bool)
	return idle
}

// setThreadPriority sets the nice value of the calling OS thread (Linux
// keeps one per thread; threads it starts later, such as OpenMP's team,
// inherit it). The caller must be locked to its thread
// (runtime.LockOSThread). Errors are ignored: a priority is a courtesy.
func setThreadPriority(nice int) {
	_ = syscall.Setpriority(syscall.PRIO_PROCESS, syscall.Gettid(), nice)
}

// schedIdle is Linux's SCHED_IDLE scheduling policy.
const schedIdle = 5

// setThreadIdle puts the calling OS thread under SCHED_IDLE, which the
// processes it starts inherit: it runs only on a CPU nothing else wants,
// and any other thread that wakes there takes the CPU at once. The caller
// must be locked to its thread and hold nothing another thread waits for.
// Errors are ignored, as above.
func setThreadIdle() {
	var param struct{ priority int32 }
	_, _, _ = syscall.RawSyscall(syscall.SYS_SCHED_SETSCHEDULER, uintptr(syscall.Gettid()), schedIdle, uintptr(unsafe.Pointer(&param)))
}
