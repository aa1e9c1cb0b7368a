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

// Picking the first build's schedules. A kernel without a tuning record
// is built with schedules chosen, statement by statement (a fused group as
// one), among a few candidates measured once on the tuner's own buffers:
// the default schedule, the register-tiled heuristic for the reductions
// of their own (8 rows of 4 vectors, the search's usual winner for long
// contractions: GEMM 1024³ runs 10 ms with it against 98 ms by default on
// the 2-core development machine, while a contraction over a batch of 16
// runs several times slower with it) and the search's seeds (Seeds: the
// heuristic's other register tiles, lanes over a reduction, packed lanes,
// the groups' tilings). All are built with per-statement timing at once,
// each is launched three times (the least of the last two launches counts;
// a candidate whose first launch takes more than slowFactor times the
// fastest first launch so far is not launched again and not chosen), and each statement takes
// the fastest one's schedule; segments of genomes compose (Space.Decode).

// slowFactor drops a candidate whose first launch is that many times
// slower than the fastest one's.
const slowFactor = 3

// PickMinOps is the work (points of the reduction statements) below
// which a kernel keeps its default schedules unmeasured: two more builds
// cost more than such a kernel can gain.
const PickMinOps = 1 << 22

// Pick is the outcome of PickDefaults.
type Pick struct {
	// Schedules is one per statement; nil when every statement keeps its
	// default (or nothing was measured).
	Schedules []loops.Schedule
	// defaults is the default schedules, where they were measured.
	defaults []loops.Schedule
	// Default and Best are the measured seconds of the default schedules
	// and of the picked ones (the sum of the faster statements' times).
	Default, Best float64
	// Changed counts the statements (fused groups) that took another
	// schedule than the default.
	Changed int
	// Candidates is the schedules measured (the default included).
	Candidates int
	// Genome is the picked schedules' genome in NewSpace(spec), nil with
	// Schedules (a seed for a search: Options.Seeds).
	Genome []int
}

// Picks reports whether PickDefaults measures spec: enough work, and a
// candidate that differs from the default.
func Picks(spec *ir.Spec) bool {
	return reductionPoints(spec) >= PickMinOps && len(pickCandidates(NewSpace(spec))) > 1
}

// pickCandidates is the default genome, then the other candidates, each
// once.
func pickCandidates(sp *Space) [][]int {
	out := [][]int{sp.Default()}
	for _, g := range append([][]int{sp.registerTiled()}, sp.Seeds()...) {
		if !slices.ContainsFunc(out, func(o []int) bool { return slices.Equal(o, g) }) {
			out = append(out, g)
		}
	}
	return out
}

// Decided is one schedule per statement: the picked ones, or the defaults
// where none was picked.
func (p *Pick) Decided() []loops.Schedule {
	if p.Schedules != nil {
		return p.Schedules
	}
	return p.defaults
}

// PickBuilds is how many C compilers PickDefaults runs at once, each on
// a batch of at most PrefetchPerCompiler candidates (kernels.Builder.
// BuildKernelsParallel): one
// fewer than the CPUs (one at least), since picks run behind a training,
// which keeps a CPU.
var PickBuilds = max(runtime.NumCPU()-1, 1)

// PickDefaults measures spec's candidate schedules with threads threads,
// extra genomes (a warm start's) among them, and returns the fastest per
// statement. Kernels with too little work (PickMinOps), or whose
// candidates are all the default, are not measured.
func PickDefaults(ctx context.Context, b *kernels.Builder, spec *ir.Spec, threads int, extra [][]int) (*Pick, error) {
	sp := NewSpace(spec)
	cands := pickCandidates(sp)
	for _, g := range extra {
		if len(g) == len(sp.card) && !slices.ContainsFunc(cands, func(o []int) bool { return slices.Equal(o, g) }) {
			cands = append(cands, g)
		}
	}
	if len(cands) < 2 || reductionPoints(spec) < PickMinOps {
		return &Pick{}, nil
	}
	batch := kernels.Batch{Profiled: true, PerRun: PrefetchPerCompiler}
	for _, g := range cands {
		batch.Specs, batch.Scheds = append(batch.Specs, spec), append(batch.Scheds, sp.Decode(g))
	}
	ks, err := b.BuildKernelsParallel(ctx, batch, PickBuilds)
	if err != nil {
		return nil, errors.Wrap(err, "picking the default schedules")
	}
	for _, k := range ks {
		defer func() { _ = k.Close() }()
	}
	bufs := hostbuf.New(spec, hostbuf.RandomInputs(spec, false, 1))
	defer bufs.Free()
	times := make([][]float64, len(cands))
	fastest := math.Inf(1)
	for i, k := range ks {
		t, err := statementTimes(k, bufs, threads, slowFactor*fastest)
		if err != nil {
			return nil, errors.Wrap(err, "picking the default schedules")
		}
		times[i] = t
		if t != nil {
			fastest = min(fastest, sum(t))
		}
	}
	p := compose(sp, spec, cands, times)
	p.Candidates = len(cands)
	return p, nil
}

func sum(xs []float64) float64 {
	var s float64
	for _, x := range xs {
		s += x
	}
	return s
}

// compose takes each fused group's segments (a statement of its own is a
// group of one) from the candidate that ran the group fastest; a
// candidate without times (dropped as slow) is never taken. The default
// (candidate 0) always has times.
func compose(sp *Space, spec *ir.Spec, cands [][]int, times [][]float64) *Pick {
	p := &Pick{}
	g := slices.Clone(cands[0])
	for lo := 0; lo < len(spec.Stmts); {
		hi := lo + 1
		for hi < len(spec.Stmts) && spec.Stmts[hi].Joined {
			hi++
		}
		group := func(c int) float64 { return sum(times[c][lo:hi]) }
		from := 0
		for c := range cands {
			if times[c] != nil && group(c) < group(from) {
				from = c
			}
		}
		if from != 0 {
			p.Changed++
		}
		for i := lo; i < hi; i++ {
			a, b := sp.segment(i)
			copy(g[a:b], cands[from][a:b])
		}
		p.Default += group(0)
		p.Best += group(from)
		lo = hi
	}
	if p.Changed > 0 {
		p.Schedules, p.Genome = sp.Decode(g), g
	}
	p.defaults = sp.Decode(cands[0])
	return p
}

// statementTimes launches profiled kernel k three times on bufs and
// returns the least of the last two launches' seconds per statement (the
// picks run behind a training, at a low priority: a launch it preempts
// takes longer, none takes less), or nil when the first launch took longer
// than limit seconds.
func statementTimes(k *kernels.Kernel, bufs *hostbuf.Buffers, threads int, limit float64) ([]float64, error) {
	n := len(k.Spec().Stmts)
	times := make([]float64, max(n, 1))
	var pin runtime.Pinner
	pin.Pin(&times[0])
	defer pin.Unpin()
	ptrs := append(slices.Clone(bufs.Ptr), unsafe.Pointer(&times[0]))
	var best []float64
	for i := range 3 {
		clear(times)
		start := time.Now()
		if err := k.Launch(ptrs, threads); err != nil {
			return nil, err
		}
		switch {
		case i == 0 && time.Since(start).Seconds() > limit:
			return nil, nil
		case i == 1:
			best = slices.Clone(times[:n])
		case i == 2:
			for j := range best {
				best[j] = min(best[j], times[j])
			}
		}
	}
	return best, nil
}

// reductionPoints is the points of spec's reduction statements.
func reductionPoints(spec *ir.Spec) int64 {
	var n int64
	for _, st := range spec.Stmts {
		if st.Stmt.Reduce != ir.Assign {
			n += st.Points()
		}
	}
	return n
}
