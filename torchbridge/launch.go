package torchbridge

import (
	"unsafe"

	"github.com/pkg/errors"

	"github.com/neoflow/neoflow/kernels/cc"
)

// Launch runs kernel id on nbufs buffer pointers (bufs points to an array of
// them, in the order of the SpecializeResponse's buffers) with nthreads
// threads. It does not allocate on success.
func (r *Runtime) Launch(id uint64, bufs unsafe.Pointer, nbufs int, nthreads int) error {
	l, err := r.launchable(id, nbufs)
	if err != nil {
		return err
	}
	if l.cuda.Load() != nil {
		return errors.Errorf("kernel %d is a CUDA kernel (device %d): launch it with nf_launch_cuda", id, l.device)
	}
	cc.CallRaw(l.fn.Load(), bufs, int64(r.launchThreads(nthreads)))
	return nil
}

// launchThreads is the threads a C kernel launch asked for nthreads runs
// with: one fewer while the background worker runs a job of background
// mode (a pick or a search: its compilers and the kernels it times), at
// least one.
//
// The worker's compilers run under SCHED_IDLE (kernels/cc), so that a
// training thread that wakes takes the CPU from them at once; at nice 10
// the training's OpenMP thread waited for the scheduler's tick instead, 4
// ms and more a parallel region. But on a machine the training keeps busy
// a SCHED_IDLE compiler gets no CPU at all: libgomp's threads spin between
// the training's parallel regions, and in 60 s of LLTM training on two
// cores no pick finished. Launching on one thread fewer leaves the worker
// a core while it has work: on that machine the kernels run about twice as
// long (LLTM's steps 25-31 ms instead of 13) until the tuning ends, at 84
// s instead of 92-112 (bench/results/dynamic-2026-11-27-cpu-xeon.md).
// PyTorch's own operators of the training took every thread still, and
// the worker's threads stalled their OpenMP teams: single LLTM steps ran
// 4-11 times the final median. So the library publishes the worker's
// state (OnBusy, capi's nf_worker_busy) and Python lowers PyTorch's
// thread count by one meanwhile (neoflow/threadshare.py); the nthreads it
// passes stays PyTorch's count from before.
//
// While compilers that a caller waits for run (cc.Foreground: the
// gradient kernels built ahead during a first forward pass), a launch
// leaves one core to each, up to all but one thread. The compilers are on
// the critical path of the first step, and beside a launch on every core
// they ran at half speed or less: the OpenMP team's barrier waits for
// whichever of its threads a compiler has descheduled.
func (r *Runtime) launchThreads(nthreads int) int {
	return ThreadsBeside(nthreads, r.bg.busy.Load(), cc.Foreground())
}

// ThreadsBeside is launchThreads' count for nthreads asked, with the
// worker busy or not and compiles foreground compilers running.
func ThreadsBeside(nthreads int, busy bool, compiles int) int {
	if nthreads > 1 && busy {
		nthreads--
	}
	if compiles > 0 && nthreads > 1 {
		nthreads -= min(compiles, nthreads-1)
	}
	return max(nthreads, 1)
}

// launchable is kernel id's entry, checked to take nbufs buffers.
func (r *Runtime) launchable(id uint64, nbufs int) (*launchable, error) {
	table := *r.table.Load()
	if id == 0 || id >= uint64(len(table)) {
		return nil, errors.Errorf("unknown kernel id %d", id)
	}
	l := table[id]
	if l == nil {
		return nil, errors.Errorf("kernel %d was unloaded: no op held it (call the op again to load it)", id)
	}
	if nbufs != l.nbufs {
		return nil, errors.Errorf("kernel %d takes %d buffers, got %d", id, l.nbufs, nbufs)
	}
	return l, nil
}
