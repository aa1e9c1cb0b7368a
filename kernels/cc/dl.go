package cc

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef void (*nf_kernel_fn)(void **bufs, int64_t nthreads);

static void nf_call(uintptr_t fn, void **bufs, int64_t nthreads)
{
	((nf_kernel_fn)fn)(bufs, nthreads);
}

// nf_dl_error copies dlerror() (thread-local) before returning to Go.
static char *nf_dl_error(void)
{
	const char *e = dlerror();
	return strdup(e ? e : "unknown dynamic loader error");
}

// nf_pin_openmp keeps the OpenMP runtime that kernels link loaded for
// good: unloading it while its thread pool lives (as the last dlclose of a
// kernel would) leaves those threads running unmapped code. RTLD_NOLOAD
// only touches a runtime that is loaded already; RTLD_NODELETE pins it.
static void nf_pin_openmp(void)
{
	static const char *const names[] = {"libgomp.so.1", "libomp.so", "libomp.so.5", "libiomp5.so"};
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		if (dlopen(names[i], RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE) != NULL) {
			// The extra reference is never dropped: the runtime stays.
		}
	}
	dlerror();
}

static void *nf_dlopen(const char *path, char **err)
{
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	*err = h ? NULL : nf_dl_error();
	if (h) {
		nf_pin_openmp();
	}
	return h;
}

static int nf_dlclose(void *h, char **err)
{
	int rc = dlclose(h);
	*err = rc == 0 ? NULL : nf_dl_error();
	return rc;
}

static void *nf_dlsym(void *h, const char *name, char **err)
{
	dlerror();
	void *p = dlsym(h, name);
	*err = p ? NULL : nf_dl_error();
	return p;
}
*/
import "C"

import (
	"sync"
	"unsafe"

	"github.com/pkg/errors"
)

// Library is a loaded shared object. Each Open of it must be matched by
// one Close; the last Close unloads it.
type Library struct {
	Path   string
	handle unsafe.Pointer
	refs   int // Opens not yet Closed; guarded by loaded
}

// loaded keeps every loaded library by handle (dlopen of a loaded path
// returns its handle again), with the count of its Opens.
var loaded struct {
	sync.Mutex
	libs map[unsafe.Pointer]*Library
}

// Open loads the shared object at path with dlopen(RTLD_NOW|RTLD_LOCAL).
func Open(path string) (*Library, error) {
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	var cerr *C.char
	h := C.nf_dlopen(cpath, &cerr)
	if h == nil {
		msg := C.GoString(cerr)
		C.free(unsafe.Pointer(cerr))
		return nil, errors.Errorf("dlopen %s: %s", path, msg)
	}
	loaded.Lock()
	defer loaded.Unlock()
	lib, ok := loaded.libs[h]
	if !ok {
		if loaded.libs == nil {
			loaded.libs = map[unsafe.Pointer]*Library{}
		}
		lib = &Library{Path: path, handle: h}
		loaded.libs[h] = lib
	}
	lib.refs++
	return lib, nil
}

// Close undoes one Open: the last one unloads the library, after which
// none of its symbols may be called. The caller must be sure that no call
// into the library is running.
func (l *Library) Close() error {
	loaded.Lock()
	defer loaded.Unlock()
	if l.refs <= 0 {
		return errors.Errorf("closing %s, which is not open", l.Path)
	}
	l.refs--
	if l.refs == 0 {
		delete(loaded.libs, l.handle)
	}
	var cerr *C.char
	if C.nf_dlclose(l.handle, &cerr) != 0 {
		msg := C.GoString(cerr)
		C.free(unsafe.Pointer(cerr))
		return errors.Errorf("dlclose %s: %s", l.Path, msg)
	}
	return nil
}

// NumLoaded is the number of distinct libraries loaded through Open.
func NumLoaded() int {
	loaded.Lock()
	defer loaded.Unlock()
	return len(loaded.libs)
}

// Symbol returns the address of a symbol of the library.
func (l *Library) Symbol(name string) (uintptr, error) {
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	var cerr *C.char
	p := C.nf_dlsym(l.handle, cname, &cerr)
	if p == nil {
		msg := C.GoString(cerr)
		C.free(unsafe.Pointer(cerr))
		return 0, errors.Errorf("dlsym %s in %s: %s", name, l.Path, msg)
	}
	return uintptr(p), nil
}

// CallRaw calls the kernel at fn with bufs, a C array (void **) of one
// pointer per buffer. It allocates nothing. bufs must not be Go memory
// holding Go pointers unless they are pinned (runtime.Pinner).
func CallRaw(fn uintptr, bufs unsafe.Pointer, nthreads int64) {
	C.nf_call(C.uintptr_t(fn), (*unsafe.Pointer)(bufs), C.int64_t(nthreads))
}
