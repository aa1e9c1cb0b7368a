package main

/*
extern int nf_worker_busy;
*/
import "C"

import "sync/atomic"

// The background worker's state, published to Python as the C int
// nf_worker_busy (busy.c): Python reads it on every C kernel launch, where
// a call into Go would cost a microsecond. It counts the worker's changes
// (odd: busy), so that Python can tell one job from the next: a thread
// count the caller sets during a job is kept for that job only.
func init() {
	rt.OnBusy(publishBusy)
}

// publishBusy makes nf_worker_busy odd while the worker is busy, one more
// at each change.
func publishBusy(busy bool) {
	p := (*int32)(&C.nf_worker_busy)
	for {
		v := atomic.LoadInt32(p)
		if (v&1 == 1) == busy || atomic.CompareAndSwapInt32(p, v, v+1) {
			return
		}
	}
}
