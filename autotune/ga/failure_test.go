package ga

import "testing"

func TestFailuresNeverParentsNorReasked(t *testing.T) {
	target := []int{1, 2, 3, 0, 1, 2}
	good := separable(target)
	// Every genome with gene 0 == 0 fails; the optimum (gene 0 == 1) is
	// reachable, gene 0 == 0 would otherwise be the second best value.
	f := func(genome []int) (float64, bool) {
		if genome[0] == 0 {
			return 0, false
		}
		return good(genome)
	}
	g := mustNew(t, []int{4, 4, 4, 4, 4, 4}, Params{Seed: 5}, []int{0, 0, 0, 0, 0, 0})
	told := map[string]bool{}
	failures := 0
	for gen := range 20 {
		batch := g.Ask()
		for _, genome := range batch {
			if told[key(genome)] {
				t.Fatalf("generation %d: genome %v asked again", gen, genome)
			}
			told[key(genome)] = true
			secs, ok := f(genome)
			if !ok {
				failures++
			}
			g.Tell(genome, secs, ok)
		}
		// The wheel the next Ask breeds from holds no failure.
		w := g.newWheel(g.members)
		if len(w.genomes) < 2 {
			t.Fatalf("generation %d: %d successful members", gen, len(w.genomes))
		}
		for _, p := range w.genomes {
			if p[0] == 0 {
				t.Fatalf("generation %d: failed genome %v is a parent candidate", gen, p)
			}
		}
		for _, e := range g.elites() {
			if !g.records[e].ok {
				t.Fatalf("generation %d: failed elite", gen)
			}
		}
		if best, _, _ := g.Best(); best[0] == 0 {
			t.Fatalf("generation %d: Best %v failed", gen, best)
		}
	}
	if failures == 0 {
		t.Fatal("no failure was measured; the test checks nothing")
	}
}

func TestAllFailuresExhaust(t *testing.T) {
	g := mustNew(t, []int{3, 3}, Params{Population: 4, Seed: 2})
	batches := drive(t, g, func([]int) (float64, bool) { return 1, false }, 50)
	if len(batches) != 3 || !g.Exhausted() {
		t.Fatalf("%d batches, exhausted %v; want 3 batches (4+4+1)", len(batches), g.Exhausted())
	}
	if _, _, found := g.Best(); found {
		t.Fatal("Best found a failed genome")
	}
}
