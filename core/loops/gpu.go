package loops

import "github.com/neoflow/neoflow/core/ir"

// DefaultThreads is the CUDA block size of a nest whose schedule leaves
// Schedule.Threads at 0.
const DefaultThreads = 256

// GPUSchedule is the default schedule of statement i of spec on a GPU: no
// lane split (a lane loop would be serial work inside one thread) and
// every spatial loop in the parallel iteration space, left-hand side
// order, so that consecutive threads store consecutive elements
// (coalesced) and each thread folds one element's reduction in the
// interpreter's order. A statement of the scatter form is lowered as a
// scatter whose zero fill is scheduled the same way and whose points are
// distributed over threads too, combining into the tensor atomically
// (Schedule.Atomic).
func GPUSchedule(spec *ir.Spec, i int) Schedule {
	st := spec.Stmts[i]
	s := Schedule{VectorWidth: 1, Threads: DefaultThreads}
	if _, ok := matchScatter(st); ok {
		s.Scatter, s.Atomic = true, true
		st = fillStmt(st)
	}
	s.ParallelDepth = len(parallelCandidates(st, s))
	return s
}
