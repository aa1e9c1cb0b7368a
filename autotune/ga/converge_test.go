package ga

import (
	"math"
	"math/rand/v2"
	"testing"
)

// randomSearch returns the best of budget uniform draws.
func randomSearch(card []int, f cost, budget int, seed uint64) float64 {
	rng := rand.New(rand.NewPCG(seed, 99))
	best := math.Inf(1)
	genome := make([]int, len(card))
	for range budget {
		for i, c := range card {
			genome[i] = rng.IntN(c)
		}
		if s, _ := f(genome); s < best {
			best = s
		}
	}
	return best
}

func TestConverges(t *testing.T) {
	card := uniformCard(8, 8)
	target := []int{5, 1, 7, 2, 0, 6, 3, 4}
	f := separable(target)
	// Optimum 1 s; a genome one step off in k genes costs 1+k s. Random
	// search with the same 422 measurements typically ends at 8–20 s.
	optimal, sumGA, sumRandom := 0, 0.0, 0.0
	for seed := range int64(5) {
		g := mustNew(t, card, Params{Seed: seed})
		drive(t, g, f, 30)
		best, ga, _ := g.Best()
		rs := randomSearch(card, f, g.Measured(), uint64(seed))
		t.Logf("seed %d: GA %v s %v, random %v s, %d measured", seed, ga, best, rs, g.Measured())
		if g.Measured() != 16+29*14 {
			t.Errorf("seed %d: %d measured, want %d", seed, g.Measured(), 16+29*14)
		}
		if ga > 3 || ga >= rs {
			t.Errorf("seed %d: GA best %v s, random %v s; want ≤ 3 and below random", seed, ga, rs)
		}
		if ga == 1 {
			optimal++
		}
		sumGA += ga
		sumRandom += rs
	}
	if optimal == 0 || 3*sumGA > sumRandom {
		t.Errorf("GA found the optimum on %d of 5 seeds, mean %v s vs random %v s", optimal, sumGA/5, sumRandom/5)
	}
}
