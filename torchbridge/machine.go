package torchbridge

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/pkg/errors"

	"github.com/neoflow/neoflow/core/fuse"
	"github.com/neoflow/neoflow/internal/fsutil"
)

// The fusion reward's rates (fuse.Machine: the paper's Pd, Pc and L) are
// measured once per machine, compiler and thread count by three small C
// kernels, and kept in the cache directory, so that later processes read
// them instead of measuring. A failed measurement leaves
// fuse.DefaultMachine in force, with a warning.

// machineFile names the file of the measured rates.
const machineFile = "fusion-rates.json"

// machineRecord is that file's content: the rates and what they depend on.
type machineRecord struct {
	Version  string       `json:"version"`
	Threads  int          `json:"threads"`
	Compiler []string     `json:"compiler"`
	Rates    fuse.Machine `json:"rates"`
}

// machineRates returns the rates of this machine: remembered, read from
// the cache directory, or measured now (about a second, once).
func (r *Runtime) machineRates() fuse.Machine {
	r.machineMu.Lock()
	defer r.machineMu.Unlock()
	if r.rates != nil {
		return *r.rates
	}
	cfg := r.config()
	want := machineRecord{Version: Version, Threads: cfg.NumThreads, Compiler: append([]string{cfg.Compiler.Path}, cfg.Compiler.Flags...)}
	path := filepath.Join(cfg.CacheDir, machineFile)
	rates, err := readRates(path, want)
	if err != nil {
		rates, err = r.measureRates(cfg.NumThreads)
		if err == nil {
			want.Rates = rates
			data, _ := json.MarshalIndent(want, "", "  ")
			err = fsutil.WriteFileAtomic(path, data, 0o644)
		}
		if err != nil {
			r.warnf("measuring the fusion reward's rates failed, using the defaults: %v", err)
			rates = fuse.DefaultMachine
		}
	}
	rates.CacheBytes = cacheBytes(2, fuse.DefaultCacheBytes)
	r.rates = &rates
	return rates
}

// cacheBytes is the size of the level-level cache of CPU 0 as Linux
// reports it (sysfs), or def where it does not.
func cacheBytes(level int, def int64) int64 {
	dirs, _ := filepath.Glob("/sys/devices/system/cpu/cpu0/cache/index*")
	for _, d := range dirs {
		l, err1 := os.ReadFile(filepath.Join(d, "level"))
		size, err2 := os.ReadFile(filepath.Join(d, "size"))
		if err1 != nil || err2 != nil || strings.TrimSpace(string(l)) != strconv.Itoa(level) {
			continue
		}
		if n, ok := parseCacheSize(strings.TrimSpace(string(size))); ok {
			return n
		}
	}
	return def
}

// parseCacheSize reads sysfs's "1024K" (or "2M", or bytes).
func parseCacheSize(s string) (int64, bool) {
	mult := int64(1)
	switch {
	case strings.HasSuffix(s, "K"):
		mult, s = 1<<10, strings.TrimSuffix(s, "K")
	case strings.HasSuffix(s, "M"):
		mult, s = 1<<20, strings.TrimSuffix(s, "M")
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return 0, false
	}
	return n * mult, true
}

// readRates reads the rates kept at path when they were measured under
// want's version, thread count and compiler.
func readRates(path string, want machineRecord) (fuse.Machine, error) {
	data, err := fsutil.ReadFile(path, 1<<16)
	if err != nil {
		return fuse.Machine{}, err
	}
	var rec machineRecord
	if err := json.Unmarshal(data, &rec); err != nil {
		return fuse.Machine{}, errors.Wrap(err, path)
	}
	m := rec.Rates
	if rec.Version != want.Version || rec.Threads != want.Threads || !slices.Equal(rec.Compiler, want.Compiler) ||
		m.BytesPerSec <= 0 || m.OpsPerSec <= 0 || m.NestSec < 0 || m.CallOps <= 0 || m.LLCBytesPerSec <= 0 || m.AccumulatorOps <= 0 {
		return fuse.Machine{}, errors.Errorf("%s: measured under other settings", path)
	}
	return m, nil
}
