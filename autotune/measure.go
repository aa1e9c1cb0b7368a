package autotune

import (
	"context"
	"math"
	"runtime"
	"slices"
	"time"
	"unsafe"

	"github.com/pkg/errors"

	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/loops"
	"github.com/neoflow/neoflow/internal/hostbuf"
	"github.com/neoflow/neoflow/kernels"
)

// Timing configures how a kernel is timed.
type Timing struct {
	// Threads is the thread count kernels run with; below 1 means 1.
	Threads int
	// Warmup runs precede timing (0: default 2).
	Warmup int
	// MinRuns and MaxRuns bound the timed runs (0: defaults 5 and 200);
	// runs continue past MinRuns until MinTime has been spent.
	MinRuns, MaxRuns int
	// MinTime is the least time spent in timed runs (0: default 50 ms).
	MinTime time.Duration
}

func (t Timing) withDefaults() Timing {
	if t.Threads < 1 {
		t.Threads = 1
	}
	if t.Warmup == 0 {
		t.Warmup = 2
	}
	if t.MinRuns == 0 {
		t.MinRuns = 5
	}
	if t.MaxRuns == 0 {
		t.MaxRuns = 200
	}
	if t.MinTime == 0 {
		t.MinTime = 50 * time.Millisecond
	}
	return t
}

// Sample is the outcome of timing one configuration.
type Sample struct {
	// Seconds is the median run time: robust to the outliers a noisy,
	// shared machine produces.
	Seconds float64
	// Min and Max are the fastest and slowest timed run.
	Min, Max float64
	Runs     int
	// Stmts is, per statement (spec.Stmts order), the median over the
	// timed runs of the seconds that statement took, measured inside the
	// kernel (kernels.Builder.BuildProfiled); they add up to a little less
	// than Seconds, which also holds the call's overhead.
	Stmts []float64
}

// bench times kernels of one spec on fixed random inputs, and checks each
// candidate's outputs against a reference kernel's.
type bench struct {
	b      *kernels.Builder
	spec   *ir.Spec
	timing Timing
	bufs   *hostbuf.Buffers
	ref    reference
	// prof is the profiled kernel's timing buffer, one entry per
	// statement; ptr is bufs.Ptr followed by it, pinned by pin.
	prof []float64
	ptr  []unsafe.Pointer
	pin  runtime.Pinner
	// built holds kernels prebuilt for measure, by schedKey (prebuild).
	built map[string]*kernels.Kernel
}

func newBench(b *kernels.Builder, spec *ir.Spec, timing Timing) *bench {
	m := &bench{b: b, spec: spec, timing: timing.withDefaults(), bufs: hostbuf.New(spec, hostbuf.RandomInputs(spec, true, 1)), ref: reference{spec: spec}}
	m.prof = make([]float64, max(len(spec.Stmts), 1))
	m.pin.Pin(&m.prof[0])
	m.ptr = append(slices.Clone(m.bufs.Ptr), unsafe.Pointer(&m.prof[0]))
	return m
}

func (m *bench) free() {
	for _, k := range m.built {
		_ = k.Close()
	}
	m.built = nil
	m.pin.Unpin()
	m.bufs.Free()
}

// prebuild builds the profiled kernels of list that are not built yet,
// in batches on parallel compilers at once (kernels.Builder.
// BuildKernelsParallel), for measure to take. A C compiler's start costs
// about 0.04 s, as much as a small kernel's compile; a batch pays it once.
// A batch that fails to build is dropped: measure then builds each of its
// kernels alone, and a schedule that does not compile fails alone.
func (m *bench) prebuild(ctx context.Context, list [][]loops.Schedule, parallel int) {
	batch := kernels.Batch{Profiled: true, PerRun: PrefetchPerCompiler}
	keys := map[string]bool{}
	for _, s := range list {
		k := schedKey(s)
		if m.built[k] != nil || keys[k] {
			continue
		}
		keys[k] = true
		batch.Specs, batch.Scheds = append(batch.Specs, m.spec), append(batch.Scheds, s)
	}
	if len(batch.Specs) < 2 { // measure builds a lone kernel
		return
	}
	ks, err := m.b.BuildKernelsParallel(ctx, batch, parallel)
	if err != nil {
		return
	}
	if m.built == nil {
		m.built = map[string]*kernels.Kernel{}
	}
	for i, k := range ks {
		m.built[schedKey(batch.Scheds[i])] = k
	}
}

// kernel is the profiled kernel of scheds: prebuilt, or built now. The
// caller closes it.
func (m *bench) kernel(ctx context.Context, scheds []loops.Schedule) (*kernels.Kernel, error) {
	key := schedKey(scheds)
	if k := m.built[key]; k != nil {
		delete(m.built, key)
		return k, nil
	}
	return m.b.BuildProfiled(ctx, m.spec, scheds)
}

// measure builds spec with scheds (nil: default), profiled (or takes the
// kernel prebuild built), runs it once
// and compares its outputs with the reference (the first kernel measured
// becomes the reference), then times it. A kernel whose first run takes
// longer than cutoff seconds (0: no cutoff) is not timed further: that
// run is its sample, which is enough to rank it last without spending
// seconds on a hopeless configuration.
func (m *bench) measure(ctx context.Context, scheds []loops.Schedule, cutoff float64) (Sample, error) {
	k, err := m.kernel(ctx, scheds)
	if err != nil {
		return Sample{}, err
	}
	defer k.Close() // a search measures hundreds of candidates: unload each one
	stmts := len(m.spec.Stmts)
	// run runs the kernel once, returning its wall time and the run's
	// statement times.
	run := func() (float64, []float64, error) {
		clear(m.prof)
		t0 := time.Now()
		err := k.Launch(m.ptr, m.timing.Threads)
		return time.Since(t0).Seconds(), m.prof[:stmts], err
	}
	m.bufs.Poison(m.spec)
	return checkedSample(ctx, m.timing, stmts, cutoff, run, func() error { return m.ref.check(m.bufs) })
}

// checkedSample runs a kernel once (run returns its seconds and each
// statement's), has check compare its outputs with the reference, and
// then times it (sampleRuns), unless that first run took longer than
// cutoff seconds (0: no cutoff): then that run is its sample, enough to
// rank it last without spending seconds on a hopeless configuration.
func checkedSample(ctx context.Context, timing Timing, stmts int, cutoff float64, run func() (float64, []float64, error), check func() error) (Sample, error) {
	first, firstStmts, err := run()
	if err != nil {
		return Sample{}, err
	}
	firstStmts = slices.Clone(firstStmts)
	if err := check(); err != nil {
		return Sample{}, err
	}
	if cutoff > 0 && first > cutoff {
		return Sample{Seconds: first, Min: first, Max: first, Runs: 1, Stmts: firstStmts}, nil
	}
	return sampleRuns(ctx, timing, stmts, run)
}

// sampleRuns times a kernel whose first run is done: run runs it once
// and returns its seconds and each statement's (which sampleRuns does
// not keep). After the warm-up runs it times runs until timing's bounds
// are met and returns their medians.
func sampleRuns(ctx context.Context, timing Timing, stmts int, run func() (float64, []float64, error)) (Sample, error) {
	for range timing.Warmup - 1 {
		if _, _, err := run(); err != nil {
			return Sample{}, err
		}
	}
	var runs []float64
	perStmt := make([][]float64, stmts) // per statement, its time in each run
	start := time.Now()
	for len(runs) < timing.MaxRuns && (len(runs) < timing.MinRuns || time.Since(start) < timing.MinTime) {
		if err := ctx.Err(); err != nil {
			return Sample{}, err
		}
		secs, st, err := run()
		if err != nil {
			return Sample{}, err
		}
		runs = append(runs, secs)
		for i := range perStmt {
			perStmt[i] = append(perStmt[i], st[i])
		}
	}
	slices.Sort(runs)
	s := Sample{Seconds: median(runs), Min: runs[0], Max: runs[len(runs)-1], Runs: len(runs), Stmts: make([]float64, stmts)}
	for i, ts := range perStmt {
		slices.Sort(ts)
		s.Stmts[i] = median(ts)
	}
	return s, nil
}

// reference holds the outputs of the first kernel measured, which every
// later candidate must reproduce.
type reference struct {
	spec *ir.Spec
	want [][]float64 // by tensor index (nil: input)
}

// check compares the outputs now in bufs with the reference outputs,
// recording them as the reference on the first call.
func (r *reference) check(bufs *hostbuf.Buffers) error {
	if r.want == nil {
		r.want = make([][]float64, len(r.spec.Tensors))
		for i, t := range r.spec.Tensors {
			if t.Role != ir.RoleInput {
				r.want[i] = slices.Clone(bufs.Get(i))
			}
		}
		return nil
	}
	tol := map[ir.DType]float64{ir.Float64: 1e-9, ir.Float32: 1e-3, ir.Float16: 1e-2, ir.BFloat16: 4e-2}[r.spec.DType]
	for i, want := range r.want {
		if want == nil {
			continue
		}
		got := bufs.Get(i)
		for j, w := range want {
			g := got[j]
			if math.IsNaN(w) && math.IsNaN(g) || math.Abs(g-w) <= tol*(1+math.Abs(w)) {
				continue
			}
			return errors.Errorf("wrong result: %s[%d] = %v, the default schedule gives %v", r.spec.Tensors[i].Name, j, g, w)
		}
	}
	return nil
}

func median(sorted []float64) float64 {
	n := len(sorted)
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}
