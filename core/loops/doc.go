// Package loops is neoflow's loop-nest IR and its lowering from a
// specialized op (ir.Spec).
//
// A Func holds one Nest per statement, in program order; each nest is a tree
// of Loops, Blocks, Locals (register arrays), Stores and Ifs (guards). Every
// schedule decision is an annotation on a Loop (Parallel with Collapse,
// Vector, Unroll) or on a Schedule (Scatter), so a backend only renders what
// it is given. Expressions are ir.Expr trees in which every ir.Index names a
// loop variable of an enclosing Loop (the statement's own variables have
// been substituted), named constants are replaced by literals and index
// arithmetic is simplified. Locals are read and written as ir.Access nodes
// whose name starts with LocalPrefix.
//
// Loop variable names: a statement axis keeps its source name ("k"); the
// two halves of a split axis are "<axis>.o" (outer, the chunk number) and
// "<axis>.l" (the lane within the chunk), and the horizontal combine of a
// lane-parallel reduction runs over "<axis>.h". '.' never occurs in source
// names, so the names do not collide.
//
// The default schedule (DefaultSchedule) is, per statement:
//
//   - the lane axis is chosen by contiguity (LaneAxis): every access (the
//     store and the distinct reads) scores +1 when one step of the axis
//     moves its flat offset by exactly 1, 0 when it does not use the axis,
//     and -(min(|stride|, V) - 1) otherwise (V - 1 for a stride that is
//     not constant). The innermost left-hand-side axis is kept when every
//     access using it is contiguous (matmul, convolutions, elementwise);
//     otherwise the best-scoring reduction axis or spatial axis of extent
//     at least V wins if its score is positive and above the innermost
//     axis's; otherwise the innermost axis is kept;
//   - spatial loops are outermost, in left-hand-side order (a spatial
//     lane axis other than the innermost moves to the end); loops of
//     extent 1 are removed (their variable is 0);
//   - a spatial lane axis is split by V = 64 bytes / element size, capped
//     to its extent, into an outer loop and an innermost lane loop
//     (Vector); a remainder of constant width E%V follows in its own
//     Block. A reduction then accumulates into a Local register array
//     acc[V] set to the identity (0, 1, -inf, +inf); the reduction loops
//     run inside the outer split loop and the lane loop is innermost
//     inside them; acc is then stored. '=' statements store directly from
//     the lane loop;
//   - a reduction lane axis (extent at least V) gives a lane-parallel
//     reduction inside the spatial loops: acc[V] set to the identity; the
//     other reduction loops in statement order; inside them the outer
//     split loop and the lane loop, lane l folding elements l, l+V, ...
//     into acc[l]; a remainder Block folding the last E%V elements into
//     acc[0..E%V-1]; then the horizontal combine, a plain serial loop in
//     lane order, red = identity; red = red op acc[0]; ...; red = red op
//     acc[V-1], and the store of red. This reassociates += and *= (float
//     results differ by rounding); max= and min= give the same value as
//     the sequential fold, up to the sign of a zero result when +0 and -0
//     tie. The spatial loops are then ordered by SpatialOrder: by
//     decreasing total size of the tensors read with the axis, so that the
//     inner spatial loops stream the small tensors while a row of the
//     large ones stays in cache (WX[b,j] += W[j,k] * X[b,k]: j outside b);
//   - the outermost loop is Parallel, collapsed with the following
//     perfectly nested spatial loops until their iteration count is at
//     least 64.
//
// Scatter statements. The indicator form core/autodiff falls back to for
// an index map it cannot invert, T[z] += where(f(r) == z, body, 0.0),
// reduces over every point r for every element z: |T| * |points|. A '+='
// statement of the scatter form (matchScatter in scatter.go has the exact
// conditions)
//
//	T[z1, ..., zn] += where(C, body, 0.0)      (or 0)
//
// where C, split at &&, holds for EVERY left-hand-side variable z_k one
// equality e_k == z_k (or z_k == e_k) with e_k an index expression free of
// left-hand-side variables and tensor reads, and no z_k occurs anywhere
// else (body, other conjuncts, the e's), is lowered by DefaultSchedule as a
// scatter (Schedule.Scatter) instead:
//
//	block  // zero fill
//	  T[z1, ..., zn] = 0.0          (scheduled as any '=' statement:
//	                                 lanes, parallel loops)
//	block  // scatter over r..., serial
//	  for r... (statement order)
//	    if <conjuncts of C in order, e_k == z_k replaced by
//	        e_k >= 0 && e_k < extent(z_k)>
//	      T[e1, ..., en] += body
//
// which costs |T| + |points|. Range checks that the variables' ranges
// already imply are dropped; a point whose target is out of range is
// skipped, as the gather never matches it. Recognition looks through what
// autodiff wraps around the indicator: a where whose condition the ranges
// decide (where(0 > 1, X[0], ...), where(j < 0, X[j], 0.0)) is its chosen
// branch, a zero term of a top-level sum is dropped, and nested
// where(c, where(c', b, 0), 0) is where(c && c', b, 0); each is exact
// for a sum starting at +0. The scatter loop is serial: distinct points
// may share a target element, so parallel iterations would race; serial
// is race-free without atomics or per-thread copies of T, independent of
// the thread count, and adds each element's terms in the order the
// interpreter does (row-major over the reduction variables). Any other
// statement, and any statement under a schedule without Scatter
// (GatherSchedule), is lowered as a gather as described above.
//
// Tiled statements. A Schedule with a Tiling (tile.go) lowers a gather
// statement as a tiled nest, the schedule space package autotune searches.
// Every axis, spatial or reduction, may be split into tile loops
// "<axis>.t0" (outermost) .. "<axis>.tk" by factors whose product divides
// its extent, and the axis is substituted by sum(<axis>.tl * stride_l).
// The one exception is the lane remainder (peel.go): the lane axis may be
// cut into vectors that leave a remainder, which runs after "<axis>.t0"
// as a copy of its body with shorter lane loops. The tile loops are ordered freely (Loops);
// loops of extent 1 are removed. The first Parallel loops, all spatial,
// form one collapsed OpenMP loop; a collapsed loop carries no other
// annotation, and a lane mark on one moves to the first (omp parallel for
// simd). Vector marks the innermost loop as a lane loop; Unroll annotates
// loops. A reduction declares a Local accumulator at position AccAt of
// Loops, with one element per iteration of the spatial loops from AccAt on
// (at most MaxLocalElems), indexed row-major in their loop order so the
// lane loop is contiguous in it:
//
//	<loops before AccAt>
//	  acc[...] = identity                     (over the inner spatial loops)
//	  <loops from AccAt on> acc[...] op= rhs
//	  T[...] = acc[...]                       (over the inner spatial loops)
//
// A lane loop over a reduction tile (rfactor) needs the accumulator (AccAt
// before it): each element gets one slot per lane, lane innermost, the
// lanes reduce independently, and the final store first combines an
// element's lanes in lane order into red over "<axis>.h":
//
//	red = identity; red op= acc[..., h] for each h; T[...] = red
//
// When a reduction loop with extent above 1 runs before AccAt, or AccAt is
// len(Loops) (no accumulator: the statement combines straight into T), T
// is first filled with the identity (a Block scheduled like any '='
// statement) and the final store combines, T[...] op= acc[...]. Each
// element's terms are then combined in a different order than the
// interpreter's: sums differ by rounding, max and min do not.
//
// A Pack (pack.go) copies one read into a local buffer laid out by the
// loops that index it, so that the lane loop reads it contiguously. Placed
// inside the parallel loops it is private to a thread and refilled per
// tile (at most MaxLocalElems); placed at 0, before the parallel loops, it
// is shared: filled once by all threads and read by all (at most
// MaxSharedPackElems), which transposes a whole operand for lanes over an
// axis it is strided in. A Relayout (relayout.go) copies a whole tensor,
// once, with one dimension moved innermost, and every read of the tensor
// reads the copy; unlike a Pack it serves guarded reads (the stride-2
// capsule-conv input gradient reads B[k, c, x % 2 + 2 * r_step, ...]
// under a where, and lanes over c read B relaid with c innermost). The
// relayouts and shared packs of a statement hold at most
// MaxSharedPackElems elements together.
//
// GPU statements. GPUSchedule (gpu.go) schedules a statement for CUDA.
// A float16 or bfloat16 contraction of two plain reads (MatchMMA) gets an
// MMATiling (mma.go) and lowers to one MMA node, which the CUDA backend
// renders as a Tensor Core kernel (mma.sync tiles; kernels/cgen/mma.go):
// the lowering passes only its axis groups and strides. A reduction with few points (under 2048) and long reductions (256
// iterations or more) is a GPUReduction (gpureduce.go): a block per point
// (BindBlock), its threads (BindThread) each folding a strided share of
// the reduction into a register, combined across the block by a
// BlockCombine. Another reduction with at least 8 iterations per point
// gets a GPUTiling (gputile.go): every spatial axis is split into block,
// register and thread loops (a = a.b*T*R + a.r*T + a.t), every reduction
// axis into steps (k = k.o*K + k.i); per step, the block's threads copy
// the boxes of the staged reads into shared Locals, meet at a Sync,
// accumulate their R points from shared memory in registers (register and
// step-inner loops fully unrolled, so the accumulators stay in
// registers), and meet again before the next copy. A BindThread loop's
// iterations run concurrently, so a Sync inside it is a barrier, not a
// sequence point. Any other statement runs one point per thread over a
// grid-stride loop; a scatter, its points over threads with atomic adds.
//
// Every lowered nest passes a last check (reach.go): by interval
// arithmetic over its loops, guards ignored, no access of a Local and no
// unguarded tensor access may leave its buffer. Lane code loads a local
// array unmasked, so a relaid read under a where has its index clamped to
// the copy; a nest that fails the check is a lowering error, and the
// tuner records its schedule as failed rather than run it.
//
// Fused groups. A statement and the statements joined to it
// (ir.BoundStmt.Joined, core/fuse's fuse-group) share their axes; under a
// Schedule.Group (group.go) they are one nest: the tiled lowering's loops
// over the group's axes, an axis being spatial for the group when it is
// spatial in every member, so that only such axes run in parallel or in
// lanes; at each point the members run in order, an '=' member storing
// its element (a later member may read it there), a reduction member
// combining into its own accumulator, declared at its position in the
// loops (GroupTiling.AccAt) and stored after that loop. DefaultSchedule
// gives a group's first statement DefaultGroupTiling (the lane axis by
// contiguity over all members, cut into chunks of at most 256 elements
// with the other axes between the chunk loop and the lanes, largest
// footprint outermost); GPUSchedule gives a group of '=' statements one
// grid-stride kernel (GPUGroupTiling) and lowers any other group member
// by member, as does any schedule without Group (a tuned one); the CUDA
// renderer then runs members lowered as block phases of one block size
// side by side in one kernel (kernels/cgen, horizontal fusion).
//
// Epilogues. A reduction joined by '=' statements over its spatial axes
// (EpilogueMembers) is lowered under its own schedule, and each of them
// is stored right after every store of a complete element of its output
// (epilogue.go): after a local accumulator's result, in the same lanes;
// on a GPU after a thread's store of its register tile's element (one
// kernel for the group), or in the thread that stores a block
// reduction's result (BlockCombine.Then). A schedule that combines
// partial results into the output has no such store, and the statements
// are then lowered after it.
//
// Otherwise statements run in order, each fully materializing its tensor
// (temporaries included) before the next starts; each parallel loop is its
// own parallel region. Dump prints a Func for debugging and golden tests.
//
// Symbolic extents. One kernel may serve every value of some sizes (a
// batch, a sequence length): Generalize compares two lowerings of one op
// at two values of each size, under the same schedules
// (SymbolicSchedule: untiled; a lane axis that runs to a size s is split
// at every size into a loop to s / w of w-lane vectors and a serial
// remainder loop to s % w, Loop.By and Loop.Rem; a tiling may split an
// axis that runs to a size into tiles, Split.Size, whose remainder block
// runs at every size), and keeps the loops whose extents are a size's two values as
// loops to that size (Loop.Size), the tensors' dimensions likewise
// (ir.TensorDecl.Sizes, strides by FlatIndexOf). Anything else that
// differs between the two refuses the kernel, so nothing that follows
// from a size some other way can be baked in. The sizes' values reach a C
// kernel as one more buffer (Func.Sizes), a CUDA kernel as parameters
// (SymbolicGPUSchedule: grid-stride loops over the points, which cover
// any size).
package loops
