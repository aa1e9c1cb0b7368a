package ga

import (
	"cmp"
	"slices"
	"testing"

	"github.com/neoflow/neoflow/autotune/costmodel"
)

// oracle is a Ranker predicting the true cost; it records its calls.
type oracle struct {
	f        cost
	calls    [][][]int // candidates of each Predict call
	observed int
}

func (o *oracle) Predict(genomes [][]int) []float64 {
	o.calls = append(o.calls, genomes)
	out := make([]float64, len(genomes))
	for i, g := range genomes {
		out[i], _ = o.f(g)
	}
	return out
}

func (o *oracle) Observe([]int, float64) { o.observed++ }

func TestModelRanksAfterWarmup(t *testing.T) {
	f := separable([]int{3, 1, 4, 1, 5, 0, 2, 6})
	o := &oracle{f: f}
	g := mustNew(t, uniformCard(8, 8), Params{Seed: 11, Model: o}) // warmup 32
	told := map[string]bool{}
	for gen := range 8 {
		before := len(o.calls)
		batch := g.Ask()
		// Breeding generation gen used 16 + 14·(gen−1) successes.
		want := gen > 0 && 16+14*(gen-1) >= 32
		if consulted := len(o.calls) > before; consulted != want {
			t.Fatalf("generation %d: model consulted %v, want %v", gen, consulted, want)
		}
		if len(o.calls) > before {
			cands := o.calls[len(o.calls)-1]
			if len(cands) != 4*14 {
				t.Fatalf("generation %d: %d candidates, want 56", gen, len(cands))
			}
			for i, c := range cands {
				if told[key(c)] || slices.IndexFunc(cands[:i], func(d []int) bool { return slices.Equal(c, d) }) >= 0 {
					t.Fatalf("generation %d: candidate %v told or repeated", gen, c)
				}
			}
			want := slices.Clone(cands)
			slices.SortStableFunc(want, func(a, b []int) int {
				fa, _ := f(a)
				fb, _ := f(b)
				return cmp.Compare(fa, fb)
			})
			if !slices.EqualFunc(batch, want[:14], slices.Equal[[]int]) {
				t.Fatalf("generation %d: asked %v, want the 14 best predicted %v", gen, batch, want[:14])
			}
		}
		for _, genome := range batch {
			told[key(genome)] = true
			secs, ok := f(genome)
			g.Tell(genome, secs, ok)
		}
	}
	if len(o.calls) != 5 || o.observed != g.Measured() {
		t.Fatalf("%d Predict calls (want 5), %d observed of %d", len(o.calls), o.observed, g.Measured())
	}
}

func TestModelNoWarmup(t *testing.T) {
	o := &oracle{f: separable(make([]int, 4))}
	g := mustNew(t, uniformCard(4, 6), Params{Seed: 1, Model: o, ModelWarmup: -1, Oversample: 2})
	drive(t, g, o.f, 2)
	if len(o.calls) != 1 || len(o.calls[0]) != 2*14 {
		t.Fatalf("Predict calls %d, want 1 of 28 candidates", len(o.calls))
	}
}

func TestModelDeterministic(t *testing.T) {
	card := uniformCard(8, 8)
	f := separable([]int{5, 1, 7, 2, 0, 6, 3, 4})
	square := func(genome []int) []float64 {
		x := make([]float64, 0, 2*len(genome))
		for _, v := range genome {
			x = append(x, float64(v), float64(v*v))
		}
		return x
	}
	run := func(model Ranker) (*GA, [][][]int) {
		g := mustNew(t, card, Params{Seed: 4, Model: model})
		return g, drive(t, g, f, 12)
	}
	gm, a := run(costmodel.NewRidge(square, 0))
	_, b := run(costmodel.NewRidge(square, 0))
	gp, plain := run(nil)
	if !equalBatches(a, b) {
		t.Error("same seed and model gave different Ask sequences")
	}
	if !equalBatches(a[:3], plain[:3]) || equalBatches(a, plain) {
		t.Error("the model should change the sequence after warmup only")
	}
	_, withModel, _ := gm.Best()
	_, without, _ := gp.Best()
	t.Logf("after 12 generations: best %v s with the ridge model, %v s without", withModel, without)
}
