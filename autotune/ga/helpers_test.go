package ga

import (
	"slices"
	"testing"
)

// cost is a synthetic measurement: seconds, and whether the run succeeded.
type cost func(genome []int) (float64, bool)

// separable returns seconds = 1 + Σ (g_i − target_i)².
func separable(target []int) cost {
	return func(genome []int) (float64, bool) {
		s := 1.0
		for i, v := range genome {
			d := float64(v - target[i])
			s += d * d
		}
		return s, true
	}
}

// uniformCard returns n genes of cardinality c.
func uniformCard(n, c int) []int {
	card := make([]int, n)
	for i := range card {
		card[i] = c
	}
	return card
}

// drive runs up to gens generations (Ask, then Tell of every genome in
// order), stopping early on an empty Ask. It returns every batch and fails
// the test when a genome is asked twice across batches.
func drive(t *testing.T, g *GA, f cost, gens int) [][][]int {
	t.Helper()
	var batches [][][]int
	seen := map[string]bool{}
	for range gens {
		batch := g.Ask()
		if len(batch) == 0 {
			break
		}
		for _, genome := range batch {
			k := key(genome)
			if seen[k] {
				t.Fatalf("generation %d: genome %v asked twice", g.Generation(), genome)
			}
			seen[k] = true
			secs, ok := f(genome)
			g.Tell(genome, secs, ok)
		}
		batches = append(batches, batch)
	}
	return batches
}

func mustNew(t *testing.T, card []int, p Params, seeds ...[]int) *GA {
	t.Helper()
	g, err := New(card, p, seeds...)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func equalBatches(a, b [][][]int) bool {
	return slices.EqualFunc(a, b, func(x, y [][]int) bool {
		return slices.EqualFunc(x, y, slices.Equal[[]int])
	})
}
