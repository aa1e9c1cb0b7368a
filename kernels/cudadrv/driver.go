//go:build cuda

package cudadrv

import (
	"runtime"
	"sync"
	"unsafe"

	"github.com/pkg/errors"
	"gorgonia.org/cu"

	"github.com/neoflow/neoflow/kernels/cgen"
)

// Available reports whether this build has the CUDA driver binding.
func Available() bool { return true }

// contexts holds the retained primary context of each device used; they
// are never released (PyTorch keeps them alive too).
var contexts struct {
	sync.Mutex
	ctx map[int]cu.CUContext
}

// makeCurrent makes device ordinal's primary context current on the
// calling thread and returns it. A context is current per OS thread, so
// the caller keeps its goroutine on the thread (lockThread) until its
// last driver call.
func makeCurrent(ordinal int) (cu.CUContext, error) {
	ctx, err := primary(ordinal)
	if err != nil {
		return ctx, err
	}
	return ctx, errors.Wrapf(cu.SetCurrentContext(ctx), "making CUDA device %d current", ordinal)
}

// lockThread keeps the calling goroutine on its OS thread, where the
// context it makes current stays current, until the returned function is
// called. Calls from Python already run locked to the caller's thread;
// the lock nests, so this guards the Go callers too.
func lockThread() func() {
	runtime.LockOSThread()
	return runtime.UnlockOSThread
}

// primary is device ordinal's primary context, retained on first use.
func primary(ordinal int) (cu.CUContext, error) {
	contexts.Lock()
	defer contexts.Unlock()
	if ctx, ok := contexts.ctx[ordinal]; ok {
		return ctx, nil
	}
	var ctx cu.CUContext
	n, err := cu.NumDevices()
	if err != nil {
		return ctx, errors.Wrap(err, "counting CUDA devices")
	}
	if ordinal < 0 || ordinal >= n {
		return ctx, errors.Errorf("no CUDA device %d: this machine has %d", ordinal, n)
	}
	if ctx, err = cu.Device(ordinal).RetainPrimaryCtx(); err != nil {
		return ctx, errors.Wrapf(err, "retaining the primary context of CUDA device %d", ordinal)
	}
	if contexts.ctx == nil {
		contexts.ctx = map[int]cu.CUContext{}
	}
	contexts.ctx[ordinal] = ctx
	return ctx, nil
}

// Arch is the compute capability of device ordinal, times ten (90 for
// an H100).
func Arch(ordinal int) (int, error) {
	defer lockThread()()
	if _, err := makeCurrent(ordinal); err != nil {
		return 0, err
	}
	d := cu.Device(ordinal)
	ma, err := d.Attribute(cu.ComputeCapabilityMajor)
	if err != nil {
		return 0, errors.Wrapf(err, "CUDA device %d", ordinal)
	}
	mi, err := d.Attribute(cu.ComputeCapabilityMinor)
	if err != nil {
		return 0, errors.Wrapf(err, "CUDA device %d", ordinal)
	}
	return ma*10 + mi, nil
}

// Name is the name of device ordinal ("NVIDIA H100 80GB HBM3").
func Name(ordinal int) (string, error) {
	defer lockThread()()
	if _, err := makeCurrent(ordinal); err != nil {
		return "", err
	}
	name, err := cu.Device(ordinal).Name()
	return name, errors.Wrapf(err, "CUDA device %d", ordinal)
}

// Module is a module loaded on one device, with its functions in launch
// order.
type Module struct {
	ordinal  int
	ctx      cu.CUContext // the device's primary context
	mod      cu.Module
	fns      []cu.Function
	launches []cgen.Launch
}

// Load loads a module image (CUBIN, or NUL-terminated PTX) on device
// ordinal and resolves the entry of every launch.
func Load(ordinal int, image []byte, launches []cgen.Launch) (*Module, error) {
	defer lockThread()()
	ctx, err := makeCurrent(ordinal)
	if err != nil {
		return nil, err
	}
	mod, err := cu.LoadData(string(image))
	if err != nil {
		return nil, errors.Wrapf(err, "loading a CUDA module on device %d", ordinal)
	}
	m := &Module{ordinal: ordinal, ctx: ctx, mod: mod, launches: launches}
	for _, l := range launches {
		fn, err := mod.Function(l.Entry)
		if err != nil {
			_ = mod.Unload()
			return nil, errors.Wrapf(err, "CUDA module: function %s", l.Entry)
		}
		m.fns = append(m.fns, fn)
	}
	return m, nil
}

// Unload unloads the module from its device; it must not be launched
// again. Kernels that ops launch stay loaded for the process's life; the
// tuner unloads each candidate it has timed.
func (m *Module) Unload() error {
	defer lockThread()()
	if _, err := makeCurrent(m.ordinal); err != nil {
		return err
	}
	return errors.Wrapf(m.mod.Unload(), "unloading a CUDA module on device %d", m.ordinal)
}

// maxArgs bounds the arguments of a launch kept on the stack.
const maxArgs = 64

// Launch runs the module's functions in order on stream (a CUstream
// handle from PyTorch) with ptrs, one device pointer per argument. It
// neither synchronizes nor allocates device memory, and takes no lock.
func (m *Module) Launch(stream uintptr, ptrs []uintptr) error {
	defer lockThread()()
	if err := cu.SetCurrentContext(m.ctx); err != nil {
		return errors.Wrapf(err, "making CUDA device %d current", m.ordinal)
	}
	// cu.Stream holds one CUstream; PyTorch's handle is that pointer.
	return m.launch(*(*cu.Stream)(unsafe.Pointer(&stream)), ptrs, nil)
}

// launch launches the module's functions in order on s, calling after
// (when not nil) once each function is launched, with its position. The
// module's context is current.
func (m *Module) launch(s cu.Stream, ptrs []uintptr, after func(i int) error) error {
	if len(ptrs) > maxArgs {
		return errors.Errorf("CUDA launch with %d buffers: at most %d", len(ptrs), maxArgs)
	}
	var buf [maxArgs]unsafe.Pointer
	args := buf[:len(ptrs)]
	for i := range ptrs {
		args[i] = unsafe.Pointer(&ptrs[i])
	}
	for i, fn := range m.fns {
		l := m.launches[i]
		if err := fn.Launch(int(l.Blocks), 1, 1, l.Threads, 1, 1, 0, s, args); err != nil {
			return errors.Wrapf(err, "launching %s on CUDA device %d", l.Entry, m.ordinal)
		}
		if after != nil {
			if err := after(i); err != nil {
				return err
			}
		}
	}
	return nil
}
