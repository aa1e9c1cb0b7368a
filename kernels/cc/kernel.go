package cc

import (
	"unsafe"

	"github.com/pkg/errors"
)

// Kernel is a kernel function of a loaded library.
type Kernel struct {
	Lib    *Library
	Symbol string
	// Fn is the function's address, for CallRaw or a direct C call.
	Fn uintptr
	// NumBufs is the number of buffers the kernel takes.
	NumBufs int
}

// Kernel looks up the kernel symbol, which takes nbufs buffers.
func (l *Library) Kernel(symbol string, nbufs int) (*Kernel, error) {
	fn, err := l.Symbol(symbol)
	if err != nil {
		return nil, err
	}
	return &Kernel{Lib: l, Symbol: symbol, Fn: fn, NumBufs: nbufs}, nil
}

// Launch runs the kernel on bufs, one non-nil pointer per buffer, with
// nthreads threads. Buffers in Go memory must be pinned (runtime.Pinner)
// for the duration of the call, as cgo requires of Go pointers stored in
// memory passed to C.
func (k *Kernel) Launch(bufs []unsafe.Pointer, nthreads int) error {
	if len(bufs) != k.NumBufs {
		return errors.Errorf("kernel %s takes %d buffers, got %d", k.Symbol, k.NumBufs, len(bufs))
	}
	for i, p := range bufs {
		if p == nil {
			return errors.Errorf("kernel %s: buffer %d is nil", k.Symbol, i)
		}
	}
	if len(bufs) == 0 {
		var none unsafe.Pointer
		CallRaw(k.Fn, unsafe.Pointer(&none), int64(nthreads))
		return nil
	}
	CallRaw(k.Fn, unsafe.Pointer(unsafe.SliceData(bufs)), int64(nthreads))
	return nil
}
