package torchbridge

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pkg/errors"

	"github.com/neoflow/neoflow/core/fuse"
	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/parse"
	"github.com/neoflow/neoflow/core/pipeline"
	"github.com/neoflow/neoflow/core/sema"
	"github.com/neoflow/neoflow/internal/fsutil"
	"github.com/neoflow/neoflow/internal/hostbuf"
	"github.com/neoflow/neoflow/kernels"
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
	rates.CacheBytes = l2Bytes()
	r.rates = &rates
	return rates
}

// l2Bytes is the size of the level-2 cache of CPU 0 as Linux reports it
// (sysfs), or fuse.DefaultCacheBytes where it does not.
func l2Bytes() int64 {
	dirs, _ := filepath.Glob("/sys/devices/system/cpu/cpu0/cache/index*")
	for _, d := range dirs {
		level, err1 := os.ReadFile(filepath.Join(d, "level"))
		size, err2 := os.ReadFile(filepath.Join(d, "size"))
		if err1 != nil || err2 != nil || strings.TrimSpace(string(level)) != "2" {
			continue
		}
		if n, ok := parseCacheSize(strings.TrimSpace(string(size))); ok {
			return n
		}
	}
	return fuse.DefaultCacheBytes
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
		m.BytesPerSec <= 0 || m.OpsPerSec <= 0 || m.NestSec < 0 || m.CallOps <= 0 {
		return fuse.Machine{}, errors.Errorf("%s: measured under other settings", path)
	}
	return m, nil
}

// measureRates times five kernels: a copy of 16M floats (bandwidth, past
// the caches); on 1M floats, a chain of products and sums (arithmetic, in
// fuse.Cost's units) and a chain of math functions (the cost of a call in
// those units); and, for the cost of a loop nest, 16 statements of 64K
// elements each (each its own parallel region) against one statement of
// 16 times as many. Each chain reads the level below once: a chain that
// repeated a subexpression would be computed once by the C compiler and
// counted twice by fuse.Cost.
func (r *Runtime) measureRates(threads int) (fuse.Machine, error) {
	const n, m, k = 1 << 24, 1 << 20, 1 << 16
	arith := "X[i]"
	for range 16 {
		arith = "(" + arith + " * 0.999 + 0.001)"
	}
	calls := "X[i]"
	for range 4 {
		calls = "exp(tanh(sigmoid(" + calls + " * 0.25) * 0.5) * -0.5)"
	}
	nests := "T0[i] = X[i] + 1.0"
	for k := 1; k < 16; k++ {
		nests += "\nT" + strconv.Itoa(k) + "[i] = T" + strconv.Itoa(k-1) + "[i] + 1.0"
	}
	copyT, err := r.timeKernel("Y[i] = X[i]", n, threads)
	if err != nil {
		return fuse.Machine{}, err
	}
	arithT, err := r.timeKernel("Y[i] = "+arith, m, threads)
	if err != nil {
		return fuse.Machine{}, err
	}
	callT, err := r.timeKernel("Y[i] = "+calls, m, threads)
	if err != nil {
		return fuse.Machine{}, err
	}
	nestT, err := r.timeKernel(nests, k, threads)
	if err != nil {
		return fuse.Machine{}, err
	}
	oneT, err := r.timeKernel("Y[i] = X[i] + 1.0", 16*k, threads)
	if err != nil {
		return fuse.Machine{}, err
	}
	arithOps, err := chainCost(arith)
	if err != nil {
		return fuse.Machine{}, err
	}
	callOps, err := chainCost(calls)
	if err != nil {
		return fuse.Machine{}, err
	}
	opsPerSec := float64(arithOps) * m / max(arithT, 1e-9)
	const ncalls = 12
	perCall := (callT*opsPerSec/m - float64(callOps)) / ncalls
	return fuse.Machine{
		BytesPerSec: 2 * 4 * n / copyT,
		OpsPerSec:   opsPerSec,
		NestSec:     max(nestT-oneT, 0) / 15,
		CallOps:     max(int64(math.Round(perCall)), 1),
	}, nil
}

// chainCost is the fuse.Cost of a rates kernel's expression less its math
// function calls.
func chainCost(chain string) (int64, error) {
	op, err := parse.Parse("Y[i] = "+chain, parse.Options{})
	if err != nil {
		return 0, err
	}
	return fuse.Cost(op.Stmts[0].RHS, 0), nil
}

// timeKernel builds src for one float32 input of n elements and returns
// the median of seven launches' seconds, after one.
func (r *Runtime) timeKernel(src string, n int64, threads int) (float64, error) {
	op, err := parse.Parse(src, parse.Options{Name: "nf_rates", Inputs: []string{"X"}})
	if err != nil {
		return 0, err
	}
	if err := sema.Check(op); err != nil {
		return 0, err
	}
	u := &pipeline.Unit{Op: op, DType: ir.Float32, Shapes: [][]int64{{n}}}
	if err := pipeline.Run(u, "specialize"); err != nil {
		return 0, err
	}
	b, err := r.kernelBuilder()
	if err != nil {
		return 0, err
	}
	k, err := b.BuildScheduled(r.buildContext(), u.Spec, nil)
	if err != nil {
		return 0, err
	}
	defer func() { _ = k.Close() }()
	return timeLaunches(k, u.Spec, threads)
}

func timeLaunches(k *kernels.Kernel, spec *ir.Spec, threads int) (float64, error) {
	bufs := hostbuf.New(spec, hostbuf.RandomInputs(spec, false, 1))
	defer bufs.Free()
	var times []float64
	for i := range 8 {
		start := time.Now()
		if err := k.Launch(bufs.Ptr, threads); err != nil {
			return 0, err
		}
		if i > 0 {
			times = append(times, time.Since(start).Seconds())
		}
	}
	slices.Sort(times)
	return times[len(times)/2], nil
}
