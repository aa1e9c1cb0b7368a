package torchbridge

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/neoflow/neoflow/api"
	"github.com/neoflow/neoflow/autotune/tunedb"
	"github.com/neoflow/neoflow/core/fuse"
	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/kernels"
	"github.com/neoflow/neoflow/kernels/cudadrv"
)

// Runtime holds the ops and kernels of one process.
type Runtime struct {
	mu     sync.Mutex // guards everything below but table's contents
	cfg    Config
	cfgErr error
	ops    map[uint64]*ir.Op
	// keepNone lists the ops whose forward kernels keep no temporaries
	// whole for a gradient (fuse): the saving gradient ops (Grad with
	// save), which run without autograd, and the ops defined forward
	// only (DefineRequest.forward_only: subgraphs that the torch.compile
	// backend lowered, whose backward AOT Autograd traced).
	keepNone    map[*ir.Op]bool
	gradOf      map[*ir.Op]*ir.Op // a gradient op's forward op (Grad)
	nextOp      uint64
	builder     *kernels.Builder                              // for cfg; nil until first needed
	specs       map[uint64]map[string]*api.SpecializeResponse // by op id, then specialization key
	specialized specCache                                     // the Kernel plan's results (specialized.go)
	byCache     map[string]uint64                             // kernel id by kernel cache key
	onEntry     func(id uint64, fn uintptr, nbufs int)        // OnLaunchEntry
	db          *tunedb.DB                                    // for cfg; nil until first needed
	sessions    map[uint64]*session                           // tuning sessions by id
	nextSession uint64
	tunedFwd    []*tunedKernel             // forward kernels tuned lately, kept for their gradient's joint pass (joint.go)
	gpus        map[int]gpuInfo            // by CUDA device ordinal
	idle        []uint64                   // loaded kernels nobody holds, least recently released first (loaded.go)
	symbolic    map[uint64]*symbolicKernel // kernels with symbolic extents by kernel id, for their size buckets (buckets.go)

	interrupt interrupter // cancels builds in flight on Ctrl-C

	bundled bundleState // the kernel bundle in use and what was launched (bundle.go)

	bg background // NEOFLOW_TUNE=background: the tuner working behind the calls (background.go)

	warm warmIndex // records by family, for a new shape's warm start (warm.go)

	machineMu sync.Mutex    // guards rates; held while they are measured
	rates     *fuse.Machine // the fusion reward's rates, once known (machine.go)

	warnMu sync.Mutex // guards warns; the builder reports while mu may be held
	warns  []string   // cache reports not yet sent to Python

	// table is the launch path's view: kernel id -> kernel. It is replaced,
	// never mutated, so Launch reads it without a lock.
	table atomic.Pointer[[]*launchable]
}

// launchable is what Launch needs of a built kernel: a C entry point, or
// for a CUDA kernel its module loaded on its device.
type launchable struct {
	// fn is the C entry point; background tuning swaps a faster kernel's
	// in (background.go), so launches load it atomically.
	fn    atomic.Uintptr
	nbufs int
	// sizes is how many of the nbufs arguments of a CUDA kernel with
	// symbolic extents are its sizes' values (after the pointers).
	sizes int
	// cuda is a CUDA kernel's module, swapped as fn is
	// (background_cuda.go); nil for a C kernel.
	cuda   atomic.Pointer[cudadrv.Module]
	device int // the CUDA device ordinal of a CUDA kernel
	// aligned: the CUDA kernel loads 16-byte vectors, so every pointer
	// must be 16-byte aligned.
	aligned bool

	key   string // the kernel cache key it is loaded under
	refs  int    // holders (SpecializeResponses handed out); guarded by Runtime.mu
	close func() // unloads it
}

// Default is the process's runtime, used by the C API.
var Default = New()

// New returns an empty runtime with default settings.
func New() *Runtime {
	r := &Runtime{
		ops:      map[uint64]*ir.Op{},
		keepNone: map[*ir.Op]bool{},
		gradOf:   map[*ir.Op]*ir.Op{},
		specs:    map[uint64]map[string]*api.SpecializeResponse{},
		byCache:  map[string]uint64{},
		sessions: map[uint64]*session{},

		gpus: map[int]gpuInfo{},
	}
	r.cfg, r.cfgErr = defaultConfig()
	empty := []*launchable{nil} // id 0 is "none"
	r.table.Store(&empty)
	return r
}

// Init applies settings. Kernels already built stay valid.
func (r *Runtime) Init(req *api.InitRequest) (*api.InitResponse, error) {
	cfg, err := configFrom(req)
	if err != nil {
		return nil, err
	}
	b, records, rates, err := openBundle(cfg, r.warnf)
	if err != nil {
		return nil, err
	}
	if cfg.NumThreads > 0 {
		runtime.GOMAXPROCS(goProcs(cfg.NumThreads))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cfg, r.cfgErr = cfg, nil
	r.builder = nil // the next build uses the new settings
	r.db = nil
	r.warm.mu.Lock()
	r.warm.loaded, r.warm.byFam = false, nil // the index was of the old database
	r.warm.mu.Unlock()
	r.machineMu.Lock()
	r.rates = rates // nil: measured under the old compiler or thread count, maybe
	r.machineMu.Unlock()
	r.bundled.open = b
	r.specs = map[uint64]map[string]*api.SpecializeResponse{}
	r.specialized.clear() // fusion, its rates or the thread count may have changed
	resp := &api.InitResponse{Version: Version, CacheDir: cfg.CacheDir, Cuda: cudadrv.Available(), BundleRecords: int32(records)}
	if b != nil {
		resp.BundleKernels = int32(b.Len())
	}
	return resp, nil
}

// kernelBuilder returns the builder for the current settings.
func (r *Runtime) kernelBuilder() (*kernels.Builder, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cfgErr != nil {
		return nil, r.cfgErr
	}
	if r.builder == nil {
		opts := kernels.Options{
			Compiler:  r.cfg.Compiler,
			CacheDir:  r.cfg.CacheDir,
			Version:   Version,
			Logf:      r.warnf,
			NVRTCDirs: r.cfg.NVRTCDirs,
			Dump:      r.cfg.Dump,
			Bundle:    r.bundled.open,
		}
		b, err := kernels.NewBuilder(opts)
		if err != nil {
			return nil, err
		}
		r.builder = b
	}
	return r.builder, nil
}

// config is the current settings.
func (r *Runtime) config() Config {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cfg
}

// warnf records a report for the next SpecializeResponse.
func (r *Runtime) warnf(format string, args ...any) {
	r.warnMu.Lock()
	defer r.warnMu.Unlock()
	r.warns = append(r.warns, fmt.Sprintf(format, args...))
}

// takeWarnings returns and clears the pending reports, a failure to write
// an IR dump (NEOFLOW_DUMP_DIR) among them.
func (r *Runtime) takeWarnings() []string {
	if err := r.config().Dump.TakeErr(); err != nil {
		r.warnf("writing an IR dump (NEOFLOW_DUMP, NEOFLOW_DUMP_DIR) failed: %v", err)
	}
	r.warnMu.Lock()
	defer r.warnMu.Unlock()
	w := r.warns
	r.warns = nil
	return w
}
