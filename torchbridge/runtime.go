package torchbridge

import (
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/neoflow/neoflow/api"
	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/kernels"
)

// Runtime holds the ops and kernels of one process.
type Runtime struct {
	mu      sync.Mutex // guards everything below but table's contents
	cfg     Config
	cfgErr  error
	ops     map[uint64]*ir.Op
	nextOp  uint64
	specs   map[string]*api.SpecializeResponse // by specialization key
	byCache map[string]uint64                  // kernel id by kernel cache key

	// table is the launch path's view: kernel id -> kernel. It is replaced,
	// never mutated, so Launch reads it without a lock.
	table atomic.Pointer[[]*launchable]
}

// launchable is what Launch needs of a built kernel.
type launchable struct {
	kernel *kernels.Kernel
	nbufs  int
}

// Default is the process's runtime, used by the C API.
var Default = New()

// New returns an empty runtime with default settings.
func New() *Runtime {
	r := &Runtime{
		ops:     map[uint64]*ir.Op{},
		specs:   map[string]*api.SpecializeResponse{},
		byCache: map[string]uint64{},
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
	if cfg.NumThreads > 0 {
		runtime.GOMAXPROCS(cfg.NumThreads)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cfg, r.cfgErr = cfg, nil
	return &api.InitResponse{Version: Version, CacheDir: cfg.CacheDir}, nil
}

func (r *Runtime) config() (Config, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cfg, r.cfgErr
}
