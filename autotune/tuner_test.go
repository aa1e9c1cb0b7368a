package autotune

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/internal/hostbuf"
	"github.com/neoflow/neoflow/internal/testops"
	"github.com/neoflow/neoflow/kernels/cc"
)

// quickTiming times each configuration with one run: the tests check the
// search's mechanics, not the speed of what it finds.
var quickTiming = Timing{Threads: 1, Warmup: 1, MinRuns: 1, MaxRuns: 1, MinTime: time.Nanosecond}

func tunerSpec(t *testing.T) *ir.Spec {
	t.Helper()
	o, ok := testops.Lookup("matmul")
	if !ok {
		t.Fatal("no matmul test op")
	}
	spec, err := o.Spec(ir.Float32)
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

// TestTunerRun runs a 10-trial search to its end and checks the progress
// reports, the best schedules and the record.
func TestTunerRun(t *testing.T) {
	b := testBuilder(t)
	spec := tunerSpec(t)
	tu, err := NewTuner(b, spec, Options{Trials: 10, Seed: 7, Timing: quickTiming, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	defer tu.Close()
	if tu.Best() != nil || tu.Record() != nil {
		t.Fatal("a best schedule before anything was measured")
	}
	var seen []Progress
	if err := tu.Run(context.Background(), func(p Progress) { seen = append(seen, p) }); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 10 {
		t.Fatalf("progress called %d times, want 10", len(seen))
	}
	for i, p := range seen {
		if p.Trials != i+1 || p.Budget != 10 || p.Done != (i == 9) {
			t.Errorf("progress %d: %+v, want trials %d of 10, done only at the end", i, p, i+1)
		}
		if p.Default <= 0 || p.Best <= 0 || p.Best > p.Default {
			t.Errorf("progress %d: best %v, default %v: want 0 < best <= default", i, p.Best, p.Default)
		}
		// The last report comes after the confirmation round, which times
		// the best and default schedules again: its figures are new
		// medians, not the running minimum.
		if i > 0 && !p.Done && p.Best > seen[i-1].Best {
			t.Errorf("progress %d: best went up from %v to %v", i, seen[i-1].Best, p.Best)
		}
	}
	last := tu.Progress()
	if last != seen[9] {
		t.Errorf("Progress() = %+v, the last report was %+v", last, seen[9])
	}
	// A finished tuner measures nothing more.
	if p, err := tu.Step(context.Background()); err != nil || p.Trials != 10 || !p.Done {
		t.Errorf("Step after the end: %+v, %v", p, err)
	}

	best := tu.Best()
	if len(best) != len(spec.Stmts) {
		t.Fatalf("Best() has %d schedules for %d statements", len(best), len(spec.Stmts))
	}
	inputs := hostbuf.RandomInputs(spec, true, 3)
	checkAgainstInterp(t, b, spec, best, inputs, 2)

	rec := tu.Record()
	if rec == nil {
		t.Fatal("no record after a run")
	}
	if want := Key(spec, "test"); !proto.Equal(rec.GetKey(), want) {
		t.Errorf("record key %v, want %v", rec.GetKey(), want)
	}
	if rec.GetOpName() != "matmul" || rec.GetTrials() != 10 || rec.GetSeed() != 7 {
		t.Errorf("record op %q, trials %d, seed %d; want matmul, 10, 7", rec.GetOpName(), rec.GetTrials(), rec.GetSeed())
	}
	if rec.GetBestSeconds() != last.Best || rec.GetDefaultSeconds() != last.Default || rec.GetBestSeconds() <= 0 {
		t.Errorf("record times best %v default %v, progress says %v and %v", rec.GetBestSeconds(), rec.GetDefaultSeconds(), last.Best, last.Default)
	}
	if _, err := time.Parse(time.RFC3339, rec.GetCreated()); err != nil {
		t.Errorf("record creation time: %v", err)
	}
	if len(rec.GetFailures()) != last.Failed {
		t.Errorf("%d failures recorded, progress counts %d", len(rec.GetFailures()), last.Failed)
	}
	want := ToProto(best)
	if len(rec.GetSchedules()) != len(want) {
		t.Fatalf("the record has %d schedules, Best() %d", len(rec.GetSchedules()), len(want))
	}
	for i, s := range rec.GetSchedules() {
		if !proto.Equal(s, want[i]) {
			t.Errorf("the record's schedule %d is %v, Best() says %v", i, s, want[i])
		}
	}
	stored, err := FromProto(rec.GetSchedules())
	if err != nil {
		t.Fatal(err)
	}
	checkAgainstInterp(t, b, spec, stored, inputs, 2)

	// Which genome won depends on timing, and it is often the default
	// one; make the record's conversion visible with a known tiled best.
	g := randomGenome(rand.New(rand.NewPCG(1, 2)), tu.space.Cardinalities())
	g[geneMode] = 1
	tu.best = g
	want = ToProto(tu.space.Decode(g))
	if want[0].GetTiling() == nil {
		t.Fatalf("genome %v decodes to an untiled schedule", g)
	}
	got := tu.Record().GetSchedules()
	if len(got) != 1 || !proto.Equal(got[0], want[0]) {
		t.Errorf("with best genome %v the record holds %v, want %v", g, got, want)
	}
}

// TestTunerCancel cancels the context from the progress callback after
// three trials: Run returns no error and the best so far is kept.
func TestTunerCancel(t *testing.T) {
	b := testBuilder(t)
	spec := tunerSpec(t)
	tu, err := NewTuner(b, spec, Options{Trials: 50, Seed: 1, Timing: quickTiming, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	defer tu.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	calls := 0
	err = tu.Run(ctx, func(p Progress) {
		calls++
		if p.Trials == 3 {
			cancel()
		}
	})
	if err != nil {
		t.Fatalf("Run after cancel: %v", err)
	}
	p := tu.Progress()
	if calls != 3 || p.Trials != 3 || p.Done {
		t.Errorf("after cancelling at trial 3: %d progress calls, progress %+v", calls, p)
	}
	if _, err := tu.Step(ctx); err == nil {
		t.Error("Step with a cancelled context: no error")
	}
	if got := tu.Progress().Trials; got != 3 {
		t.Errorf("a cancelled Step counted a trial: %d", got)
	}
	best := tu.Best()
	if best == nil || tu.Record() == nil || tu.Record().GetTrials() != 3 || p.Best <= 0 {
		t.Fatalf("no best kept after cancelling: best %v, record %v", best, tu.Record())
	}
	checkAgainstInterp(t, b, spec, best, hostbuf.RandomInputs(spec, true, 5), 2)
}

// askedGenomes steps tu n times and returns the genome each Step
// measured, through the tuner's trace hook.
func askedGenomes(t *testing.T, tu *Tuner, n int) [][]int {
	t.Helper()
	var out [][]int
	tu.trace = func(g []int) { out = append(out, slices.Clone(g)) }
	for range n {
		if _, err := tu.Step(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// TestTunerSeedDeterminism checks that equal seeds ask the same genomes
// in the same order and a different seed does not. Which genomes a later
// generation breeds depends on the measured times, so the comparison
// stays inside generation 0 (the seeds and 6 random genomes, population
// 64; genomes decoding to schedules already measured are skipped): there
// the order depends only on the seed.
func TestTunerSeedDeterminism(t *testing.T) {
	b := testBuilder(t)
	spec := tunerSpec(t)
	sp := NewSpace(spec)
	trials := len(sp.Seeds()) + 6
	run := func(seed int64) [][]int {
		tu, err := NewTuner(b, spec, Options{Trials: trials, Seed: seed, Population: 64, Timing: quickTiming, Version: "test"})
		if err != nil {
			t.Fatal(err)
		}
		defer tu.Close()
		got := askedGenomes(t, tu, trials)
		if p := tu.Progress(); p.Generation != 0 || p.Trials != trials || !p.Done {
			t.Fatalf("seed %d: progress %+v, want %d trials done in generation 0", seed, p, trials)
		}
		return got
	}
	first, again := run(42), run(42)
	if !slices.Equal(first[0], sp.Default()) {
		t.Errorf("the first genome measured is %v, not the default %v", first[0], sp.Default())
	}
	for i := range first {
		if !slices.Equal(first[i], again[i]) {
			t.Fatalf("seed 42: trial %d measured %v, then %v", i, first[i], again[i])
		}
		for j := range i {
			if slices.Equal(first[i], first[j]) {
				t.Errorf("trials %d and %d measured the same genome %v", j, i, first[i])
			}
		}
	}
	other := run(43)
	if slices.EqualFunc(first, other, slices.Equal) {
		t.Error("seeds 42 and 43 asked the same genomes")
	}
}

// The CPU tuner builds a generation's candidates in batches, one C
// compiler run per PrefetchPerCompiler kernels, before it measures them:
// a 10-trial search compiles far fewer times than it measures, and every
// prebuilt kernel is measured or closed. At a low priority (as behind a
// training) it runs one compiler, whatever the CPUs.
func TestTunerBuildsCandidatesInBatches(t *testing.T) {
	b := testBuilder(t)
	spec := tunerSpec(t)
	tu, err := NewTuner(b, spec, Options{Trials: 10, Seed: 7, Timing: quickTiming, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	loaded := cc.NumLoaded()
	if err := tu.Run(cc.WithLowPriority(context.Background()), nil); err != nil {
		t.Fatal(err)
	}
	if tu.Record() == nil || tu.Progress().Failed > 0 {
		t.Fatalf("the search failed: %+v", tu.Progress())
	}
	// The 10 trials' kernels in 4 batches, the confirmation's (the default,
	// up to ConfirmTop others and reverts) in at most 2; each batch one
	// miss. A compiler run per kernel made 12.
	if st := b.Stats(); st.Misses > 6 {
		t.Errorf("%d compiler runs for a 10-trial search; want the candidates built in batches", st.Misses)
	}
	tu.Close()
	if n := cc.NumLoaded() - loaded; n > 0 {
		t.Errorf("%d libraries still loaded after Close", n)
	}
}

// With KeepParallel, every genome a search measures runs at least the
// outer loops in parallel that its first seed does, statement by
// statement (background mode's worker times on one thread, which would
// not tell a serial loop from a parallel one); without it, random
// genomes of the same search drop them.
func TestTunerKeepsTheSeedsParallelism(t *testing.T) {
	b := testBuilder(t)
	gemm := gemmSpec(t, 64, 64, 64, ir.Float32)
	sp := NewSpace(gemm)
	seed := sp.registerTiled()
	at := sp.stmts[0].off + geneParallel
	if seed[sp.stmts[0].off+geneMode] == 0 || seed[at] == 0 {
		t.Fatalf("the register-tiled seed %v runs nothing in parallel", seed)
	}
	const trials = 24
	run := func(keep bool) (fewer int) {
		tu, err := NewTuner(b, gemm, Options{Trials: trials, Seed: 3, Seeds: [][]int{seed}, Timing: quickTiming, Version: "test", KeepParallel: keep})
		if err != nil {
			t.Fatal(err)
		}
		defer tu.Close()
		for _, g := range askedGenomes(t, tu, trials)[1:] { // the default genome is measured as it is
			if g[sp.stmts[0].off+geneMode] != 0 && g[at] < seed[at] {
				fewer++
			}
		}
		checkAgainstInterp(t, b, gemm, tu.Best(), hostbuf.RandomInputs(gemm, true, 7), 2)
		return fewer
	}
	if n := run(true); n != 0 {
		t.Errorf("KeepParallel: %d tiled genomes measured with fewer parallel loops than the seed's %d", n, seed[at])
	}
	if n := run(false); n == 0 {
		t.Error("without KeepParallel no genome had fewer parallel loops than the seed: the test shows nothing")
	}
}
