package ga

import (
	"math"
	"testing"
)

func TestHugeSpace(t *testing.T) {
	g := mustNew(t, uniformCard(25, 1<<20), Params{Seed: 1})
	if g.total != math.MaxUint64 {
		t.Fatalf("space size %d, want saturated", g.total)
	}
	drive(t, g, func(genome []int) (float64, bool) { return 1 + float64(genome[0]), true }, 3)
	if g.Exhausted() || g.Measured() != 16+2*14 {
		t.Fatalf("exhausted %v, measured %d", g.Exhausted(), g.Measured())
	}
}

func TestScanFindsLastFreeGenomes(t *testing.T) {
	// 10000 genomes (> enumerateLimit): all but 10 told beforehand, so
	// uniform draws mostly fail and the mixed-radix scan must find them.
	g := mustNew(t, []int{100, 100}, Params{Seed: 1})
	free := map[string]bool{}
	for i := range 10000 {
		genome := []int{i % 100, i / 100}
		if i%1000 == 7 {
			free[key(genome)] = true
			continue
		}
		g.Tell(genome, 1+float64(i), true)
	}
	batch := g.Ask()
	if len(batch) != 10 {
		t.Fatalf("asked %d genomes, want the 10 free ones", len(batch))
	}
	for _, genome := range batch {
		if !free[key(genome)] {
			t.Fatalf("asked %v, which was told", genome)
		}
		delete(free, key(genome))
		g.Tell(genome, 1, true)
	}
	if !g.Exhausted() || len(g.Ask()) != 0 {
		t.Fatal("space not exhausted")
	}
}
