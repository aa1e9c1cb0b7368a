package ga

import (
	"math"

	"github.com/pkg/errors"
)

// Defaults applied by New to zero-valued Params fields.
const (
	DefaultPopulation = 16
	DefaultElite      = 2
	DefaultOversample = 4
)

// Params configures a GA. The zero value selects every default; see the
// package documentation for the exact meaning of each field.
type Params struct {
	// Population is the number of members per generation; 0 → 16.
	Population int
	// Elite is the number of best measured genomes copied unchanged into
	// the next generation; 0 → min(2, Population−1), negative → none.
	Elite int
	// MutationRate is the per-gene probability that a child's gene is
	// replaced by a uniformly chosen different value; 0 → 1/len(card).
	MutationRate float64
	// Seed is the only source of randomness.
	Seed int64
	// Model, when non-nil, ranks oversampled children before measurement.
	Model Ranker
	// Oversample is the candidate multiplier when Model is used; 0 → 4.
	Oversample int
	// ModelWarmup is the number of successful measurements required
	// before Model is consulted; 0 → 2×Population, negative → none.
	ModelWarmup int
}

// withDefaults validates p and returns it with every default applied.
func (p Params) withDefaults(genes int) (Params, error) {
	switch {
	case p.Population < 0:
		return p, errors.Errorf("ga: Population %d is negative", p.Population)
	case p.Population == 0:
		p.Population = DefaultPopulation
	}
	switch {
	case p.Elite < 0:
		p.Elite = 0
	case p.Elite == 0:
		p.Elite = min(DefaultElite, p.Population-1)
	case p.Elite >= p.Population:
		return p, errors.Errorf("ga: Elite %d must be less than Population %d", p.Elite, p.Population)
	}
	switch r := p.MutationRate; {
	case math.IsNaN(r) || r < 0 || r > 1:
		return p, errors.Errorf("ga: MutationRate %v is outside [0, 1]", r)
	case r == 0:
		p.MutationRate = 1 / float64(genes)
	}
	switch {
	case p.Oversample < 0:
		return p, errors.Errorf("ga: Oversample %d is negative", p.Oversample)
	case p.Oversample == 0:
		p.Oversample = DefaultOversample
	}
	switch {
	case p.ModelWarmup < 0:
		p.ModelWarmup = 0
	case p.ModelWarmup == 0:
		p.ModelWarmup = 2 * p.Population
	}
	return p, nil
}
