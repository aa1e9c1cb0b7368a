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
	if l.cuda != nil {
		return errors.Errorf("kernel %d is a CUDA kernel (device %d): launch it with nf_launch_cuda", id, l.device)
	}
	cc.CallRaw(l.fn.Load(), bufs, int64(r.launchThreads(nthreads)))
	return nil
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

// launchThreads is the team size of a launch asked to run on nthreads
// threads: at least 1, and one fewer while the background worker compiles
// or times kernels, which holds a CPU: a team as large as the machine
// would wait at every barrier for the thread that CPU runs (LLTM training
// steps took 10 to 50 times their time on two cores while its picks ran).
func (r *Runtime) launchThreads(nthreads int) int {
	if r.bg.busy.Load() && nthreads > 1 {
		nthreads--
	}
	return max(nthreads, 1)
}
