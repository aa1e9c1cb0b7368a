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

static void *nf_dlopen(const char *path, char **err)
{
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	*err = h ? NULL : nf_dl_error();
	return h;
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

// Library is a loaded shared object. It is never unloaded.
type Library struct {
	Path   string
	handle unsafe.Pointer
}

// loaded keeps every library reachable for the life of the process, by
// handle (dlopen of a loaded path returns its handle again).
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
	if lib, ok := loaded.libs[h]; ok {
		return lib, nil
	}
	if loaded.libs == nil {
		loaded.libs = map[unsafe.Pointer]*Library{}
	}
	lib := &Library{Path: path, handle: h}
	loaded.libs[h] = lib
	return lib, nil
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
