package ga

import (
	"math"
	"slices"
	"testing"
)

func TestReproducible(t *testing.T) {
	card := uniformCard(8, 8)
	f := separable([]int{1, 6, 3, 0, 7, 2, 5, 4})
	run := func(seed int64) [][][]int {
		return drive(t, mustNew(t, card, Params{Seed: seed}), f, 10)
	}
	a, b := run(7), run(7)
	if len(a) != 10 {
		t.Fatalf("got %d generations, want 10", len(a))
	}
	if !equalBatches(a, b) {
		t.Error("same seed gave different Ask sequences")
	}
	if equalBatches(a, run(8)) {
		t.Error("seeds 7 and 8 gave identical Ask sequences")
	}
}

func TestAskRepeatsUntold(t *testing.T) {
	g := mustNew(t, uniformCard(4, 5), Params{Population: 6, Seed: 1})
	first := g.Ask()
	if len(first) != 6 {
		t.Fatalf("initial batch has %d genomes, want 6", len(first))
	}
	g.Tell(first[1], 2, true)
	g.Tell(first[4], 3, false)
	again := g.Ask()
	want := [][]int{first[0], first[2], first[3], first[5]}
	if !slices.EqualFunc(again, want, slices.Equal[[]int]) {
		t.Fatalf("Ask before all told = %v, want untold remainder %v", again, want)
	}
	for _, genome := range again {
		g.Tell(genome, 1, true)
	}
	next := g.Ask()
	if g.Generation() != 1 || len(next) != 6-2 {
		t.Fatalf("generation %d with %d children, want 1 with 4", g.Generation(), len(next))
	}
}

func TestSeedsFirstAndDeduplicated(t *testing.T) {
	s := []int{3, 3, 3}
	g := mustNew(t, uniformCard(3, 4), Params{Population: 5, Seed: 1}, s, []int{0, 1, 2}, s)
	batch := g.Ask()
	if len(batch) != 5 || !slices.Equal(batch[0], s) || !slices.Equal(batch[1], []int{0, 1, 2}) {
		t.Fatalf("initial batch %v does not start with the two distinct seeds", batch)
	}
}

func TestElitism(t *testing.T) {
	g := mustNew(t, uniformCard(8, 8), Params{Seed: 3})
	f := separable([]int{2, 2, 5, 5, 0, 7, 1, 6})
	told := map[string]bool{}
	prev := math.Inf(1)
	for gen := range 15 {
		batch := g.Ask()
		if g.Generation() != gen {
			t.Fatalf("Generation %d, want %d", g.Generation(), gen)
		}
		// The elites are the first members, the best told so far, and
		// are not asked again.
		if gen > 0 {
			elites := g.members[:g.p.Elite]
			if r := g.records[elites[0]]; r.seconds != prev {
				t.Fatalf("generation %d: first elite %v s, best %v s", gen, r.seconds, prev)
			}
			if len(batch) != g.p.Population-g.p.Elite {
				t.Fatalf("generation %d: %d children", gen, len(batch))
			}
		}
		for _, genome := range batch {
			if told[key(genome)] {
				t.Fatalf("generation %d: told genome %v asked again", gen, genome)
			}
			told[key(genome)] = true
			secs, ok := f(genome)
			g.Tell(genome, secs, ok)
		}
		_, secs, found := g.Best()
		if !found || secs > prev {
			t.Fatalf("generation %d: best %v (found %v) after %v", gen, secs, found, prev)
		}
		prev = secs
	}
}

func TestTinySpaceExhausts(t *testing.T) {
	g := mustNew(t, []int{2, 2}, Params{Seed: 1})
	batches := drive(t, g, separable([]int{1, 0}), 100)
	if len(batches) != 1 || len(batches[0]) != 4 {
		t.Fatalf("batches %v, want one batch of all 4 genomes", batches)
	}
	if !g.Exhausted() || g.Measured() != 4 || len(g.Ask()) != 0 || g.Generation() != 0 {
		t.Fatalf("exhausted %v measured %d generation %d", g.Exhausted(), g.Measured(), g.Generation())
	}
	if best, secs, _ := g.Best(); !slices.Equal(best, []int{1, 0}) || secs != 1 {
		t.Fatalf("best %v %v", best, secs)
	}
}

func TestSmallSpaceNoDuplicates(t *testing.T) {
	// 3·4·2·3 = 72 genomes, 8 per generation: breeding runs into told
	// genomes and falls back to enumeration until the space is exhausted.
	card := []int{3, 4, 2, 3}
	for seed := range int64(4) {
		g := mustNew(t, card, Params{Population: 8, Seed: seed})
		batches := drive(t, g, separable([]int{2, 0, 1, 1}), 100)
		n := 0
		for _, b := range batches {
			n += len(b)
		}
		if n != 72 || !g.Exhausted() || len(g.Ask()) != 0 {
			t.Fatalf("seed %d: asked %d of 72, exhausted %v", seed, n, g.Exhausted())
		}
	}
}

func TestTellUnasked(t *testing.T) {
	g := mustNew(t, []int{2, 3}, Params{Seed: 1})
	g.Tell([]int{1, 2}, 0.5, true)
	g.Tell([]int{1, 2}, 0.1, true) // second Tell ignored
	g.Tell([]int{0, 0}, 1, false)
	g.Tell([]int{5, 0}, 1, true) // out of range: ignored
	g.Tell([]int{0, 1}, 0, true) // zero seconds: a failure
	if g.Measured() != 3 {
		t.Fatalf("measured %d, want 3", g.Measured())
	}
	for _, genome := range g.Ask() {
		if slices.Equal(genome, []int{1, 2}) || slices.Equal(genome, []int{0, 0}) || slices.Equal(genome, []int{0, 1}) {
			t.Fatalf("told genome %v asked", genome)
		}
	}
	if best, secs, _ := g.Best(); !slices.Equal(best, []int{1, 2}) || secs != 0.5 {
		t.Fatalf("best %v %v", best, secs)
	}
}

func TestDefaults(t *testing.T) {
	p := mustNew(t, uniformCard(5, 3), Params{}).Params()
	if p.Population != 16 || p.Elite != 2 || p.MutationRate != 0.2 || p.Oversample != 4 || p.ModelWarmup != 32 {
		t.Fatalf("defaults %+v", p)
	}
	p = mustNew(t, []int{3}, Params{Population: 1, Elite: -1, ModelWarmup: -1}).Params()
	if p.Elite != 0 || p.ModelWarmup != 0 {
		t.Fatalf("negative Elite/ModelWarmup: %+v", p)
	}
	if p := mustNew(t, []int{3}, Params{Population: 2}).Params(); p.Elite != 1 {
		t.Fatalf("Population 2 default Elite %d, want 1", p.Elite)
	}
}
