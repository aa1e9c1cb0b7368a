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
	table := *r.table.Load()
	if id == 0 || id >= uint64(len(table)) {
		return errors.Errorf("unknown kernel id %d", id)
	}
	l := table[id]
	if nbufs != l.nbufs {
		return errors.Errorf("kernel %d takes %d buffers, got %d", id, l.nbufs, nbufs)
	}
	if nthreads < 1 {
		nthreads = 1
	}
	cc.CallRaw(l.fn, bufs, int64(nthreads))
	return nil
}
