// Package ga is a generic genetic-algorithm search over integer genomes,
// driven through an ask/tell interface so that the caller, which measures
// each genome (e.g. one kernel run of 0.1–1 s), can stop at any point and
// keep what was found. A genome is a []int whose gene i takes values in
// [0, card[i]); the package knows nothing about what the genes mean.
//
// # Use
//
//	g, err := ga.New(card, ga.Params{Seed: 1}, defaultGenome)
//	for !g.Exhausted() && budgetLeft() {
//		batch := g.Ask()
//		if len(batch) == 0 {
//			break
//		}
//		for _, genome := range batch {
//			secs, err := measure(genome)
//			g.Tell(genome, secs, err == nil)
//		}
//	}
//	best, secs, found := g.Best()
//
// Ask returns the genomes of the current batch. While some of them are
// untold, Ask returns exactly those again (in their original order) and
// breeds nothing, so an interrupted batch is resumed, never replaced. Ask
// never returns a genome already told or already asked; it returns fewer
// genomes than the batch size, or none, only when the space has no other
// genome left; an empty Ask does not advance Generation. Exhausted reports
// that every genome has been told: the space size is the exact product of
// card (saturated at 2^64−1, which no run reaches), compared with the
// number of distinct genomes told. A caller that wants to skip a genome
// tells it with ok=false.
//
// Tell records one measurement. ok=false (compile or run error) gives the
// genome fitness 0: it is never a parent, never an elite, never Best and
// never asked again. A success whose seconds is not finite and > 0 is
// recorded as a failure. Telling a genome that was not asked (e.g. a result
// cached from an earlier session) records it like any other measurement; it
// joins the current generation's members and is never asked. Tell ignores
// a genome of the wrong length or out of range, and a second Tell of the
// same genome.
//
// # Algorithm
//
// Fitness is 1/seconds (failures: 0). Generation 0 is the seeds given to
// New (validated; duplicates once; all of them even when more than
// Population) followed by distinct random genomes until it has Population
// members. Each later generation is formed when Ask is called after every
// genome of the previous batch was told:
//
//   - Elites: the E = min(Elite, successes so far) best successful genomes
//     told so far (lowest seconds, ties in Tell order). They are members of
//     the new generation unchanged; they are already measured, so Ask does
//     not return them.
//   - Children: Population − E new genomes. Each child draws two distinct
//     parents by roulette-wheel (fitness-proportional) selection among the
//     successful members of the previous generation: its elites plus every
//     genome told while it was current (its batch, and any genome told
//     without being asked; generation 0 is current from New on). The child takes each gene from either parent
//     with probability 1/2 (uniform crossover); then each gene with
//     card[i] ≥ 2 is, with probability MutationRate, replaced by a value
//     drawn uniformly among the other card[i]−1 values (so a mutation always
//     changes the gene; no mutation is forced, so a child may have none).
//   - A child equal to a genome already told, asked, or bred for this batch
//     is bred again, up to 16 attempts, then replaced by a random free
//     genome. With fewer than two successful members, children are random
//     free genomes.
//   - A random free genome is the first of 32 uniform draws that is free;
//     failing that, a uniform choice among all free genomes when the space
//     has at most 4096 genomes (enumeration), else the first free genome
//     after the last draw in mixed-radix order (gene 0 least significant,
//     wrapping); it never loops when the space is exhausted.
//
// With a Model, once at least ModelWarmup measurements have succeeded, the
// GA breeds Oversample × (Population − E) distinct free children as above,
// asks Model.Predict for their costs, and keeps the Population − E lowest,
// ordered by predicted cost (ties and a wrong-length prediction keep
// breeding order; NaN ranks last), so Ask returns the most promising
// first. Every successful Tell calls Model.Observe(genome, seconds);
// failures are not observed.
//
// Everything is deterministic for a fixed Seed and the same sequence of
// Tell calls: randomness comes only from a math/rand/v2 PCG seeded with
// (Seed, 0x6e656f666c6f7767); maps serve lookups only, never iteration
// order; no clock is read.
//
// # Parameters
//
//   - Population: members per generation; 0 → 16; negative is an error.
//   - Elite: best measured genomes carried into the next generation;
//     0 → min(2, Population−1); negative → none; ≥ Population is an error.
//   - MutationRate: per-gene mutation probability in [0, 1];
//     0 → 1/len(card); outside [0, 1] or NaN is an error. With the default
//     a child has at least one mutated gene with probability
//     1 − (1 − 1/n)^m, where n = len(card) and m is the number of genes of
//     cardinality ≥ 2 (about 0.66 for n = m = 8).
//   - Seed: the only source of randomness.
//   - Model: optional Ranker; nil → children are not ranked.
//   - Oversample: candidate multiplier for Model; 0 → 4; negative is an
//     error.
//   - ModelWarmup: successful measurements before Model is consulted;
//     0 → 2×Population; negative → no warmup.
//
// card must be non-empty with every entry ≥ 1. A GA is not safe for
// concurrent use.
package ga
