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
	cc.CallRaw(l.fn.Load(), bufs, int64(max(nthreads, 1)))
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
