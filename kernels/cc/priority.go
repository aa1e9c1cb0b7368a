package cc

import (
	"context"
	"syscall"
)

// Background work (the tuner's and the picks' builds and timings while
// training runs) runs at a low CPU priority (LowPriority), so that it
// takes the cores the training leaves idle and little of those it uses.

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

// setThreadPriority sets the nice value of the calling OS thread (Linux
// keeps one per thread; threads it starts later, such as OpenMP's team,
// inherit it). The caller must be locked to its thread
// (runtime.LockOSThread). Errors are ignored: a priority is a courtesy.
func setThreadPriority(nice int) {
	_ = syscall.Setpriority(syscall.PRIO_PROCESS, syscall.Gettid(), nice)
}
