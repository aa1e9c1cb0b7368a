package loops

import (
	"slices"

	"github.com/neoflow/neoflow/core/ir"
)

// SymbolicSchedule is the default CPU schedule of statement i of spec in a
// kernel with symbolic extents (Generalize), where sym maps the
// statement's variables of symbolic extent to their size variables
// (without SizePrefix): the default schedule's lane axis and parallel
// loops, untiled and without fused groups. A lane axis that runs to a size
// is split into full vectors and a serial remainder at every size
// (Schedule.LaneSize), its vector as wide as the dtype's default whatever
// the axis's extent in spec. Its outer loops are parallel whatever its
// work at these sizes: the kernel runs them in parallel only when the work
// at the sizes of a launch reaches MinParallelWork (kernels/cgen). A
// statement of the scatter form is lowered as a scatter, its fill
// scheduled the same way, without a lane split of a size.
func SymbolicSchedule(spec *ir.Spec, i int, sym map[string]string) Schedule {
	st := spec.Stmts[i]
	_, scatter := matchScatter(st)
	if scatter {
		st = fillStmt(st)
	}
	s := laneSchedule(spec, atLeastLanes(spec, st, sym))
	if ax, _, ok := s.lane(st); ok && sym[ax.Name] != "" {
		if scatter {
			s = Schedule{VectorWidth: 1}
		} else {
			s.LaneSize = SizePrefix + sym[ax.Name]
			s.VectorWidth = defaultLanes(spec.DType)
		}
	}
	s = withOuterParallel(st, s)
	s.Scatter = scatter
	return s
}

// atLeastLanes is st with each variable of symbolic extent (sym) at
// least a default vector wide: the lane axis is chosen for the sizes the
// kernel serves, not for the value a size had in this specialization
// (a batch of 8 beside a contiguous row of 3 would put the lanes on the
// row); where a size is smaller at a launch, its remainder loop runs.
func atLeastLanes(spec *ir.Spec, st *ir.BoundStmt, sym map[string]string) *ir.BoundStmt {
	v := defaultLanes(spec.DType)
	widen := func(vars []ir.Var) []ir.Var {
		out := slices.Clone(vars)
		for i := range out {
			if sym[out[i].Name] != "" {
				out[i].Extent = max(out[i].Extent, v)
			}
		}
		return out
	}
	c := *st
	c.Spatial, c.Reduction = widen(st.Spatial), widen(st.Reduction)
	return &c
}

// SymbolicGPUSchedule is the GPU schedule of statement i of spec in a
// kernel with symbolic extents: GPUSchedule's schedule of one thread per
// point, every spatial loop in the parallel (grid-stride) loop, its
// reductions run by that thread; untiled, without fused groups or Tensor
// Cores, whose tiles would follow from the sizes. A statement of the
// scatter form is lowered as an atomic scatter.
func SymbolicGPUSchedule(spec *ir.Spec, i int) Schedule {
	st := spec.Stmts[i]
	s := Schedule{VectorWidth: 1, Threads: DefaultThreads}
	if _, ok := matchScatter(st); ok {
		s.Scatter, s.Atomic = true, true
		st = fillStmt(st)
	}
	s.ParallelDepth = len(parallelCandidates(st, s))
	return s
}

// SymbolicVariants are the schedules of statement i of spec that a kernel
// with symbolic extents is picked among, for each size bucket
// (autotune.PickSymbolic): in a fixed order, SymbolicSchedule's default,
// then without lanes, with half as many lanes, and with one more loop in
// the parallel loop. (No serial variant: the parallel loops already run
// serially below MinParallelWork at the sizes of a launch, and a timing
// behind a training favours serial kernels.) Where a variant does not
// apply (no lanes to drop, no further loop), it is the default, so that
// variant k of every statement makes one kernel's candidate. A statement
// of the scatter form has the default only, repeated.
func SymbolicVariants(spec *ir.Spec, i int, sym map[string]string) []Schedule {
	def := SymbolicSchedule(spec, i, sym)
	out := []Schedule{def, def, def, def}
	if def.Scatter {
		return out
	}
	if def.VectorWidth > 1 {
		out[1] = withOuterParallel(spec.Stmts[i], Schedule{VectorWidth: 1})
	}
	if def.VectorWidth >= 8 {
		out[2].VectorWidth = def.VectorWidth / 2
	}
	if def.ParallelDepth < len(parallelCandidates(spec.Stmts[i], def)) {
		out[3].ParallelDepth = def.ParallelDepth + 1
	}
	return out
}
