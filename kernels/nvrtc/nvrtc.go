package nvrtc

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

typedef int nvrtcResult;
typedef struct _nvrtcProgram *nvrtcProgram;

// The NVRTC functions used, resolved by dlsym.
typedef struct {
	nvrtcResult (*version)(int *, int *);
	nvrtcResult (*num_archs)(int *);
	nvrtcResult (*archs)(int *);
	nvrtcResult (*create)(nvrtcProgram *, const char *, const char *, int, const char *const *, const char *const *);
	nvrtcResult (*compile)(nvrtcProgram, int, const char *const *);
	nvrtcResult (*log_size)(nvrtcProgram, size_t *);
	nvrtcResult (*log)(nvrtcProgram, char *);
	nvrtcResult (*cubin_size)(nvrtcProgram, size_t *);
	nvrtcResult (*cubin)(nvrtcProgram, char *);
	nvrtcResult (*ptx_size)(nvrtcProgram, size_t *);
	nvrtcResult (*ptx)(nvrtcProgram, char *);
	nvrtcResult (*destroy)(nvrtcProgram *);
	const char *(*error_string)(nvrtcResult);
} nf_nvrtc;

static char *nf_dl_error(void)
{
	const char *e = dlerror();
	return strdup(e ? e : "unknown dynamic loader error");
}

// nf_nvrtc_open loads the library at path and resolves every function;
// on failure *err holds a message to free. The supported-architecture
// functions are optional (CUDA 11.2 and later).
static void *nf_nvrtc_open(const char *path, nf_nvrtc *f, char **err)
{
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		*err = nf_dl_error();
		return NULL;
	}
#define NF_SYM(field, name, required) \
	f->field = dlsym(h, name); \
	if (!f->field && required) { \
		*err = strdup("symbol " name " not found: not an NVRTC library"); \
		dlclose(h); \
		return NULL; \
	}
	NF_SYM(version, "nvrtcVersion", 1)
	NF_SYM(num_archs, "nvrtcGetNumSupportedArchs", 0)
	NF_SYM(archs, "nvrtcGetSupportedArchs", 0)
	NF_SYM(create, "nvrtcCreateProgram", 1)
	NF_SYM(compile, "nvrtcCompileProgram", 1)
	NF_SYM(log_size, "nvrtcGetProgramLogSize", 1)
	NF_SYM(log, "nvrtcGetProgramLog", 1)
	NF_SYM(cubin_size, "nvrtcGetCUBINSize", 1)
	NF_SYM(cubin, "nvrtcGetCUBIN", 1)
	NF_SYM(ptx_size, "nvrtcGetPTXSize", 1)
	NF_SYM(ptx, "nvrtcGetPTX", 1)
	NF_SYM(destroy, "nvrtcDestroyProgram", 1)
	NF_SYM(error_string, "nvrtcGetErrorString", 1)
#undef NF_SYM
	return h;
}

static nvrtcResult nf_version(nf_nvrtc *f, int *major, int *minor) { return f->version(major, minor); }

static nvrtcResult nf_archs(nf_nvrtc *f, int *out, int cap, int *n)
{
	nvrtcResult r = f->num_archs(n);
	if (r != 0 || *n > cap)
		return r;
	return f->archs(out);
}

static const char *nf_error(nf_nvrtc *f, nvrtcResult r) { return f->error_string(r); }

// nf_compile compiles src. The log (when any) and the output are
// malloc'd; *stage names the call that failed.
static nvrtcResult nf_compile(nf_nvrtc *f, const char *src, const char *name, int nopts, const char **opts,
	int cubin, char **log, char **out, size_t *out_len, const char **stage)
{
	nvrtcProgram p = NULL;
	size_t n = 0;
	*log = NULL;
	*out = NULL;
	*out_len = 0;
	*stage = "nvrtcCreateProgram";
	nvrtcResult r = f->create(&p, src, name, 0, NULL, NULL);
	if (r != 0)
		return r;
	*stage = "nvrtcCompileProgram";
	nvrtcResult cr = f->compile(p, nopts, opts);
	if (f->log_size(p, &n) == 0 && n > 1) {
		*log = malloc(n);
		if (*log && f->log(p, *log) != 0) {
			free(*log);
			*log = NULL;
		}
	}
	if (cr != 0) {
		f->destroy(&p);
		return cr;
	}
	*stage = cubin ? "nvrtcGetCUBIN" : "nvrtcGetPTX";
	r = cubin ? f->cubin_size(p, &n) : f->ptx_size(p, &n);
	if (r == 0) {
		*out = malloc(n ? n : 1);
		r = cubin ? f->cubin(p, *out) : f->ptx(p, *out);
		*out_len = n;
	}
	f->destroy(&p);
	return r;
}
*/
import "C"

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"unsafe"

	"github.com/pkg/errors"
)

// Library is a loaded NVRTC. It is never unloaded.
type Library struct {
	// Path is the file it was loaded from.
	Path string
	fns  *C.nf_nvrtc
}

var opened struct {
	sync.Mutex
	libs map[string]*Library
}

// Open loads the NVRTC library at path (e.g. .../libnvrtc.so.12); a
// second Open of the same path returns the same Library.
func Open(path string) (*Library, error) {
	opened.Lock()
	defer opened.Unlock()
	if l := opened.libs[path]; l != nil {
		return l, nil
	}
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	fns := (*C.nf_nvrtc)(C.calloc(1, C.sizeof_nf_nvrtc))
	var cerr *C.char
	if h := C.nf_nvrtc_open(cpath, fns, &cerr); h == nil {
		C.free(unsafe.Pointer(fns))
		msg := C.GoString(cerr)
		C.free(unsafe.Pointer(cerr))
		return nil, errors.Errorf("loading NVRTC from %s: %s", path, msg)
	}
	l := &Library{Path: path, fns: fns}
	if opened.libs == nil {
		opened.libs = map[string]*Library{}
	}
	opened.libs[path] = l
	return l, nil
}

func (l *Library) err(r C.nvrtcResult, call string) error {
	return errors.Errorf("NVRTC %s failed: %s (%d)", call, C.GoString(C.nf_error(l.fns, r)), int(r))
}

// Version is NVRTC's version, e.g. 12, 4.
func (l *Library) Version() (major, minor int, err error) {
	var ma, mi C.int
	if r := C.nf_version(l.fns, &ma, &mi); r != 0 {
		return 0, 0, l.err(r, "nvrtcVersion")
	}
	return int(ma), int(mi), nil
}

// Archs lists the real architectures this NVRTC compiles CUBIN for, as
// compute capabilities times ten (90 for sm_90), ascending; nil when the
// library cannot say (before CUDA 11.2).
func (l *Library) Archs() ([]int, error) {
	if l.fns.num_archs == nil || l.fns.archs == nil {
		return nil, nil
	}
	buf := make([]C.int, 256)
	var n C.int
	if r := C.nf_archs(l.fns, &buf[0], C.int(len(buf)), &n); r != 0 {
		return nil, l.err(r, "nvrtcGetSupportedArchs")
	}
	if int(n) > len(buf) {
		return nil, errors.Errorf("NVRTC reports %d architectures", int(n))
	}
	out := make([]int, int(n))
	for i := range out {
		out[i] = int(buf[i])
	}
	slices.Sort(out)
	return out, nil
}

// Target is what Compile produces for a device of compute capability
// Arch (times ten): CUBIN for sm_<Arch> when PTX is false, else PTX for
// compute_<Arch>, which may be older than the device.
type Target struct {
	Arch int
	PTX  bool
}

// String is the architecture option's value: sm_90 or compute_90.
func (t Target) String() string {
	if t.PTX {
		return fmt.Sprintf("compute_%d", t.Arch)
	}
	return fmt.Sprintf("sm_%d", t.Arch)
}

// TargetFor chooses the target for a device of compute capability arch
// (times ten): CUBIN when this NVRTC supports arch, else PTX for the
// newest supported architecture not above it; an error when every
// supported architecture is newer than the device.
func (l *Library) TargetFor(arch int) (Target, error) {
	archs, err := l.Archs()
	if err != nil {
		return Target{}, err
	}
	if archs == nil || slices.Contains(archs, arch) {
		return Target{Arch: arch}, nil
	}
	best := 0
	for _, a := range archs {
		if a <= arch {
			best = a
		}
	}
	if best == 0 {
		return Target{}, errors.Errorf("NVRTC %s supports architectures %v, all newer than the device's sm_%d: use a PyTorch (or CUDA_HOME) with an older CUDA", l.Path, archs, arch)
	}
	return Target{Arch: best, PTX: true}, nil
}

// Options are the compiler options of every compilation, after the
// architecture: optimized, no fast math, FMA contraction (as the CPU
// kernels), no debug information.
var Options = []string{"--std=c++14", "-default-device", "--fmad=true"}

// Compile compiles the CUDA C source src (name appears in messages) for
// target and returns the CUBIN or PTX image, and the compiler's log
// (warnings), which may be empty. A compilation error returns the log in
// the error. extra options follow Options (tests ask ptxas for its
// resource report, --ptxas-options=-v).
func (l *Library) Compile(src, name string, target Target, extra ...string) (image []byte, log string, err error) {
	opts := append(append([]string{"--gpu-architecture=" + target.String()}, Options...), extra...)
	copts := make([]*C.char, len(opts))
	for i, o := range opts {
		copts[i] = C.CString(o)
	}
	defer func() {
		for _, o := range copts {
			C.free(unsafe.Pointer(o))
		}
	}()
	csrc, cname := C.CString(src), C.CString(name)
	defer C.free(unsafe.Pointer(csrc))
	defer C.free(unsafe.Pointer(cname))
	var clog, out *C.char
	var n C.size_t
	var stage *C.char
	r := C.nf_compile(l.fns, csrc, cname, C.int(len(copts)), &copts[0], boolInt(!target.PTX), &clog, &out, &n, &stage)
	if clog != nil {
		log = strings.TrimRight(C.GoString(clog), "\x00\n ")
		C.free(unsafe.Pointer(clog))
	}
	if out != nil {
		image = C.GoBytes(unsafe.Pointer(out), C.int(n))
		C.free(unsafe.Pointer(out))
	}
	if r != 0 {
		e := l.err(r, C.GoString(stage))
		if log != "" {
			e = errors.Errorf("%v compiling %s for %s:\n%s", e, name, target, log)
		}
		return nil, log, e
	}
	return image, log, nil
}

func boolInt(b bool) C.int {
	if b {
		return 1
	}
	return 0
}
