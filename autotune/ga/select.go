package ga

import (
	"cmp"
	"slices"
)

// elites returns the record indices of the Elite best successful
// genomes told so far, by seconds, ties in Tell order.
func (g *GA) elites() []int {
	var ok []int
	for i, r := range g.records {
		if r.ok {
			ok = append(ok, i)
		}
	}
	slices.SortStableFunc(ok, func(a, b int) int {
		return cmp.Compare(g.records[a].seconds, g.records[b].seconds)
	})
	return ok[:min(len(ok), g.p.Elite)]
}

// wheel is a roulette wheel over the successful members of a generation.
type wheel struct {
	genomes [][]int
	weights []float64 // proportional to fitness 1/seconds
	total   float64
}

// newWheel builds the wheel over the successful records among members, in
// members order. Weights are minSeconds/seconds, proportional to fitness
// and free of overflow.
func (g *GA) newWheel(members []int) *wheel {
	w := &wheel{}
	fastest := 0.0
	for _, m := range members {
		if r := g.records[m]; r.ok {
			w.genomes = append(w.genomes, r.genome)
			if fastest == 0 || r.seconds < fastest {
				fastest = r.seconds
			}
		}
	}
	for _, m := range members {
		if r := g.records[m]; r.ok {
			wt := fastest / r.seconds
			w.weights = append(w.weights, wt)
			w.total += wt
		}
	}
	return w
}

// spin draws a member index with probability proportional to its weight,
// never returning skip (pass -1 to allow all). It needs at least one
// member other than skip.
func (w *wheel) spin(g *GA, skip int) int {
	total := w.total
	if skip >= 0 {
		total -= w.weights[skip]
	}
	x := g.rng.Float64() * total
	last := -1
	for i, wt := range w.weights {
		if i == skip {
			continue
		}
		last = i
		if x < wt {
			return i
		}
		x -= wt
	}
	return last // rounding left x ≥ the remaining weight
}

// parents draws two distinct members by fitness-proportional selection.
func (w *wheel) parents(g *GA) (a, b []int) {
	i := w.spin(g, -1)
	j := w.spin(g, i)
	return w.genomes[i], w.genomes[j]
}
