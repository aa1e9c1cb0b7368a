package ga

import (
	"encoding/binary"
	"math"
	"math/bits"
)

// Search-space constants (documented in doc.go).
const (
	// drawAttempts is the number of uniform draws randomFree makes before
	// falling back to enumeration or a scan.
	drawAttempts = 32
	// enumerateLimit is the largest space randomFree enumerates.
	enumerateLimit = 4096
)

// key encodes a genome as a map key.
func key(genome []int) string {
	b := make([]byte, 0, len(genome)*2)
	for _, v := range genome {
		b = binary.AppendUvarint(b, uint64(v))
	}
	return string(b)
}

// spaceSize is the product of card, saturated at math.MaxUint64.
func spaceSize(card []int) uint64 {
	total := uint64(1)
	for _, c := range card {
		hi, lo := bits.Mul64(total, uint64(c))
		if hi != 0 {
			return math.MaxUint64
		}
		total = lo
	}
	return total
}

// batch is a set of genomes being built for one Ask.
type batch struct {
	genomes [][]int
	keys    map[string]bool
}

func newBatch() *batch { return &batch{keys: map[string]bool{}} }

func (b *batch) add(genome []int) {
	b.genomes = append(b.genomes, genome)
	b.keys[key(genome)] = true
}

// free reports whether genome was never asked nor told and is not in b.
func (g *GA) free(genome []int, b *batch) bool {
	k := key(genome)
	_, seen := g.status[k]
	return !seen && !b.keys[k]
}

// freeCount is the number of genomes neither asked, told nor in b
// (saturated like spaceSize).
func (g *GA) freeCount(b *batch) uint64 {
	used := uint64(len(g.status) + len(b.keys))
	if used >= g.total {
		return 0
	}
	return g.total - used
}

// randomGenome draws every gene uniformly.
func (g *GA) randomGenome() []int {
	genome := make([]int, len(g.card))
	for i, c := range g.card {
		genome[i] = g.rng.IntN(c)
	}
	return genome
}

// randomFree returns a free genome (see free): the first of drawAttempts
// uniform draws that is free; failing that, a uniform choice among all
// free genomes when the space has at most enumerateLimit genomes, else the
// next free genome after the last draw in mixed-radix order (gene 0
// least significant, wrapping). ok is false when no free genome exists.
func (g *GA) randomFree(b *batch) (genome []int, ok bool) {
	if g.freeCount(b) == 0 {
		return nil, false
	}
	for range drawAttempts {
		genome = g.randomGenome()
		if g.free(genome, b) {
			return genome, true
		}
	}
	if g.total <= enumerateLimit {
		var frees [][]int
		cur := make([]int, len(g.card))
		for range g.total {
			if g.free(cur, b) {
				frees = append(frees, append([]int(nil), cur...))
			}
			g.next(cur)
		}
		return frees[g.rng.IntN(len(frees))], true
	}
	for {
		g.next(genome)
		if g.free(genome, b) {
			return genome, true
		}
	}
}

// next advances genome to its successor in mixed-radix order, wrapping
// from the last genome to all zeros.
func (g *GA) next(genome []int) {
	for i, c := range g.card {
		genome[i]++
		if genome[i] < c {
			return
		}
		genome[i] = 0
	}
}
