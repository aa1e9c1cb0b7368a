package ga

import (
	"math"
	"math/rand/v2"
	"slices"

	"github.com/pkg/errors"
)

// pcgStream is the fixed second PCG word; the first is Params.Seed.
const pcgStream = 0x6e656f666c6f7767 // "neoflowg"

// Genome states in GA.status.
const (
	asked = iota + 1 // returned by Ask, not yet told
	told             // recorded by Tell
)

// record is one told measurement.
type record struct {
	genome  []int
	seconds float64 // +Inf for a failure
	ok      bool
}

// GA is a generational genetic algorithm with an ask/tell interface. It is
// not safe for concurrent use.
type GA struct {
	card  []int
	p     Params
	rng   *rand.Rand
	total uint64 // spaceSize(card)
	seeds [][]int

	status  map[string]int // genome key → asked or told; lookups only
	records []record       // every told genome, in Tell order
	success int            // successful records
	best    int            // index into records of the best success, or -1
	pending [][]int        // asked, not yet told, in Ask order
	members []int          // records of the current generation (elites first)
	formed  bool           // the initial generation has been asked
	gen     int
}

// New returns a GA over genomes g with 0 ≤ g[i] < card[i]. seeds are
// genomes measured first (in the initial generation, before random ones);
// duplicates among them are asked once.
func New(card []int, p Params, seeds ...[]int) (*GA, error) {
	if len(card) == 0 {
		return nil, errors.New("ga: card is empty")
	}
	for i, c := range card {
		if c < 1 {
			return nil, errors.Errorf("ga: card[%d] = %d, want >= 1", i, c)
		}
	}
	p, err := p.withDefaults(len(card))
	if err != nil {
		return nil, err
	}
	g := &GA{
		card:   slices.Clone(card),
		p:      p,
		rng:    rand.New(rand.NewPCG(uint64(p.Seed), pcgStream)),
		total:  spaceSize(card),
		status: map[string]int{},
		best:   -1,
	}
	for i, s := range seeds {
		if err := g.check(s); err != nil {
			return nil, errors.Wrapf(err, "ga: seed %d", i)
		}
		g.seeds = append(g.seeds, slices.Clone(s))
	}
	return g, nil
}

// check reports whether genome lies in the search space.
func (g *GA) check(genome []int) error {
	if len(genome) != len(g.card) {
		return errors.Errorf("genome has %d genes, want %d", len(genome), len(g.card))
	}
	for i, v := range genome {
		if v < 0 || v >= g.card[i] {
			return errors.Errorf("gene %d = %d, want in [0, %d)", i, v, g.card[i])
		}
	}
	return nil
}

// Params returns the effective parameters (defaults applied).
func (g *GA) Params() Params { return g.p }

// Ask returns the next genomes to measure, best-first when Params.Model
// ranked them. While genomes of the last batch are untold it returns those
// again, in their original order, and breeds nothing. Otherwise it forms
// the next generation (the initial one on the first call) and returns its
// new genomes. Ask never returns a genome that was told or that is in
// another batch; it returns fewer than requested, or none, only when the
// space has no other genome left. An empty result does not advance
// Generation.
func (g *GA) Ask() [][]int {
	if len(g.pending) == 0 {
		if !g.formed {
			g.pending = g.initial()
			g.formed = true
		} else if children, elites := g.breed(); len(children) > 0 {
			g.pending = children
			g.members = elites
			g.gen++
		}
		for _, genome := range g.pending {
			g.status[key(genome)] = asked
		}
	}
	out := make([][]int, len(g.pending))
	for i, genome := range g.pending {
		out[i] = slices.Clone(genome)
	}
	return out
}

// initial returns the first batch: the seeds not yet asked or told, then
// random free genomes until the batch holds Population genomes.
func (g *GA) initial() [][]int {
	b := newBatch()
	for _, s := range g.seeds {
		if g.free(s, b) {
			b.add(s)
		}
	}
	for len(b.genomes) < g.p.Population {
		genome, ok := g.randomFree(b)
		if !ok {
			break
		}
		b.add(genome)
	}
	return b.genomes
}

// Tell records the measurement of genome: seconds is its run time when ok,
// while ok=false marks a configuration that failed (fitness 0). A success
// with seconds not finite and > 0 is recorded as a failure. Genomes that
// were not asked are recorded too (e.g. results of an earlier session) and
// join the current generation's members. Tell ignores a genome outside the
// space and a genome already told.
func (g *GA) Tell(genome []int, seconds float64, ok bool) {
	if g.check(genome) != nil {
		return
	}
	k := key(genome)
	if g.status[k] == told {
		return
	}
	if g.status[k] == asked {
		i := slices.IndexFunc(g.pending, func(p []int) bool { return slices.Equal(p, genome) })
		g.pending = slices.Delete(g.pending, i, i+1)
	}
	g.status[k] = told
	ok = ok && seconds > 0 && !math.IsInf(seconds, 1)
	if !ok {
		seconds = math.Inf(1)
	}
	r := record{genome: slices.Clone(genome), seconds: seconds, ok: ok}
	g.records = append(g.records, r)
	g.members = append(g.members, len(g.records)-1)
	if !ok {
		return
	}
	g.success++
	if g.best < 0 || seconds < g.records[g.best].seconds {
		g.best = len(g.records) - 1
	}
	if g.p.Model != nil {
		g.p.Model.Observe(slices.Clone(genome), seconds)
	}
}

// Best returns the successful genome with the lowest seconds (the earliest
// told on ties); found is false when no measurement succeeded.
func (g *GA) Best() (genome []int, seconds float64, found bool) {
	if g.best < 0 {
		return nil, 0, false
	}
	r := g.records[g.best]
	return slices.Clone(r.genome), r.seconds, true
}

// Measured returns the number of distinct genomes told, failures included.
func (g *GA) Measured() int { return len(g.records) }

// Generation returns the index of the current generation: 0 for the
// initial one, incremented by every Ask that breeds a non-empty batch.
func (g *GA) Generation() int { return g.gen }

// Exhausted reports whether every genome of the space has been told. The
// space size is the exact product of card (saturated at 2^64−1, which no
// run can reach).
func (g *GA) Exhausted() bool { return uint64(len(g.records)) >= g.total }
