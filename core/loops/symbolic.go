package loops

import "github.com/neoflow/neoflow/core/ir"

// SymbolicSchedule is the default CPU schedule of statement i of spec in a
// kernel with symbolic extents (Generalize), where sym holds the
// statement's variables of symbolic extent: the default schedule's lane
// axis and parallel loops, untiled and without fused groups, and no lane
// split of a variable that runs to a size (a split's remainder would follow
// from the size). Its outer loops are parallel whatever its work at these
// sizes: the kernel runs them in parallel only when the work at the sizes
// of a launch reaches MinParallelWork (kernels/cgen). A statement of the
// scatter form is lowered as a scatter, its fill scheduled the same way.
func SymbolicSchedule(spec *ir.Spec, i int, sym map[string]bool) Schedule {
	st := spec.Stmts[i]
	_, scatter := matchScatter(st)
	if scatter {
		st = fillStmt(st)
	}
	s := laneSchedule(spec, st)
	if ax, _, ok := s.lane(st); ok && sym[ax.Name] {
		s = Schedule{VectorWidth: 1}
	}
	s = withOuterParallel(st, s)
	s.Scatter = scatter
	return s
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
