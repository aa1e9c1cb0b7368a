// Package fuse holds the fusion passes: rewrites of a specialized op's
// statements (ir.Spec -> ir.Spec) that compute the same outputs with less
// work and fewer temporaries. The pipeline (core/pipeline) runs them after
// specialization and autodiff, before scheduling, when fusion is on:
//
//   - Fold decides the where conditions that the statement's ranges
//     decide (where(0 > 1, a, b) is b) and drops additions of 0.0.
//   - Merge folds a sum of reductions over equal domains into one
//     reduction: T = A + B with A[i] += f over b and B[i] += g over b
//     becomes T[i] += f + g over b, so A and B are never stored
//     (reduction fusion; the gradient of a weight read twice).
//   - Split partitions a statement's index set where its where
//     conditions on one spatial axis change value (index-set splitting,
//     Halide's loop partitioning): each part computes only its branch
//     and writes its box of the tensor (ir.BoundStmt.Offset).
//   - CSE makes the readers of a temporary that repeats an earlier
//     elementwise statement read the earlier one's tensor.
//   - Inline substitutes an elementwise temporary into its readers when
//     that recomputes nothing (a copy, or a value read once per point it
//     was computed at), so it is never stored.
//   - Prune drops the statements whose temporaries nobody reads.
//   - Group joins statements over the same axes into fused groups, each
//     lowered as one loop nest (ir.BoundStmt.Joined, loops.GroupTiling):
//     elementwise statements over the same points (loop fusion) and
//     contractions that read a common tensor (parallel fusion: a
//     weight's and an input's gradient), where running them point by
//     point computes what running them one after the other does. Its
//     reward estimates the memory traffic of each nest from its loop
//     order and a cache of Machine.CacheBytes (traffic.go; re-reads of
//     a tensor that fits the last-level cache count at that cache's
//     bandwidth), and charges a group's reduction members
//     Machine.AccumulatorOps per point for keeping their partial sums
//     in memory instead of registers (measured: a weight's and an
//     input's gradient timed apart and fused). An elementwise statement that reads a
//     reduction's output where it is stored joins the reduction as its
//     epilogue (epilogue.go, loops.EpilogueMembers): it runs in the
//     reduction's nest after each element's reduction, where the
//     reduction's schedule stores its elements in lanes.
//
// Every pass keeps the temporaries in Options.Keep whole: the caller
// reads them after the kernel (a saving gradient op's saved tensors).
// Which those are is decided by the same reward (Recompute, recompute.go):
// a saving gradient computes an elementwise temporary again instead of
// reading it saved when the store and load saved outweigh its arithmetic
// and the loads of what it reads that is not saved anyway.
// Split and Inline decide with the paper's reward R = ΔT/Pd + ΔC/Pc +
// ΔK·L (reward.go): traffic, arithmetic (Cost's units: a math function
// call weighs Machine.CallOps) and loop nests saved, weighed with
// Options.Machine's measured rates; they apply a
// transformation only when R > 0, Inline the best first. The passes look
// up who reads and writes a tensor in an index (uses.go) that they
// update for the statements they change, and keep rewards until what
// they depend on changes, so that their work grows near-linearly with
// the program. Each decision, with its reward, and
// each temporary that stays stored, with the reward that refused
// inlining it, is noted for dumps and explanations.
//
// The passes move work between statements but never change what an
// element's value is computed from, except that Merge adds the terms of
// two sums in one loop (a different rounding order, as any change of
// schedule may give).
package fuse
