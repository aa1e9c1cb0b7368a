package costmodel

import (
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
)

// linear is the known relation: ln(seconds) = 0.5 + 0.3·g0 − 0.2·g1 + 0.05·g2.
func linear(genome []int) float64 {
	return 0.5 + 0.3*float64(genome[0]) - 0.2*float64(genome[1]) + 0.05*float64(genome[2])
}

func randomGenomes(rng *rand.Rand, n int) [][]int {
	out := make([][]int, n)
	for i := range out {
		out[i] = []int{rng.IntN(8), rng.IntN(8), rng.IntN(8)}
	}
	return out
}

func trained(t *testing.T, m *Ridge, n int) {
	t.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	for _, g := range randomGenomes(rng, n) {
		m.Observe(g, math.Exp(linear(g)))
	}
}

func TestRecoversLinear(t *testing.T) {
	m := NewRidge(nil, 0)
	trained(t, m, 60)
	test := randomGenomes(rand.New(rand.NewPCG(3, 4)), 40)
	for i, p := range m.Predict(test) {
		if want := linear(test[i]); math.Abs(p-want) > 1e-3 {
			t.Fatalf("genome %v: predicted %v, want %v", test[i], p, want)
		}
	}
}

func TestRanksCorrectly(t *testing.T) {
	// Noisy observations (±5% run-time noise) still rank the truth.
	m := NewRidge(nil, 0)
	rng := rand.New(rand.NewPCG(5, 6))
	for _, g := range randomGenomes(rng, 80) {
		m.Observe(g, math.Exp(linear(g))*(0.95+0.1*rng.Float64()))
	}
	test := [][]int{{7, 0, 7}, {0, 7, 0}, {3, 3, 3}, {5, 1, 0}, {1, 6, 4}, {6, 2, 2}}
	pred := m.Predict(test)
	byPred := []int{0, 1, 2, 3, 4, 5}
	byTruth := slices.Clone(byPred)
	sort.SliceStable(byPred, func(i, j int) bool { return pred[byPred[i]] < pred[byPred[j]] })
	sort.SliceStable(byTruth, func(i, j int) bool { return linear(test[byTruth[i]]) < linear(test[byTruth[j]]) })
	if !slices.Equal(byPred, byTruth) {
		t.Fatalf("predicted order %v, true order %v (predictions %v)", byPred, byTruth, pred)
	}
}

func TestZeroAndOneObservation(t *testing.T) {
	m := NewRidge(nil, 0)
	if err := m.Fit(); err != nil {
		t.Fatal(err)
	}
	check := func(stage string) {
		t.Helper()
		for _, p := range m.Predict([][]int{{1, 2, 3}, {4, 5, 6}}) {
			if p != 0 {
				t.Fatalf("%s: prediction %v, want 0", stage, p)
			}
		}
	}
	check("no observation")
	m.Observe([]int{1, 2, 3}, 2)
	check("one observation")
	if got := m.Predict(nil); len(got) != 0 {
		t.Fatalf("Predict(nil) = %v", got)
	}
}

func TestIgnoresBadSeconds(t *testing.T) {
	m := NewRidge(nil, 0)
	for _, s := range []float64{0, -1, math.NaN(), math.Inf(1)} {
		m.Observe([]int{1, 1, 1}, s)
	}
	if m.Observations() != 0 {
		t.Fatalf("%d observations accepted", m.Observations())
	}
}

func TestConstantAndSingular(t *testing.T) {
	// Column 1 is constant, column 2 duplicates column 0, and there are
	// fewer observations than features: no NaN, no panic, and the
	// informative column still ranks.
	feat := func(g []int) []float64 {
		return []float64{float64(g[0]), 7, float64(g[0]), 0, 0, 0, 0}
	}
	m := NewRidge(feat, 0)
	m.Observe([]int{1}, math.Exp(1))
	m.Observe([]int{3}, math.Exp(3))
	m.Observe([]int{2}, math.Exp(2))
	if err := m.Fit(); err != nil {
		t.Fatal(err)
	}
	pred := m.Predict([][]int{{0}, {2}, {5}})
	for _, p := range pred {
		if math.IsNaN(p) || math.IsInf(p, 0) {
			t.Fatalf("prediction %v", pred)
		}
	}
	if !(pred[0] < pred[1] && pred[1] < pred[2]) {
		t.Fatalf("predictions %v not increasing", pred)
	}
	// All rows identical: every column constant, prediction = mean of y.
	m = NewRidge(feat, 1e-9)
	m.Observe([]int{4}, math.E)
	m.Observe([]int{4}, math.Exp(3))
	if p := m.Predict([][]int{{4}, {9}}); math.Abs(p[0]-2) > 1e-12 || math.Abs(p[1]-2) > 1e-12 {
		t.Fatalf("constant rows: predictions %v, want [2 2]", p)
	}
}

func TestNonFiniteFeatures(t *testing.T) {
	feat := func(g []int) []float64 { return []float64{1 / float64(g[0])} }
	m := NewRidge(feat, 0)
	m.Observe([]int{0}, 1) // +Inf feature: ignored
	m.Observe([]int{1}, 1)
	m.Observe([]int{2}, 2)
	if m.Observations() != 2 {
		t.Fatalf("%d observations, want 2", m.Observations())
	}
	if p := m.Predict([][]int{{0}, {1}}); !math.IsInf(p[0], 1) || math.IsNaN(p[1]) {
		t.Fatalf("predictions %v", p)
	}
}

func TestLazyRefitAndLambda(t *testing.T) {
	m := NewRidge(nil, -5)
	if m.Lambda() != DefaultLambda {
		t.Fatalf("lambda %v", m.Lambda())
	}
	m.Observe([]int{0, 0, 0}, 1)
	m.Observe([]int{1, 0, 0}, math.E)
	before := m.Predict([][]int{{2, 0, 0}})[0]
	m.Observe([]int{2, 0, 0}, math.Exp(10))
	if after := m.Predict([][]int{{2, 0, 0}})[0]; after <= before {
		t.Fatalf("prediction %v did not move towards the new observation (was %v)", after, before)
	}
}

func TestFeatureLengthMismatchPanics(t *testing.T) {
	m := NewRidge(func(g []int) []float64 { return make([]float64, len(g)) }, 0)
	m.Observe([]int{1, 2}, 1)
	defer func() {
		if recover() == nil {
			t.Fatal("no panic on a feature length mismatch")
		}
	}()
	m.Observe([]int{1, 2, 3}, 1)
}
