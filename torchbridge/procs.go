package torchbridge

// spareProcs is how many Ps (GOMAXPROCS) the runtime keeps beyond the
// calls' thread count.
//
// Every launch entered Go from the caller's thread (a cgo callback; C
// kernels now launch in C, capi/launch.c, but every other call still
// does), and that thread runs Go only once it holds a P. A goroutine that waits in a
// system call or a C call keeps its P until the runtime's monitor takes
// it back, and that monitor, when the process has been quiet, looks only
// every 10 ms. With GOMAXPROCS at the thread count (2 on two cores) the
// background worker often held both: one goroutine waiting for a
// compiler, one in a C call. The training thread then slept on a futex
// until the monitor came by: 11-19 ms sleeps in LLTM steps of 20-30 ms,
// with no thread of the process runnable meanwhile (sampled from
// /proc/PID/task/*/wchan), and single steps at 2.9-3.3 times the final
// median in bench/dynamic.py. With four spare Ps, two 70 s runs of the
// same probe saw no such sleep over 4 ms and a worst step of 1.7 times the
// final median. The spare Ps run Go code only when goroutines are ready to
// run; the work that uses the cores runs in C (kernels) and in compilers.
const spareProcs = 4

// goProcs is the GOMAXPROCS for calls that run on threads threads.
func goProcs(threads int) int {
	return threads + spareProcs
}
