package ga

import (
	"cmp"
	"math"
	"slices"
)

// breedAttempts is the number of crossover+mutation draws for one child
// before falling back to randomFree.
const breedAttempts = 16

// breed forms the next generation from the current members: it returns
// the children to measure and the elites carried over.
func (g *GA) breed() (children [][]int, elites []int) {
	elites = g.elites()
	w := g.newWheel(g.members)
	n := g.p.Population - len(elites)
	useModel := g.p.Model != nil && g.success >= g.p.ModelWarmup
	want := n
	if useModel {
		want = n * g.p.Oversample
	}
	b := newBatch()
	for len(b.genomes) < want {
		child, ok := g.child(w, b)
		if !ok {
			break
		}
		b.add(child)
	}
	children = b.genomes
	if useModel && len(children) > 0 {
		children = g.rank(children)
	}
	return children[:min(n, len(children))], elites
}

// child breeds one free genome: two distinct parents by roulette, uniform
// crossover, mutation; redrawn up to breedAttempts times while the child
// is not free, then a randomFree genome. With fewer than two successful
// members it is a randomFree genome.
func (g *GA) child(w *wheel, b *batch) ([]int, bool) {
	if len(w.genomes) < 2 || g.freeCount(b) == 0 {
		return g.randomFree(b)
	}
	for range breedAttempts {
		pa, pb := w.parents(g)
		c := make([]int, len(g.card))
		for i := range c {
			if g.rng.IntN(2) == 0 {
				c[i] = pa[i]
			} else {
				c[i] = pb[i]
			}
		}
		g.mutate(c)
		if g.free(c, b) {
			return c, true
		}
	}
	return g.randomFree(b)
}

// mutate replaces each gene with probability MutationRate by a uniformly
// chosen different value; genes of cardinality 1 never change.
func (g *GA) mutate(c []int) {
	for i, card := range g.card {
		if card < 2 || g.rng.Float64() >= g.p.MutationRate {
			continue
		}
		v := g.rng.IntN(card - 1)
		if v >= c[i] {
			v++
		}
		c[i] = v
	}
}

// rank orders candidates by the Model's predicted cost, ascending, ties
// (and NaN, ranked last) in breeding order. A prediction of the wrong
// length leaves the breeding order.
func (g *GA) rank(cands [][]int) [][]int {
	in := make([][]int, len(cands))
	for i, c := range cands {
		in[i] = slices.Clone(c)
	}
	pred := g.p.Model.Predict(in)
	if len(pred) != len(cands) {
		return cands
	}
	order := make([]int, len(cands))
	for i := range order {
		order[i] = i
		if math.IsNaN(pred[i]) {
			pred[i] = math.Inf(1)
		}
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(pred[a], pred[b]) })
	out := make([][]int, len(cands))
	for i, o := range order {
		out[i] = cands[o]
	}
	return out
}
