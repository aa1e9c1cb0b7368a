// Package autotune searches each kernel's schedule space for the fastest
// schedule on this machine and records it in the tuning database.
//
// # The space
//
// NewSpace derives a Space from a specialized op (ir.Spec), statement by
// statement, with no per-op tables: a genome of integer genes decodes
// (Space.Decode) to one loops.Schedule per statement. A statement's genes
// choose between its default schedule and a tiled one (loops.Tiling), and
// for the tiled one:
//
//   - multi-level tiling: each spatial axis is split into three tile levels
//     (outer, middle, inner), each reduction axis into two, by factors
//     dividing the extent, or by a vector width (8 or 16) that leaves a
//     remainder when the axis ends innermost in lanes;
//   - loop order: a permutation of the spatial axes inside every level
//     (its last axis is innermost, the lane axis), and a template placing
//     the reduction tiles among the spatial ones (S0 R0 S1 R1 S2,
//     S0 S1 R0 R1 S2, S0 R0 R1 S1 S2, S0 S1 S2 R0 R1, S0 R0 S1 S2 R1);
//   - parallel loops: how many outer spatial tile loops are collapsed
//     into one OpenMP loop;
//   - vector code: the innermost loop as an explicit SIMD lane loop
//     (omp simd, or omp parallel for simd when it is itself parallel);
//   - unrolling of the second-innermost loop (1, 2, 4, 8);
//   - accumulation: a reduction accumulates in a local buffer declared
//     after the outer or the middle spatial tiles (a register tile when
//     it is small), or straight into the output;
//   - layout packing: one read (loops.PackableReads) copied, before one
//     of the template's tile groups, into a local buffer laid out by the
//     inner loops with the lane loop innermost (loops.Pack), so its inner
//     dimension is read as vectors whose length the split genes tune.
//
// A fused group (the statements core/fuse joined into one nest,
// loops.GroupMembers) is tuned as one kernel: its lead statement's mode
// gene has a third choice, the group as one nest tiled by the group's own
// genes (groupspace.go), which follow the lead's. They are a statement's
// genes over the group's domain (loops.GroupDomain: the axes spatial in
// every member are its spatial axes, the others its reduction axes):
// splits that divide the extents, order, template, accumulator position
// (moved inward per member until its accumulator fits), parallel loops and
// lanes over a group-spatial axis, decoded to a loops.GroupTiling. The
// other choices stay: the group's default tiling, or the lead and each
// member tiled alone. Group seeds start the search near the default
// tiling with other lane chunks and reduction tiles.
//
// Operand swapping for binary reductions (computing the transposed
// product to vectorize the other operand's axis) is the choice of the
// lane axis among the spatial axes, which the permutation genes make.
// Scatter statements keep their default schedule. Every genome decodes to
// a schedule that lowers (Decode repairs an accumulator too large for the
// stack, a lane mark on a reduction loop), so every point is a correct
// kernel; the tests compile random genomes of every test op and compare
// them with the reference interpreter.
//
// # The search
//
// A Tuner runs package ga's genetic algorithm (fitness-proportional parent
// selection, uniform crossover, mutation, elitism; seeded, reproducible)
// over real measurements, one configuration per Step, so callers can draw
// progress and stop at any time keeping the best found. The first
// generation holds Space.Seeds: the default schedules, then register-tiled
// variants from a heuristic, and lane reductions with and without a
// register tile, and lanes over an axis made contiguous by a shared pack (a
// whole operand transposed once before the parallel loops). A ridge-regression cost model (package
// costmodel) ranks oversampled children before measurement once enough
// configurations were measured. Budgets: Options.Trials configurations and
// Options.Time of wall time.
//
// Measurement builds the kernel, runs it once on fixed random inputs with
// its outputs poisoned, and compares every output with the default
// schedule's: a configuration that fails to compile, to run or to
// reproduce the default's results is recorded as failed and never ends the
// search. It then times warm runs (2 warm-ups, at least 5 runs and 50 ms)
// and takes the median, robust to the outliers of a noisy machine. A
// configuration whose first run is CutoffFactor times slower than the best
// is ranked by that run alone.
//
// The statements of a kernel run one after another, so its time is the
// sum of theirs, and a gain in one statement hides among the others. The
// tuner therefore measures the profiled kernel (Builder.BuildProfiled of
// package kernels), which also times each statement (Sample.Stmts, per
// statement the median over the timed runs), and keeps for each unit (a
// statement, or a fused group's members together, timed as the sum of
// theirs, since a group's nest is timed as its lead's) the gene segment of
// its fastest time in a successful trial; a unit's segment alone drives
// its schedules (Space.Decode). Each new
// generation's batch starts with the composition of these segments, and
// the last trial of the Trials budget measures it too, unless those
// schedules were measured already (always so with one statement); it is
// told to the genetic algorithm like any other genome, and counts as a
// trial of the budget, which it never exceeds.
//
// When the search ends (not when it is interrupted), the ConfirmTop
// fastest distinct schedules, the fastest with each unit in turn set
// back to its default schedule (a statement's time in a trial is one
// noisy profiled run, and the composition spreads a segment measured fast
// once to every top schedule), and the default ones are timed
// ConfirmRounds more times, in turns, and the one with the lowest median is kept only
// when it beats the default's by MinGain; Progress then reports those
// medians. On a busy machine a single lucky measurement otherwise passes
// for a win, and a single unlucky one hides the fastest schedule.
//
// # Forward and backward together
//
// A gradient kernel reads its forward kernel's inputs and the outputs the
// forward saved for it, which in training the forward has just written.
// TuneJointly (joint.go), after both searches, times each kernel's
// finalists (its kept best, its default and the fastest other schedules
// it measured, JointTop each) in pairs as a training step runs them: the
// forward, then the backward on the very buffers the forward wrote
// (Pairs: same dtype, and every backward input named like a forward
// tensor has its shape). The fastest pair replaces the choices made apart
// only when it beats their pair by MinGain. torchbridge runs it when a
// CPU gradient kernel's tuning ends and its forward kernel was tuned
// lately in the process (neoflow.tune, tune_session); the forward's record
// is then replaced (tunedb.DB.Replace), even by a schedule slower alone.
//
// # The database
//
// Tuner.Record is a protobuf TuneRecord keyed by Key: the kernel's
// structural hash with its axis extents, its tensors' dtypes and shapes,
// the Target (CPU model and ISA features) and the neoflow version.
// Package tunedb stores records, the faster record winning, safely across
// processes; kernels.Options.Schedules applies a record whenever the
// kernel is built. A record also carries its Family (the key less the
// extents) and the best genome: WarmStart (warm.go) projects the record
// of a kernel's nearest shape (ShapeDistance) onto a new shape's space,
// every gene kept but the split and step genes, which take the choice
// nearest the old factors, and torchbridge builds the new shape with it
// and seeds its picks and searches with it.
//
// # The CUDA space
//
// NewGPUSpace derives the CUDA schedule space the same way (gpuspace.go):
// a reduction statement's genes choose between loops.GPUSchedule, a
// loops.GPUTiling (threads as a power of two and registers of 1, 2, 4 or
// 8 per spatial axis, a dividing step per reduction axis, a stage bit per
// stageable read) and a loops.GPUReduction (32 to 1024 threads); decoding
// repairs knobs beyond the extents, the block size, the registers and
// shared memory, so every genome lowers. GPUSpace.Seeds holds tilings of
// 64 to 256 threads and block reductions of 128 and 256 threads.
//
// NewGPUTuner runs the same search over it (the Tuner is one type over
// either space: cost model, composition of the statements' fastest
// segments, confirmation rounds), measuring on a GPU (gpubench.go).
// NewCUDAGPU is a device: kernels built by kernels.Builder.BuildCUDA (the
// kernel cache, keyed by architecture), loaded by package cudadrv and run
// on buffers of the tuner's own on a private non-blocking stream, never
// the default stream or one of PyTorch's; each run is timed by CUDA
// events recorded around each of the module's launches, so a statement's
// time is its launches' sum. Every candidate's outputs, poisoned before
// its first run and read back after it, must match the first kernel's.
// The record's key names the GPU (GPUTarget: the device's name and
// compute capability), so records of different GPUs, and of the CPU,
// never mix. The tests run the GPU search on the CUDA emulator
// (internal/cudaemu) through the GPU interface.
package autotune
