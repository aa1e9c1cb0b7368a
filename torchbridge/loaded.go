package torchbridge

import (
	"github.com/pkg/errors"
)

// DefaultIdleKernels is how many kernels no op uses stay loaded, by
// default, in case an op of the same kernel is defined again.
const DefaultIdleKernels = 64

// Kernels in the launch table are counted: every SpecializeResponse that
// hands out a kernel id is one holder (Python's Kernel object), released
// by ReleaseKernel. A kernel nobody holds goes to the idle list, most
// recently released last; past Config.IdleKernels the oldest idle kernel
// is unloaded (its library closed or its CUDA module unloaded) and its id
// refused from then on. A launch runs only through a held kernel, so none
// is in flight when its kernel is unloaded.

// registerKernel adds a loaded kernel to the launch table under key, held
// once, and returns its id. If key is loaded already, l is closed and the
// loaded one is held once more.
func (r *Runtime) registerKernel(key string, l *launchable) uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	if id, ok := r.byCache[key]; ok && r.acquire(id) {
		if l.close != nil {
			l.close()
		}
		return id
	}
	l.key, l.refs = key, 1
	old := *r.table.Load()
	next := make([]*launchable, len(old), len(old)+1)
	copy(next, old)
	next = append(next, l)
	r.table.Store(&next)
	id := uint64(len(next) - 1)
	r.byCache[key] = id
	r.publish(id, l)
	return id
}

// acquireKey holds the kernel loaded under key once more and returns its
// id, or 0 when none is loaded.
func (r *Runtime) acquireKey(key string) uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	if id, ok := r.byCache[key]; ok && r.acquire(id) {
		return id
	}
	return 0
}

// acquire holds kernel id once more, reviving it from the idle list; false
// when it is not loaded. r.mu must be held.
func (r *Runtime) acquire(id uint64) bool {
	table := *r.table.Load()
	if id == 0 || id >= uint64(len(table)) || table[id] == nil {
		return false
	}
	l := table[id]
	if l.refs == 0 {
		for i, x := range r.idle {
			if x == id {
				r.idle = append(r.idle[:i], r.idle[i+1:]...)
				break
			}
		}
	}
	l.refs++
	return true
}

// ReleaseKernel drops one holder of kernel id. A kernel nobody holds stays
// loaded among the idle ones until the idle limit unloads it.
func (r *Runtime) ReleaseKernel(id uint64) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	table := *r.table.Load()
	if id == 0 || id >= uint64(len(table)) || table[id] == nil || table[id].refs == 0 {
		return errors.Errorf("releasing kernel %d, which is not held", id)
	}
	l := table[id]
	l.refs--
	if l.refs > 0 {
		return nil
	}
	r.idle = append(r.idle, id)
	limit := r.cfg.IdleKernels
	for len(r.idle) > limit {
		r.unload(r.idle[0])
		r.idle = r.idle[1:]
	}
	return nil
}

// unload removes an idle kernel from the launch table and closes it.
// r.mu must be held.
func (r *Runtime) unload(id uint64) {
	old := *r.table.Load()
	l := old[id]
	next := make([]*launchable, len(old))
	copy(next, old)
	next[id] = nil
	r.table.Store(&next)
	r.publish(id, nil)
	delete(r.byCache, l.key)
	delete(r.symbolic, id)
	if l.close != nil {
		l.close()
	}
}

// OnLaunchEntry has f told every change of a C kernel's entry in the
// launch table: its id, its entry point and its buffer count when it is
// loaded or a tuned kernel is swapped in, fn 0 when it is unloaded (and
// for a CUDA kernel). The C API keeps a copy in C memory, so that a
// launch runs without entering Go (capi/launch.c). f runs with the
// runtime's lock held, in the order of the changes.
func (r *Runtime) OnLaunchEntry(f func(id uint64, fn uintptr, nbufs int)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.onEntry = f
}

// publish tells OnLaunchEntry's function kernel id's entry l (nil:
// unloaded). r.mu must be held.
func (r *Runtime) publish(id uint64, l *launchable) {
	if r.onEntry == nil {
		return
	}
	if l == nil || l.cuda.Load() != nil {
		r.onEntry(id, 0, 0)
		return
	}
	r.onEntry(id, l.fn.Load(), l.nbufs)
}

// LoadedKernels is the number of kernels in the launch table and how many
// of them are idle (held by nobody).
func (r *Runtime) LoadedKernels() (loaded, idle int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, l := range *r.table.Load() {
		if l != nil {
			loaded++
		}
	}
	return loaded, len(r.idle)
}
