// nf_launch: a C kernel's launch, without entering Go.
//
// Python calls nf_launch for every C kernel it runs, a few hundred times a
// training step. Through Go, each call became a cgo callback that called
// the kernel as a cgo call: while the kernel ran, its P sat in a system
// call, Go's monitor thread took it back after 20 us and polled every 20
// us from then on, and the calling thread got a P back when the kernel
// returned. That thread woke about 80 times per LLTM training step and
// took 1.9 ms of CPU of each 10-13 ms step, on the cores the kernels' own
// OpenMP team ran on (bench size, batch 16, 2-core Xeon).
//
// So the Go core keeps a copy of its launch table here (capi/launch.go,
// torchbridge.Runtime.OnLaunchEntry): per kernel id its entry point and
// its buffer count, the entry point stored last and read first. A launch
// whose kernel is in the copy, with the buffer count it takes, runs here,
// with the thread count the Go core would give it (torchbridge's
// ThreadsBeside: one fewer while the background worker runs a job, one
// fewer per foreground compiler, at least one). Everything else (an
// unknown or unloaded id, a CUDA kernel, a wrong buffer count, an id past
// the copy's size) goes to Go's nf_launch_go, which reports the error.

#include <stdint.h>
#include "_cgo_export.h"

typedef void (*nf_kernel_fn)(void **bufs, int64_t nthreads);

#define NF_ENTRIES 65536

static struct {
	uintptr_t fn;
	int nbufs;
} nf_entries[NF_ENTRIES];

extern int nf_worker_busy;
int nf_foreground; // foreground compilers (kernels/cc.Foreground), written by Go

void nf_set_entry(uint64_t id, uintptr_t fn, int nbufs)
{
	if (id >= NF_ENTRIES)
		return;
	if (fn != 0)
		__atomic_store_n(&nf_entries[id].nbufs, nbufs, __ATOMIC_RELAXED);
	__atomic_store_n(&nf_entries[id].fn, fn, __ATOMIC_RELEASE);
}

// nf_launch_threads is the thread count a launch asked for nthreads runs
// with (torchbridge.ThreadsBeside, checked against it in launch_test.go).
int nf_launch_threads(int nthreads)
{
	int t = nthreads;
	if (t > 1 && (__atomic_load_n(&nf_worker_busy, __ATOMIC_RELAXED) & 1))
		t--;
	int fg = __atomic_load_n(&nf_foreground, __ATOMIC_RELAXED);
	if (fg > 0 && t > 1)
		t -= fg < t - 1 ? fg : t - 1;
	return t < 1 ? 1 : t;
}

char *nf_launch(int kernel, void *bufs, int nbufs, int nthreads)
{
	if (kernel > 0 && kernel < NF_ENTRIES) {
		uintptr_t fn = __atomic_load_n(&nf_entries[kernel].fn, __ATOMIC_ACQUIRE);
		if (fn != 0 && __atomic_load_n(&nf_entries[kernel].nbufs, __ATOMIC_RELAXED) == nbufs) {
			((nf_kernel_fn)fn)((void **)bufs, nf_launch_threads(nthreads));
			return 0;
		}
	}
	return nf_launch_go(kernel, bufs, nbufs, nthreads);
}
