package cc

import (
	"context"
	"syscall"
)

// Background work (the tuner's and the picks' builds while training runs)
// compiles at a low CPU priority (LowPriority), so that the compiler takes
// the cores the training leaves idle and little of those it uses.

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

// SetThreadPriority sets the nice value of the calling OS thread (Linux
// keeps one per thread; threads it starts later, such as OpenMP's team,
// inherit it). The caller must be locked to its thread
// (runtime.LockOSThread). Errors are ignored: a priority is a courtesy.
func SetThreadPriority(nice int) {
	_ = syscall.Setpriority(syscall.PRIO_PROCESS, syscall.Gettid(), nice)
}

// lower sets the nice value of every process in process group pgid (the
// compiler driver's group): the driver and the children it started
// already (cc1, as, ld), which a call on the driver alone would miss
// when it ran after the driver forked them; later children inherit it.
func lower(pgid int) {
	_ = syscall.Setpriority(syscall.PRIO_PGRP, pgid, LowPriority)
}
