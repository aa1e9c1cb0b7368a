package torchbridge

import (
	"os"
	"path/filepath"
	"runtime"

	"github.com/pkg/errors"

	"github.com/neoflow/neoflow/api"
	"github.com/neoflow/neoflow/core/pipeline"
	"github.com/neoflow/neoflow/kernels/cc"
)

// Config is the runtime's settings, sent by Python in an InitRequest.
type Config struct {
	CacheDir   string
	Compiler   cc.Compiler
	NumThreads int
	// Tune is the NEOFLOW_TUNE mode: TuneOff, TuneDefault, TuneFull or
	// TuneBackground.
	Tune string
	// NVRTCDirs are searched for NVRTC, to compile CUDA kernels.
	NVRTCDirs []string
	// IdleKernels is how many kernels no op holds stay loaded.
	IdleKernels int
	// Dump prints the IR after the pipeline's passes it selects
	// (NEOFLOW_DUMP, NEOFLOW_DUMP_DIR); nil dumps nothing.
	Dump *pipeline.Dumper
	// Fusion runs the fusion passes on every op specialized
	// (NEOFLOW_FUSION, on unless 0).
	Fusion bool
	// Bundle is a kernel bundle whose kernels are loaded instead of
	// compiled (NEOFLOW_BUNDLE; bundle.go); empty: none.
	Bundle string
	// Deterministic builds CUDA scatters without atomic adds, so that
	// their sums run in the same order every time (NEOFLOW_DETERMINISTIC;
	// cuda.go). C kernels are deterministic either way.
	Deterministic bool
}

// defaultConfig is used until the first Init.
func defaultConfig() (Config, error) {
	dir, err := defaultCacheDir()
	if err != nil {
		return Config{}, err
	}
	return Config{CacheDir: dir, NumThreads: runtime.NumCPU(), Tune: TuneDefault, IdleKernels: DefaultIdleKernels, Fusion: true}, nil
}

func defaultCacheDir() (string, error) {
	base, err := os.UserCacheDir()
	if err != nil {
		return "", errors.Wrap(err, "finding the user's cache directory (set NEOFLOW_CACHE_DIR)")
	}
	return filepath.Join(base, "neoflow"), nil
}

// configFrom turns an InitRequest into a Config, filling defaults.
func configFrom(req *api.InitRequest) (Config, error) {
	cfg, err := defaultConfig()
	if err != nil && req.GetCacheDir() == "" {
		return Config{}, err
	}
	if d := req.GetCacheDir(); d != "" {
		abs, err := filepath.Abs(d)
		if err != nil {
			return Config{}, errors.Wrapf(err, "cache directory %q", d)
		}
		cfg.CacheDir = abs
	}
	if c := req.GetCc(); c != "" {
		cfg.Compiler.Path = c
	}
	if fl := req.GetCflags(); len(fl) > 0 {
		cfg.Compiler.Flags = append([]string(nil), fl...)
	}
	switch t := req.GetTune(); t {
	case "":
	case TuneOff, TuneDefault, TuneFull, TuneBackground:
		cfg.Tune = t
	default:
		return Config{}, errors.Errorf("NEOFLOW_TUNE=%q: want off, default, full or background", t)
	}
	if n := req.GetNumThreads(); n > 0 {
		cfg.NumThreads = int(n)
	}
	cfg.NVRTCDirs = append([]string(nil), req.GetNvrtcDirs()...)
	switch n := req.GetIdleKernels(); {
	case n < 0:
		cfg.IdleKernels = 0
	case n > 0:
		cfg.IdleKernels = int(n)
	}
	cfg.Fusion = !req.GetFusionOff()
	cfg.Deterministic = req.GetDeterministic()
	if p := req.GetBundle(); p != "" {
		if cfg.Bundle, err = filepath.Abs(p); err != nil {
			return Config{}, errors.Wrapf(err, "kernel bundle %q", p)
		}
	}
	if cfg.Dump, err = pipeline.NewDumper(req.GetDump(), req.GetDumpDir(), os.Stderr); err != nil {
		return Config{}, err
	}
	return cfg, nil
}
