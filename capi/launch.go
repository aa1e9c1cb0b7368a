package main

/*
#include <stdint.h>
extern int nf_foreground;
void nf_set_entry(uint64_t id, uintptr_t fn, int nbufs);
int nf_launch_threads(int nthreads);
*/
import "C"

import (
	"sync/atomic"
	"unsafe"

	"github.com/neoflow/neoflow/kernels/cc"
)

// The launch table's copy in C (launch.c), which nf_launch runs C kernels
// from without entering Go, and the foreground compilers it counts.
func init() {
	rt.OnLaunchEntry(func(id uint64, fn uintptr, nbufs int) {
		C.nf_set_entry(C.uint64_t(id), C.uintptr_t(fn), C.int(nbufs))
	})
	cc.OnForeground(publishForeground)
}

// publishForeground writes the number of foreground compilers where
// nf_launch reads it.
func publishForeground(n int) {
	atomic.StoreInt32((*int32)(unsafe.Pointer(&C.nf_foreground)), int32(n))
}

// launchThreads is the thread count nf_launch runs a kernel asked for
// nthreads with.
func launchThreads(nthreads int) int {
	return int(C.nf_launch_threads(C.int(nthreads)))
}
