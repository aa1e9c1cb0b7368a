package costmodel

import (
	"fmt"
	"math"
)

// DefaultLambda is the ridge penalty NewRidge uses for lambda ≤ 0.
const DefaultLambda = 1e-3

// Ridge is a ridge-regression model of log(seconds) over the features of a
// genome. It satisfies ga.Ranker. It is not safe for concurrent use.
type Ridge struct {
	features func(genome []int) []float64
	lambda   float64

	x     [][]float64 // accepted observations' features
	y     []float64   // their log(seconds)
	dirty bool        // observations since the last Fit

	// The fit: prediction = intercept + Σ w[j]·(f[j] − mean[j])·scale[j].
	fitted    bool
	mean      []float64
	scale     []float64 // 1/std, 0 for a constant column
	w         []float64
	intercept float64
}

// NewRidge returns an empty model. features maps a genome to a feature
// vector of fixed length (nil: the genes themselves); lambda is the ridge
// penalty, ≤ 0 or NaN → DefaultLambda.
func NewRidge(features func(genome []int) []float64, lambda float64) *Ridge {
	if features == nil {
		features = genesAsFeatures
	}
	if !(lambda > 0) {
		lambda = DefaultLambda
	}
	return &Ridge{features: features, lambda: lambda}
}

func genesAsFeatures(genome []int) []float64 {
	f := make([]float64, len(genome))
	for i, v := range genome {
		f[i] = float64(v)
	}
	return f
}

// Lambda returns the ridge penalty in use.
func (m *Ridge) Lambda() float64 { return m.lambda }

// Observations returns the number of accepted observations.
func (m *Ridge) Observations() int { return len(m.y) }

// featuresOf returns genome's features, panicking when their length
// differs from the first accepted observation's (a bug in features).
func (m *Ridge) featuresOf(genome []int) []float64 {
	f := m.features(genome)
	if len(m.x) > 0 && len(f) != len(m.x[0]) {
		panic(fmt.Sprintf("costmodel: features(%v) has %d values, earlier genomes %d", genome, len(f), len(m.x[0])))
	}
	return f
}

// Observe records a measurement of genome: its features and log(seconds).
// It is ignored when seconds is not finite and > 0 or a feature is not
// finite. The model refits on the next Predict (or Fit).
func (m *Ridge) Observe(genome []int, seconds float64) {
	if !(seconds > 0) || math.IsInf(seconds, 1) {
		return
	}
	f := m.featuresOf(genome)
	if !finite(f) {
		return
	}
	m.x = append(m.x, f)
	m.y = append(m.y, math.Log(seconds))
	m.dirty = true
}

// Predict returns the predicted log(seconds) of each genome, lower is
// better, refitting first if observations arrived since the last fit (a
// failing refit keeps the previous fit). Before a fit exists (fewer than 2
// observations) every prediction is 0. A genome with a non-finite feature
// predicts +Inf.
func (m *Ridge) Predict(genomes [][]int) []float64 {
	if m.dirty {
		_ = m.Fit() // on error the previous fit stays; Fit documents it
	}
	out := make([]float64, len(genomes))
	if !m.fitted {
		return out
	}
	for i, genome := range genomes {
		f := m.featuresOf(genome)
		if !finite(f) || len(f) != len(m.w) {
			out[i] = math.Inf(1)
			continue
		}
		p := m.intercept
		for j, v := range f {
			p += m.w[j] * (v - m.mean[j]) * m.scale[j]
		}
		out[i] = p
	}
	return out
}

func finite(f []float64) bool {
	for _, v := range f {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return false
		}
	}
	return true
}
