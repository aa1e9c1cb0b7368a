package loops

import "github.com/neoflow/neoflow/core/ir"

// DefaultThreads is the CUDA block size of a nest whose schedule leaves
// Schedule.Threads at 0.
const DefaultThreads = 256

// GPUSchedule is the default schedule of statement i of spec on a GPU:
// DefaultGPUReduction's (given DefaultGPUTiling's) or else
// DefaultGPUTiling's where they give one,
// otherwise no
// lane split (a lane loop would be serial work inside one thread) and
// every spatial loop in the parallel iteration space, left-hand side
// order, so that consecutive threads store consecutive elements
// (coalesced) and each thread folds one element's reduction in the
// interpreter's order. A statement of the scatter form is lowered as a
// scatter whose zero fill is scheduled the same way and whose points are
// distributed over threads too, combining into the tensor atomically
// (Schedule.Atomic).
//
// A 16-bit contraction (MatchMMA) runs on Tensor Cores, by its
// DefaultMMATiling.
//
// The first statement of a fused group whose members are all '='
// statements gets the group's GPUGroupTiling: one kernel computes them
// all.
func GPUSchedule(spec *ir.Spec, i int) Schedule {
	gpuGroup := func(_ *ir.Spec, members []*ir.BoundStmt) *GroupTiling { return GPUGroupTiling(members) }
	if g := groupTiling(spec, i, gpuGroup); g != nil {
		return Schedule{Group: g, Threads: DefaultThreads}
	}
	st := spec.Stmts[i]
	if m, err := MatchMMA(spec, st); err == nil {
		t := DefaultMMATiling(m)
		return Schedule{MMA: &t}
	}
	tiled := DefaultGPUTiling(spec, st)
	if g := DefaultGPUReduction(st, tiled); g != nil {
		return Schedule{GPUReduce: g}
	}
	if tiled != nil {
		return Schedule{GPU: tiled}
	}
	return SymbolicGPUSchedule(spec, i)
}

// Default GPU tiling parameters: the block size it aims for, the widest
// thread split of the innermost axis (a warp of consecutive points) and of
// any other axis, the step budget (reduction iterations per staged step)
// and the largest register split of an axis.
const (
	gpuTileThreads  = 256
	gpuInnerThreads = 32
	gpuOuterThreads = 16
	gpuStepBudget   = 16
	gpuMaxRegs      = 8
)

// DefaultGPUTiling is the GPU tiling GPUSchedule gives a reduction
// statement with at least MinGPUTileReduction reduction iterations per
// point and at least one spatial axis, nil for any other:
//
//   - threads: axes from the innermost outward, the innermost up to a
//     warp wide, the others up to 16, powers of two, until 256;
//   - registers: the two axes with the most points left per thread get a
//     power-of-two split of up to 4 (8 where 64 or more points are left);
//   - steps: reduction axes from the innermost outward, each the largest
//     divisor of its extent within what is left of 16 iterations;
//   - staged: every stageable read that some thread or register loop
//     does not index (so that it is reused within the block), while the
//     buffers fit in shared memory.
func DefaultGPUTiling(spec *ir.Spec, st *ir.BoundStmt) *GPUTiling {
	if st.Stmt.Reduce == ir.Assign || len(st.Spatial) == 0 {
		return nil
	}
	if _, ok := matchScatter(st); ok {
		return nil
	}
	red := int64(1)
	for _, v := range st.Reduction {
		red *= v.Extent
	}
	if red < MinGPUTileReduction {
		return nil
	}
	n := len(st.Spatial)
	axes := make([]GPUAxis, n)
	threads := int64(1)
	for i := n - 1; i >= 0; i-- {
		v := st.Spatial[i]
		limit := int64(gpuOuterThreads)
		if i == n-1 {
			limit = gpuInnerThreads
		}
		t := pow2Floor(min(v.Extent, limit, gpuTileThreads/threads))
		threads *= t
		axes[i] = GPUAxis{Axis: v.Name, Threads: t, Regs: 1}
	}
	for range 2 {
		best, left := -1, int64(1)
		for i, a := range axes {
			if l := st.Spatial[i].Extent / a.Threads; a.Regs == 1 && l > left {
				best, left = i, l
			}
		}
		if best < 0 {
			break
		}
		r := min(pow2Floor(left), 4)
		if left >= 64 {
			r = gpuMaxRegs
		}
		axes[best].Regs = r
	}
	g := &GPUTiling{Spatial: axes}
	budget := int64(gpuStepBudget)
	for i := len(st.Reduction) - 1; i >= 0 && budget > 1; i-- {
		v := st.Reduction[i]
		k := int64(1)
		for d := min(budget, v.Extent); d >= 1; d-- {
			if v.Extent%d == 0 {
				k = d
				break
			}
		}
		g.Steps = append(g.Steps, GPUStep{Axis: v.Name, Tile: k})
		budget /= k
	}
	for i := len(st.Reduction) - 1 - len(g.Steps); i >= 0; i-- {
		g.Steps = append(g.Steps, GPUStep{Axis: st.Reduction[i].Name, Tile: 1})
	}
	reads := StageableReads(st)
	for i, text := range reads {
		a := findRead(st.Stmt.RHS, text)
		reused := false
		for j, ax := range axes {
			if ax.Threads*ax.Regs > 1 && !Uses(a, st.Spatial[j].Name) {
				reused = true
			}
		}
		if !reused {
			continue
		}
		g.TryStage(spec, st, i)
	}
	if g.Check(spec, st) != nil {
		return nil
	}
	return g
}

// MinGPUTileReduction is the fewest reduction iterations per point for
// which GPUSchedule tiles a statement; below it each thread computes one
// point.
const MinGPUTileReduction = 8

func pow2Floor(n int64) int64 {
	p := int64(1)
	for p*2 <= n {
		p *= 2
	}
	return p
}

// A reduction statement is lowered by a block reduction, one block per
// point, where one thread per point (or per register tile) could not fill
// the GPU: with fewer than gpuFewPoints points and at least
// MinGPUBlockReduction reduction iterations per point, or, with fewer than
// gpuBlockPoints points, where its default tiling would launch fewer than
// gpuFewBlocks blocks and each point sums at least gpuLongReduction terms.
// A weight's gradient is the common case of the second: ShuffleNet's group
// 1x1 convolution has 4800 weights, each a sum over 50176 batch and pixel
// positions, which the tiling covered with 4 blocks (12.7 ms on an H200 at
// batch 64; tuned, 0.5 ms). Past gpuBlockPoints the tiling stays: a block
// per point re-reads its operands from the L2 where a tile reuses them in
// registers (a 512x512x4096 GEMM would read 8 GiB).
const (
	gpuFewPoints         = 2048
	MinGPUBlockReduction = 256
	gpuFewBlocks         = 128
	gpuLongReduction     = 4096
	gpuBlockPoints       = 16384
)

// DefaultGPUReduction is the GPU reduction (256 threads per point) that
// GPUSchedule gives a reduction statement not of the scatter form, by the
// rule above; tiled is the statement's DefaultGPUTiling (nil where it has
// none). Nil for any other statement.
func DefaultGPUReduction(st *ir.BoundStmt, tiled *GPUTiling) *GPUReduction {
	if st.Stmt.Reduce == ir.Assign {
		return nil
	}
	if _, ok := matchScatter(st); ok {
		return nil
	}
	points, red := int64(1), int64(1)
	for _, v := range st.Spatial {
		points *= v.Extent
	}
	for _, v := range st.Reduction {
		red *= v.Extent
	}
	few := points < gpuFewPoints && red >= MinGPUBlockReduction
	idle := tiled != nil && points < gpuBlockPoints && red >= gpuLongReduction && tiled.Blocks(st) < gpuFewBlocks
	if !few && !idle {
		return nil
	}
	return &GPUReduction{Threads: gpuTileThreads}
}

// Blocks is the number of blocks the tiling launches for st: per spatial
// axis, its extent over the points one block covers (an axis the tiling
// does not list: one), rounded up.
func (g *GPUTiling) Blocks(st *ir.BoundStmt) int64 {
	n := int64(1)
	for _, v := range st.Spatial {
		per := int64(1)
		for _, a := range g.Spatial {
			if a.Axis == v.Name {
				per = max(a.Threads*a.Regs, 1)
			}
		}
		n *= (v.Extent + per - 1) / per
	}
	return n
}
