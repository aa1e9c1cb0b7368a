package autotune

import (
	"cmp"
	"context"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/pkg/errors"

	"github.com/neoflow/neoflow/api"
	"github.com/neoflow/neoflow/autotune/costmodel"
	"github.com/neoflow/neoflow/autotune/ga"
	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/loops"
	"github.com/neoflow/neoflow/kernels"
)

// Options configure a tuning run.
type Options struct {
	// Trials is the budget in measured configurations, the default
	// schedule included (0: DefaultTrials).
	Trials int
	// Time is the wall-clock budget (0: none).
	Time time.Duration
	// Seed seeds the search; equal seeds and equal measurements give
	// equal searches.
	Seed int64
	// Population is the genetic algorithm's generation size (0: 16).
	Population int
	// NoModel disables the cost model that ranks candidates before they
	// are measured.
	NoModel bool
	Timing  Timing
	// Version is neoflow's version, part of the record's key.
	Version string
	// Seeds are genomes measured right after the default one, before the
	// space's own seeds (a pick's, Pick.Genome); one of another length
	// than the space's is ignored.
	Seeds [][]int
	// KeepParallel keeps every genome the search measures at least as
	// parallel as the first of Seeds: a tiled statement that the seed
	// tiles runs at least as many outer loops in parallel (CPU spaces;
	// Space.keepParallel). For a search timed on fewer threads than its
	// kernel will run on (background mode's worker times on one), whose
	// timings barely tell a parallel loop from a serial one.
	KeepParallel bool
}

// DefaultTrials is the trial budget when Options.Trials is 0.
const DefaultTrials = 64

// CutoffFactor: a configuration whose first run is this many times slower
// than the best so far is timed by that run alone.
const CutoffFactor = 3

// MaxDuplicates ends the search when this many genomes in a row decode
// to schedules already measured: the population has converged (genes that
// a default-schedule statement ignores keep breeding the same kernel).
const MaxDuplicates = 512

// ConfirmRounds, ConfirmTop and MinGain: when the search ends, the
// ConfirmTop fastest distinct schedules, the fastest with one statement
// set back to its default schedule (each statement in turn, see reverts)
// and the default ones are timed ConfirmRounds more times each, in turns;
// the one with the lowest median is kept only if that median is at least
// MinGain faster than the default's.
const (
	ConfirmRounds = 3
	ConfirmTop    = 3
	MinGain       = 0.03
)

// MaxFailures caps the failed configurations a record keeps.
const MaxFailures = 16

// Progress is the state of a tuning run after a step.
type Progress struct {
	Trials, Budget, Failed int
	Generation             int
	// Best and Default are the median seconds of the best schedule so
	// far and of the default schedule (0 until measured).
	Best, Default float64
	Elapsed       time.Duration
	Done          bool
}

// Tuner searches the schedule space of one kernel by a genetic algorithm
// over real measurements, one configuration per Step.
type Tuner struct {
	spec    *ir.Spec
	space   schedSpace
	target  string // the record's Key target
	free    func() // releases the measurement's buffers
	ga      *ga.GA
	opts    Options
	start   time.Time
	pending [][]int
	seen    map[string]outcome // by schedKey
	trace   func(genome []int) // tests: called with each genome measured
	// sampled (tests) is called after each measurement.
	sampled func(genome []int, s Sample, err error)
	// measure is bench.measure or gpuBench.measure; tests replace it.
	measure func(ctx context.Context, scheds []loops.Schedule, cutoff float64) (Sample, error)
	prog    Progress
	best    []int
	fails   []*api.TrialFailure
	// units lists the statements of each tuning unit (groupOf): a fused
	// group or a statement alone.
	units [][]int
	// stmtBest is, per unit, the lowest time it took in a successful
	// trial, and stmtGenes its gene segment in that trial (nil: none yet).
	stmtBest  []float64
	stmtGenes [][]int
	// timed lists the successful trials (the default's included).
	timed []timedGenome
	// bench is the CPU tuner's measurement (nil on a GPU), which
	// TuneJointly times pairs of kernels on.
	bench *bench
	// adjust, when set, repairs each genome before it is measured
	// (Options.KeepParallel).
	adjust func(g []int)
}

// timedGenome is a measured genome and its median seconds.
type timedGenome struct {
	g    []int
	secs float64
}

// schedSpace is a schedule space the search runs over: Space for the
// CPU, GPUSpace for CUDA.
type schedSpace interface {
	Cardinalities() []int
	Default() []int
	Decode(g []int) []loops.Schedule
	Seeds() [][]int
	Features(g []int) []float64
	// stmts is the number of statements; segment(i) is statement i's
	// gene range [lo, hi), which alone drives its schedule.
	numStmts() int
	segment(i int) (lo, hi int)
}

// NewTuner prepares tuning spec's CPU kernel on this machine; it
// measures nothing yet. Close it.
func NewTuner(b *kernels.Builder, spec *ir.Spec, opts Options) (*Tuner, error) {
	if spec == nil || spec.Op == nil {
		return nil, errors.New("autotune: nil spec")
	}
	t, err := newTuner(spec, NewSpace(spec), opts)
	if err != nil {
		return nil, err
	}
	m := newBench(b, spec, opts.Timing)
	t.target, t.measure, t.free, t.bench = Target(), m.measure, m.free, m
	return t, nil
}

// NewGPUTuner prepares tuning spec's CUDA kernel on gpu (CUDAGPU: a
// device), over GPUSpace, timed with CUDA events; it measures nothing
// yet. Options.Timing.Threads is ignored. Close it.
func NewGPUTuner(gpu GPU, spec *ir.Spec, opts Options) (*Tuner, error) {
	if spec == nil || spec.Op == nil {
		return nil, errors.New("autotune: nil spec")
	}
	t, err := newTuner(spec, NewGPUSpace(spec), opts)
	if err != nil {
		return nil, err
	}
	m, err := newGPUBench(gpu, spec, opts.Timing)
	if err != nil {
		return nil, err
	}
	t.target, t.measure, t.free = gpu.Target(), m.measure, m.free
	return t, nil
}

func newTuner(spec *ir.Spec, sp schedSpace, opts Options) (*Tuner, error) {
	if opts.Trials == 0 {
		opts.Trials = DefaultTrials
	}
	if opts.Trials < 1 || opts.Time < 0 {
		return nil, errors.Errorf("autotune: trials %d and time %v must be positive", opts.Trials, opts.Time)
	}
	p := ga.Params{Population: opts.Population, Seed: opts.Seed}
	if !opts.NoModel {
		p.Model = costmodel.NewRidge(sp.Features, 0)
	}
	seeds := sp.Seeds()
	var extra [][]int
	for _, x := range opts.Seeds {
		if len(x) == len(sp.Cardinalities()) {
			extra = append(extra, x)
		}
	}
	if len(seeds) > 0 {
		seeds = append(append(seeds[:1:1], extra...), seeds[1:]...)
	}
	g, err := ga.New(sp.Cardinalities(), p, seeds...)
	if err != nil {
		return nil, errors.Wrap(err, "autotune")
	}
	units := groupOf(spec)
	if len(units) == 0 || units[len(units)-1][len(units[len(units)-1])-1] != sp.numStmts()-1 {
		return nil, errors.New("autotune: the schedule space and the spec disagree on the statements")
	}
	n := len(units)
	t := &Tuner{spec: spec, space: sp, ga: g, opts: opts, start: time.Now(), seen: map[string]outcome{},
		units: units, stmtBest: make([]float64, n), stmtGenes: make([][]int, n)}
	t.prog.Budget = opts.Trials
	if cpu, ok := sp.(*Space); ok && opts.KeepParallel && len(extra) > 0 {
		floor := extra[0]
		t.adjust = func(g []int) { cpu.keepParallel(g, floor) }
	}
	return t, nil
}

// Close releases the measurement buffers.
func (t *Tuner) Close() { t.free() }

// Step measures one configuration: the default schedule first, then the
// genetic algorithm's candidates. A configuration that fails to build,
// to run or to reproduce the default schedule's results is recorded as
// failed and the search goes on; an error is returned only when the
// default schedule itself fails or ctx ends. Step reports Done when a
// budget is spent or the space is exhausted.
func (t *Tuner) Step(ctx context.Context) (Progress, error) {
	if t.prog.Done {
		return t.prog, nil
	}
	g, scheds := t.next()
	if g == nil {
		t.prog.Done = true
		return t.prog, t.confirm(ctx)
	}
	if t.trace != nil {
		t.trace(g)
	}
	t.prefetch(ctx, scheds)
	s, err := t.measure(ctx, scheds, CutoffFactor*t.prog.Best)
	if ctx.Err() != nil {
		return t.prog, ctx.Err()
	}
	t.prog.Trials++
	if t.sampled != nil {
		t.sampled(g, s, err)
	}
	t.seen[schedKey(scheds)] = outcome{s.Seconds, err == nil}
	if err != nil {
		if t.prog.Default == 0 {
			return t.prog, errors.Wrap(err, "autotune: the default schedule")
		}
		t.prog.Failed++
		if len(t.fails) < MaxFailures {
			t.fails = append(t.fails, &api.TrialFailure{Schedules: ToProto(scheds), Error: err.Error()})
		}
		t.ga.Tell(g, 0, false)
	} else {
		t.ga.Tell(g, s.Seconds, true)
		t.noteStmts(g, s.Stmts)
		t.timed = append(t.timed, timedGenome{g, s.Seconds})
		if t.prog.Default == 0 {
			t.prog.Default = s.Seconds
		}
		if t.prog.Best == 0 || s.Seconds < t.prog.Best {
			t.prog.Best, t.best = s.Seconds, g
		}
	}
	t.prog.Elapsed = time.Since(t.start)
	t.prog.Done = t.prog.Trials >= t.opts.Trials || t.opts.Time > 0 && t.prog.Elapsed >= t.opts.Time
	if t.prog.Done {
		return t.prog, t.confirm(ctx)
	}
	return t.prog, nil
}

// confirm times the ConfirmTop fastest schedules of the search and the
// default ones again, in turns, ConfirmRounds times each, and keeps the
// one with the lowest median only when it beats the default's by MinGain:
// a search on a noisy machine otherwise keeps whichever configuration had
// one lucky measurement, which is often no faster (or slower) than the
// default, and may pass over the truly fastest, measured once in a slow
// moment. Progress then reports those medians.
func (t *Tuner) confirm(ctx context.Context) error {
	def := t.space.Default()
	set := t.distinct(def)
	for _, c := range t.fastest() {
		if len(set.list) > ConfirmTop {
			break
		}
		set.add(c.g)
	}
	if len(set.list) == 1 {
		return nil
	}
	for _, g := range t.reverts(set.list[1]) {
		set.add(g)
	}
	cands := set.list
	times := make([][]float64, len(cands))
	for range ConfirmRounds {
		if t.bench != nil { // one batch (from the cache after the first round)
			decoded := make([][]loops.Schedule, len(cands))
			for i, g := range cands {
				decoded[i] = t.space.Decode(g)
			}
			t.bench.prebuild(ctx, decoded, buildParallel(ctx))
		}
		for i, g := range cands {
			s, err := t.measure(ctx, t.space.Decode(g), 0)
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if err != nil {
				return errors.Wrap(err, "autotune: timing again")
			}
			times[i] = append(times[i], s.Seconds)
		}
	}
	meds := make([]float64, len(cands))
	for i := range times {
		slices.Sort(times[i])
		meds[i] = median(times[i])
	}
	b := 1 + slices.Index(meds[1:], slices.Min(meds[1:]))
	t.prog.Default = meds[0]
	if meds[b] > meds[0]*(1-MinGain) {
		t.best, t.prog.Best = def, meds[0]
		return nil
	}
	t.best, t.prog.Best = cands[b], meds[b]
	return nil
}

// genomeSet lists genomes whose schedules differ, in the order added.
type genomeSet struct {
	t    *Tuner
	list [][]int
	keys map[string]bool
}

// distinct is a genomeSet holding gs (a genome repeating an earlier one's
// schedules left out).
func (t *Tuner) distinct(gs ...[]int) *genomeSet {
	s := &genomeSet{t: t, keys: map[string]bool{}}
	for _, g := range gs {
		s.add(g)
	}
	return s
}

// add appends g unless a genome of the same schedules is there.
func (s *genomeSet) add(g []int) {
	if k := schedKey(s.t.space.Decode(g)); !s.keys[k] {
		s.keys[k] = true
		s.list = append(s.list, g)
	}
}

// fastest is the successful trials, fastest first.
func (t *Tuner) fastest() []timedGenome {
	sorted := slices.Clone(t.timed)
	slices.SortStableFunc(sorted, func(a, b timedGenome) int { return cmp.Compare(a.secs, b.secs) })
	return sorted
}

// reverts are genome g with one statement's gene segment set back to the
// default schedule's, one genome per statement that g schedules otherwise.
// A statement's time in a trial is that of one noisy profiled run: a
// segment measured fast once may be slower than the default, and since
// the search composes each statement's fastest segment, every top schedule
// may carry it; the confirmation round then times each revert too.
func (t *Tuner) reverts(g []int) [][]int {
	if len(t.units) < 2 {
		return nil
	}
	def := t.space.Default()
	var out [][]int
	for u := range t.units {
		lo, hi := t.unitSegment(u)
		if slices.Equal(g[lo:hi], def[lo:hi]) {
			continue
		}
		r := slices.Clone(g)
		copy(r[lo:hi], def[lo:hi])
		out = append(out, r)
	}
	return out
}

// next is the next genome to measure and its schedules, nil when the
// space is exhausted. Genomes that decode to schedules already measured
// (genes that the mode gene switches off differ, say) are told the earlier
// outcome without a new measurement: a trial is never spent timing the
// same kernel twice, which would also let timing noise pass for a win.
//
// The composition of the statements' fastest segments (composed) goes
// first in every new generation's batch, and is the last trial of the
// Trials budget, when it was not measured yet.
func (t *Tuner) next() ([]int, []loops.Schedule) {
	if t.prog.Trials == t.opts.Trials-1 {
		if g, scheds := t.composed(); g != nil {
			return g, scheds
		}
	}
	for dupes := 0; dupes < MaxDuplicates; dupes++ {
		if len(t.pending) == 0 {
			t.pending = t.ga.Ask()
			t.prog.Generation = t.ga.Generation()
			if len(t.pending) == 0 {
				return nil, nil
			}
			if g, _ := t.composed(); g != nil {
				t.pending = append([][]int{g}, t.pending...)
			}
		}
		g := t.pending[0]
		t.pending = t.pending[1:]
		if t.adjust != nil {
			g = slices.Clone(g)
			t.adjust(g)
		}
		scheds := t.space.Decode(g)
		o, dup := t.seen[schedKey(scheds)]
		if !dup {
			return g, scheds
		}
		t.ga.Tell(g, o.seconds, o.ok)
	}
	return nil, nil // the search only finds schedules it has measured
}

// noteStmts keeps, per unit, the fastest time seen (the sum of its
// statements' times stmts) and the genes of genome g that gave it (the
// earliest on ties).
func (t *Tuner) noteStmts(g []int, stmts []float64) {
	if len(stmts) != t.space.numStmts() {
		return
	}
	for u, idx := range t.units {
		secs := 0.0
		for _, i := range idx {
			secs += max(stmts[i], 0)
		}
		if stmts[idx[0]] >= 0 && (t.stmtGenes[u] == nil || secs < t.stmtBest[u]) {
			lo, hi := t.unitSegment(u)
			t.stmtBest[u], t.stmtGenes[u] = secs, slices.Clone(g[lo:hi])
		}
	}
}

// unitSegment is the gene range of unit u: its statements' segments,
// which are consecutive.
func (t *Tuner) unitSegment(u int) (lo, hi int) {
	idx := t.units[u]
	lo, _ = t.space.segment(idx[0])
	_, hi = t.space.segment(idx[len(idx)-1])
	return lo, hi
}

// composed is the genome made of each unit's fastest gene segment,
// with its schedules; nil when a statement has no time yet or when those
// schedules were measured (so always with a single statement).
func (t *Tuner) composed() ([]int, []loops.Schedule) {
	g := make([]int, 0, len(t.space.Default()))
	for _, seg := range t.stmtGenes {
		if seg == nil {
			return nil, nil
		}
		g = append(g, seg...)
	}
	scheds := t.space.Decode(g)
	if _, dup := t.seen[schedKey(scheds)]; dup {
		return nil, nil
	}
	return g, scheds
}

// outcome is a measured configuration's result.
type outcome struct {
	seconds float64
	ok      bool
}

func schedKey(scheds []loops.Schedule) string {
	var b strings.Builder
	for _, s := range scheds {
		b.WriteString(s.String())
		b.WriteByte(';')
	}
	return b.String()
}

// Run steps until a budget is spent or ctx ends (Ctrl-C); either way the
// best schedule found so far is kept, and Record returns it.
func (t *Tuner) Run(ctx context.Context, progress func(Progress)) error {
	for {
		p, err := t.Step(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		if progress != nil {
			progress(p)
		}
		if p.Done {
			return nil
		}
	}
}

// Progress is the state after the last Step.
func (t *Tuner) Progress() Progress { return t.prog }

// Best is the best schedules found so far (nil before any measurement).
func (t *Tuner) Best() []loops.Schedule {
	if t.best == nil {
		return nil
	}
	return t.space.Decode(t.best)
}

// Record is the tuning-database record of the best schedules so far, or
// nil before the default schedule was measured.
func (t *Tuner) Record() *api.TuneRecord {
	if t.best == nil {
		return nil
	}
	return &api.TuneRecord{
		Key:            KeyFor(t.spec, t.opts.Version, t.target),
		OpName:         t.spec.Op.Name,
		Schedules:      ToProto(t.Best()),
		BestSeconds:    t.prog.Best,
		DefaultSeconds: t.prog.Default,
		Trials:         int32(t.prog.Trials),
		Failures:       t.fails,
		Created:        time.Now().UTC().Format(time.RFC3339),
		Seed:           t.opts.Seed,
		Family:         Family(t.spec, t.opts.Version, t.target),
		Genome:         RecordGenome(t.best),
	}
}

// RecordGenome is genome g as a record stores it.
func RecordGenome(g []int) []int32 {
	out := make([]int32, len(g))
	for i, x := range g {
		out[i] = int32(x)
	}
	return out
}

// scaledGenes is every gene of g scaled to [0, 1] by its cardinality.
func scaledGenes(g, card []int) []float64 {
	f := make([]float64, len(g))
	for i, v := range g {
		f[i] = float64(v) / float64(max(card[i]-1, 1))
	}
	return f
}

// Features describes a genome to the cost model: every gene scaled to
// [0, 1], and for split genes the log2 of each tile factor.
func (sp *Space) Features(g []int) []float64 {
	f := scaledGenes(g, sp.card)
	split := func(ss *stmtSpace) {
		for a, choices := range ss.splits {
			for _, x := range choices[g[ss.off+numFixedGenes+a]] {
				f = append(f, math.Log2(float64(x)))
			}
		}
	}
	for _, ss := range sp.stmts {
		split(&ss)
		if ss.grp != nil {
			split(&ss.grp.dom)
		}
	}
	return f
}
