//go:build cuda

package cudadrv

import (
	"unsafe"

	"github.com/pkg/errors"
	"gorgonia.org/cu"
)

// Bench runs modules on one device for the tuner, off the launch path:
// on device buffers of its own and on a private non-blocking stream
// (never the default stream, and never one of PyTorch's), timing each of
// a module's functions with CUDA events. Unlike Launch it allocates and
// synchronizes. Close frees it.
type Bench struct {
	ordinal int
	ctx     cu.CUContext
	stream  cu.Stream
	bufs    []cu.DevicePtr
	sizes   []int64
	ptrs    []uintptr
	events  []cu.Event
}

// NewBench allocates one device buffer of each size in bytes on device
// ordinal, and a stream.
func NewBench(ordinal int, sizes []int64) (*Bench, error) {
	defer lockThread()()
	ctx, err := makeCurrent(ordinal)
	if err != nil {
		return nil, err
	}
	b := &Bench{ordinal: ordinal, ctx: ctx, sizes: sizes}
	if b.stream, err = cu.MakeStream(cu.NonBlocking); err != nil {
		return nil, errors.Wrapf(err, "creating a stream on CUDA device %d", ordinal)
	}
	for _, n := range sizes {
		p, err := cu.MemAlloc(max(n, 16))
		if err != nil {
			b.free()
			return nil, errors.Wrapf(err, "allocating %d bytes on CUDA device %d for tuning", n, ordinal)
		}
		b.bufs = append(b.bufs, p)
		b.ptrs = append(b.ptrs, p.Uintptr())
	}
	return b, nil
}

// enter locks the goroutine to its thread and makes the bench's context
// current there; the returned function unlocks.
func (b *Bench) enter() (func(), error) {
	leave := lockThread()
	if err := cu.SetCurrentContext(b.ctx); err != nil {
		leave()
		return nil, errors.Wrapf(err, "making CUDA device %d current", b.ordinal)
	}
	return leave, nil
}

// Write copies buffer i's size in bytes from host memory src to the
// device, and waits.
func (b *Bench) Write(i int, src unsafe.Pointer) error {
	leave, err := b.enter()
	if err != nil {
		return err
	}
	defer leave()
	if err := cu.MemcpyHtoDAsync(b.bufs[i], src, b.sizes[i], b.stream); err != nil {
		return errors.Wrapf(err, "copying to CUDA device %d", b.ordinal)
	}
	return errors.Wrapf(b.stream.Synchronize(), "copying to CUDA device %d", b.ordinal)
}

// Read copies buffer i from the device to host memory dst, and waits.
func (b *Bench) Read(i int, dst unsafe.Pointer) error {
	leave, err := b.enter()
	if err != nil {
		return err
	}
	defer leave()
	if err := cu.MemcpyDtoHAsync(dst, b.bufs[i], b.sizes[i], b.stream); err != nil {
		return errors.Wrapf(err, "copying from CUDA device %d", b.ordinal)
	}
	return errors.Wrapf(b.stream.Synchronize(), "copying from CUDA device %d", b.ordinal)
}

// Time runs m once on the bench's buffers (one per argument, in order)
// and returns the seconds each of its functions took, measured by CUDA
// events recorded on the stream around each launch. It waits for the
// run; an error of the run (an illegal address, say) is returned.
func (b *Bench) Time(m *Module) ([]float64, error) {
	if m.ordinal != b.ordinal {
		return nil, errors.Errorf("a module of CUDA device %d timed on device %d", m.ordinal, b.ordinal)
	}
	leave, err := b.enter()
	if err != nil {
		return nil, err
	}
	defer leave()
	for len(b.events) < len(m.fns)+1 {
		ev, err := cu.MakeEvent(cu.DefaultEvent)
		if err != nil {
			return nil, errors.Wrapf(err, "creating a CUDA event on device %d", b.ordinal)
		}
		b.events = append(b.events, ev)
	}
	if err := b.events[0].Record(b.stream); err != nil {
		return nil, errors.Wrap(err, "recording a CUDA event")
	}
	err = m.launch(b.stream, b.ptrs, func(i int) error {
		return errors.Wrap(b.events[i+1].Record(b.stream), "recording a CUDA event")
	})
	if err != nil {
		return nil, err
	}
	if err := b.stream.Synchronize(); err != nil {
		return nil, errors.Wrapf(err, "running on CUDA device %d", b.ordinal)
	}
	out := make([]float64, len(m.fns))
	for i := range out {
		ms, err := b.events[i].Elapsed(b.events[i+1])
		if err != nil {
			return nil, errors.Wrap(err, "reading CUDA event times")
		}
		out[i] = ms / 1e3
	}
	return out, nil
}

// Close frees the bench's buffers, events and stream.
func (b *Bench) Close() {
	if leave, err := b.enter(); err == nil {
		defer leave()
		b.free()
	}
}

func (b *Bench) free() {
	_ = b.stream.Synchronize()
	for _, p := range b.bufs {
		_ = cu.MemFree(p)
	}
	for i := range b.events {
		_ = cu.DestroyEvent(&b.events[i])
	}
	_ = b.stream.Destroy()
	b.bufs, b.ptrs, b.events = nil, nil, nil
}
