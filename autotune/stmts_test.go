package autotune

import (
	"context"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/loops"
	"github.com/neoflow/neoflow/core/pipeline"
	"github.com/neoflow/neoflow/internal/testops"
)

// multiSpec is a test op of several statements.
func multiSpec(t *testing.T, name string) *ir.Spec {
	t.Helper()
	o, ok := testops.Lookup(name)
	if !ok {
		t.Fatalf("no %s test op", name)
	}
	spec, err := o.Spec(ir.Float32)
	if err != nil {
		t.Fatal(err)
	}
	if len(spec.Stmts) < 2 {
		t.Fatalf("%s has %d statements, want several", name, len(spec.Stmts))
	}
	return spec
}

// TestMeasureStmts checks the per-statement times of a sample: one
// positive time per statement, adding up to about the kernel's time (at
// most its time when the sample is a single run, the cutoff path).
func TestMeasureStmts(t *testing.T) {
	b := testBuilder(t)
	spec := multiSpec(t, "softmax")
	m := newBench(b, spec, Timing{Threads: 1, Warmup: 1, MinRuns: 9, MaxRuns: 9, MinTime: time.Nanosecond})
	defer m.free()
	check := func(what string, s Sample, bound float64) {
		t.Helper()
		if len(s.Stmts) != len(spec.Stmts) {
			t.Fatalf("%s: %d statement times for %d statements", what, len(s.Stmts), len(spec.Stmts))
		}
		sum := 0.0
		for i, x := range s.Stmts {
			if !(x > 0) {
				t.Errorf("%s: statement %d took %v s", what, i, x)
			}
			sum += x
		}
		if sum > bound {
			t.Errorf("%s: the statements took %v s (%v), more than %v; the kernel %v", what, sum, s.Stmts, bound, s.Seconds)
		}
	}
	s, err := m.measure(context.Background(), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	if s.Runs != 9 {
		t.Errorf("%d runs, want 9", s.Runs)
	}
	// Medians do not add up exactly; each run's statements take less
	// than the run.
	check("timed", s, 1.5*s.Seconds)
	g := NewSpace(spec).Seeds()[1]
	s, err = m.measure(context.Background(), NewSpace(spec).Decode(g), 1e-12)
	if err != nil {
		t.Fatal(err)
	}
	if s.Runs != 1 {
		t.Errorf("a cut off configuration ran %d times", s.Runs)
	}
	check("cut off", s, s.Seconds)
}

// TestComposeSegments checks that the statements' gene segments compose:
// a genome made of segments of random genomes schedules every statement
// as the genome its segment came from, and lowers.
func TestComposeSegments(t *testing.T) {
	for _, name := range []string{"softmax", "prod_min"} {
		spec := multiSpec(t, name)
		sp := NewSpace(spec)
		rng := rand.New(rand.NewPCG(3, 4))
		for range 20 {
			var src [][]int
			var g []int
			for i := range sp.stmts {
				r := randomGenome(rng, sp.Cardinalities())
				if !sp.stmts[i].scatter {
					r[sp.stmts[i].off+geneMode] = rng.IntN(2) // tiled half the time
				}
				lo, hi := sp.segment(i)
				src = append(src, r)
				g = append(g, r[lo:hi]...)
			}
			if len(g) != len(sp.card) {
				t.Fatalf("%s: the segments hold %d genes, the genome %d", name, len(g), len(sp.card))
			}
			got := sp.Decode(g)
			for i := range sp.stmts {
				if want := sp.Decode(src[i])[i]; got[i].String() != want.String() {
					t.Errorf("%s statement %d: composed %v, from its genome %v", name, i, got[i], want)
				}
			}
			if _, err := pipeline.Lower(spec, func(_ *ir.Spec, i int) loops.Schedule { return got[i] }); err != nil {
				t.Errorf("%s: composed genome %v: %v", name, g, err)
			}
		}
	}
}

// TestComposedBookkeeping feeds statement times to a tuner by hand: the
// composition takes each statement's fastest segment (the earliest on
// ties) and is withdrawn once its schedules are measured.
func TestComposedBookkeeping(t *testing.T) {
	spec := multiSpec(t, "prod_min")
	tu, err := NewTuner(testBuilder(t), spec, Options{Seed: 1, Timing: quickTiming})
	if err != nil {
		t.Fatal(err)
	}
	defer tu.Close()
	sp := tu.space.(*Space)
	if g, _ := tu.composed(); g != nil {
		t.Fatalf("a composition %v before any time", g)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	a, b, c := randomGenome(rng, sp.card), randomGenome(rng, sp.card), randomGenome(rng, sp.card)
	tu.noteStmts(a, []float64{1, 5})
	tu.noteStmts(b, []float64{3, 2})
	tu.noteStmts(c, []float64{1, 2}) // ties keep a's and b's
	tu.noteStmts(c, []float64{0.5})  // a wrong length is ignored
	lo, hi := sp.segment(1)
	want := slices.Concat(a[:lo], b[lo:hi])
	g, scheds := tu.composed()
	if !slices.Equal(g, want) {
		t.Fatalf("composed %v, want %v", g, want)
	}
	if schedKey(scheds) != schedKey(sp.Decode(want)) {
		t.Errorf("composed schedules %v, want %v", scheds, sp.Decode(want))
	}
	tu.seen[schedKey(scheds)] = outcome{1, true}
	if g, _ := tu.composed(); g != nil {
		t.Errorf("composition %v offered again after it was measured", g)
	}
}

// composeRun runs tu to its end and checks, from the samples its trials
// gave, that it measures the composition of the statements' fastest
// segments when that is new: first in every new batch, and in the last
// trial. It returns how many trials measured a composition. Every
// successful sample must have one time per statement, and the budget is
// kept.
func composeRun(t *testing.T, tu *Tuner, trials int) (hits int) {
	t.Helper()
	sp := tu.space.(*Space)
	var traced [][]int
	var gens []int
	var samples []Sample
	var oks []bool
	tu.trace = func(g []int) {
		traced = append(traced, slices.Clone(g))
		gens = append(gens, tu.Progress().Generation)
	}
	tu.sampled = func(g []int, s Sample, err error) {
		samples = append(samples, s)
		oks = append(oks, err == nil)
	}
	if err := tu.Run(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if len(traced) != trials || len(samples) != trials || tu.Progress().Trials != trials {
		t.Fatalf("%d genomes traced, %d sampled, %d trials; want %d", len(traced), len(samples), tu.Progress().Trials, trials)
	}
	// composition is the composition of the fastest segments of the
	// first n trials, or nil when its schedules were among them.
	composition := func(n int) []int {
		best := make([]float64, len(sp.stmts))
		segs := make([][]int, len(sp.stmts))
		for j := range n {
			if !oks[j] {
				continue
			}
			for i, x := range samples[j].Stmts {
				if segs[i] == nil || x < best[i] {
					lo, hi := sp.segment(i)
					best[i], segs[i] = x, traced[j][lo:hi]
				}
			}
		}
		if slices.ContainsFunc(segs, func(seg []int) bool { return seg == nil }) {
			return nil
		}
		g := slices.Concat(segs...)
		for _, m := range traced[:n] {
			if schedKey(sp.Decode(m)) == schedKey(sp.Decode(g)) {
				return nil
			}
		}
		return g
	}
	for j, s := range samples {
		if oks[j] && len(s.Stmts) != len(sp.stmts) {
			t.Errorf("trial %d: %d statement times for %d statements", j, len(s.Stmts), len(sp.stmts))
		}
		g := composition(j)
		if g != nil && slices.Equal(traced[j], g) {
			hits++
		}
		if batch := j > 0 && gens[j] != gens[j-1]; (batch || j == trials-1) && g != nil && !slices.Equal(traced[j], g) {
			t.Errorf("trial %d (generation %d) measured %v, not the new composition %v", j, gens[j], traced[j], g)
		}
	}
	return hits
}

// TestTunerComposes tunes a four-statement op with real measurements: the
// composition is measured whenever it is new (which depends on timing).
func TestTunerComposes(t *testing.T) {
	const trials = 16
	tu, err := NewTuner(testBuilder(t), multiSpec(t, "softmax"), Options{Trials: trials, Seed: 3, Population: 4, NoModel: true, Timing: quickTiming, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	defer tu.Close()
	hits := composeRun(t, tu, trials)
	t.Logf("%d of %d trials measured a composition", hits, trials)
}

// TestTunerComposesFake tunes with a fake measurement whose statement
// times depend on the statement's schedule alone, so that the run is
// reproducible and a composition is faster than the genomes it was
// composed of: some trials must measure one.
func TestTunerComposesFake(t *testing.T) {
	const trials = 24
	tu := fakeTuner(t, trials, 3)
	tu.measure = func(_ context.Context, scheds []loops.Schedule, _ float64) (Sample, error) {
		s := Sample{Runs: 1}
		for _, sc := range scheds {
			h := fnv.New64a()
			h.Write([]byte(sc.String()))
			x := 1e-6 * (1 + float64(h.Sum64()%1000)/1000)
			s.Stmts = append(s.Stmts, x)
			s.Seconds += x
		}
		s.Seconds += 1e-7 // the call
		s.Min, s.Max = s.Seconds, s.Seconds
		return s, nil
	}
	hits := composeRun(t, tu, trials)
	if hits == 0 {
		t.Error("no trial measured a composition")
	}
	t.Logf("%d of %d trials measured a composition", hits, trials)
}

// TestConfirm checks the final round: a best schedule whose win does not
// hold up when timed again alternately with the default is dropped for
// the default; one that holds up is kept.
func TestConfirm(t *testing.T) {
	for _, lucky := range []bool{true, false} {
		tu := fakeTuner(t, 6, 1)
		defKey := schedKey(tu.space.Decode(tu.space.Default()))
		seen := map[string]int{}
		tu.measure = func(_ context.Context, scheds []loops.Schedule, _ float64) (Sample, error) {
			k := schedKey(scheds)
			seen[k]++
			secs := 2e-3 // the default
			if k != defKey {
				secs = 1e-3 // a real win
				if lucky && seen[k] > 1 {
					secs = 2.5e-3 // only the first measurement was fast
				}
			}
			return fakeSample(secs, len(scheds)), nil
		}
		if err := tu.Run(context.Background(), nil); err != nil {
			t.Fatal(err)
		}
		best := schedKey(tu.Best())
		switch {
		case lucky && best != defKey:
			t.Errorf("lucky: kept %s, want the default", best)
		case !lucky && best == defKey:
			t.Error("a real win was dropped")
		case !lucky && tu.Progress().Best != 1e-3:
			t.Errorf("best %v after confirmation, want 1e-3", tu.Progress().Best)
		}
	}
}

// TestConfirmRunnerUp checks that the final round considers the runners-up:
// a schedule measured slower than two others during the search, in a slow
// moment, is kept when timing it again shows it fastest.
func TestConfirmRunnerUp(t *testing.T) {
	tu := fakeTuner(t, 4, 1)
	defKey := schedKey(tu.space.Decode(tu.space.Default()))
	seen := map[string]int{}
	unlucky := ""
	tu.measure = func(_ context.Context, scheds []loops.Schedule, _ float64) (Sample, error) {
		k := schedKey(scheds)
		seen[k]++
		secs := 2e-3 // the default
		switch {
		case k == defKey:
		case unlucky == "" || k == unlucky:
			unlucky = k
			secs = 0.5e-3
			if seen[k] == 1 {
				secs = 1.6e-3 // measured in a slow moment
			}
		default:
			secs = 1.5e-3
		}
		return fakeSample(secs, len(scheds)), nil
	}
	if err := tu.Run(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if len(seen) < 4 {
		t.Fatalf("%d distinct schedules measured, want 4", len(seen))
	}
	if got := schedKey(tu.Best()); got != unlucky || tu.Progress().Best != 0.5e-3 {
		t.Errorf("kept %s at %v s, want the runner-up %s at 0.5 ms", got, tu.Progress().Best, unlucky)
	}
}

// fakeSample is a one-run sample of secs seconds shared evenly by n
// statements.
// fakeTuner is a tuner of the softmax test op, without cost model, for
// tests that replace its measurement; it is closed when the test ends.
func fakeTuner(t *testing.T, trials int, seed int64) *Tuner {
	t.Helper()
	spec := multiSpec(t, "softmax")
	tu, err := NewTuner(testBuilder(t), spec, Options{Trials: trials, Seed: seed, Population: 4, NoModel: true, Timing: quickTiming, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tu.Close)
	return tu
}

func fakeSample(secs float64, n int) Sample {
	st := make([]float64, n)
	for i := range st {
		st[i] = secs / float64(n)
	}
	return Sample{Seconds: secs, Min: secs, Max: secs, Runs: 1, Stmts: st}
}

// TestConfirmRevertsAStatement checks that the final round times the best
// schedule with a statement set back to its default: here statement 0's
// tiled schedules are measured fast on their first run and are slower
// than its default on every later one, so every top schedule of the
// search carries a tiled statement 0; the tuner must keep statement 0's
// default and the other statements' wins.
func TestConfirmRevertsAStatement(t *testing.T) {
	tu := fakeTuner(t, 12, 1)
	def := tu.space.Decode(tu.space.Default())
	seen := map[string]int{}
	tu.measure = func(_ context.Context, scheds []loops.Schedule, _ float64) (Sample, error) {
		k := schedKey(scheds)
		seen[k]++
		s := Sample{Runs: 1}
		for i, sc := range scheds {
			x := 2e-3 // a default schedule
			switch {
			case sc.String() == def[i].String():
			case i == 0 && seen[k] == 1:
				x = 0.1e-3 // statement 0 tiled, its lucky first run
			case i == 0:
				x = 3e-3
			default:
				x = 0.5e-3 // a real win
			}
			s.Stmts = append(s.Stmts, x)
			s.Seconds += x
		}
		s.Min, s.Max = s.Seconds, s.Seconds
		return s, nil
	}
	if err := tu.Run(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	best := tu.Best()
	if best[0].String() != def[0].String() {
		t.Errorf("statement 0 kept %v, want its default %v", best[0], def[0])
	}
	if schedKey(best) == schedKey(def) {
		t.Error("the other statements' wins were dropped")
	}
}
