package loops

import (
	"github.com/pkg/errors"

	"github.com/neoflow/neoflow/core/ir"
)

// VectorBytes is the width of the default lane split in bytes.
const VectorBytes = 64

// MinParallelIters is the iteration count the default schedule collapses
// outer loops up to before distributing them over threads.
const MinParallelIters = 64

// Schedule is how one statement is lowered. The default schedule is
// DefaultSchedule; tuned schedules set other values.
type Schedule struct {
	// VectorWidth is the number of lanes the innermost spatial axis is
	// split into (1: no split). It must not exceed that axis's extent.
	VectorWidth int64
	// ParallelDepth is how many outermost loops (after loops of extent 1
	// are removed) form the parallel iteration space, 0 for none. Those
	// loops must be perfectly nested: the outer split loop of an axis with
	// a remainder can only be included when it is the first loop.
	ParallelDepth int
}

// DefaultSchedule is the default schedule of statement i of spec.
func DefaultSchedule(spec *ir.Spec, i int) Schedule {
	st := spec.Stmts[i]
	s := Schedule{VectorWidth: 1}
	if n := len(st.Spatial); n > 0 {
		v := int64(VectorBytes / max(spec.DType.Size(), 1))
		s.VectorWidth = max(min(v, st.Spatial[n-1].Extent), 1)
	}
	prod := int64(1)
	for _, c := range parallelCandidates(st, s.VectorWidth) {
		if prod >= MinParallelIters {
			break
		}
		prod *= c
		s.ParallelDepth++
	}
	return s
}

// parallelCandidates lists the extents of the spatial loops that may form a
// collapsed parallel loop, outermost first, for a lane split of width v.
func parallelCandidates(st *ir.BoundStmt, v int64) []int64 {
	var out []int64
	n := len(st.Spatial)
	for i, ax := range st.Spatial {
		ext := ax.Extent
		last := i == n-1
		if last && v > 1 {
			ext = ax.Extent / v
		}
		if ext == 1 {
			continue
		}
		if last && v > 1 && ax.Extent%v != 0 && len(out) > 0 {
			// The remainder block follows the outer split loop inside
			// the enclosing loop: the nest is no longer perfect.
			break
		}
		out = append(out, ext)
	}
	return out
}

// check validates a schedule for statement st.
func (s Schedule) check(st *ir.BoundStmt) error {
	if s.VectorWidth < 1 {
		return errors.Errorf("vector width %d < 1", s.VectorWidth)
	}
	if s.VectorWidth > 1 {
		n := len(st.Spatial)
		if n == 0 {
			return errors.Errorf("vector width %d on a statement without spatial axes", s.VectorWidth)
		}
		if e := st.Spatial[n-1].Extent; s.VectorWidth > e {
			return errors.Errorf("vector width %d exceeds the extent %d of axis %s", s.VectorWidth, e, st.Spatial[n-1].Name)
		}
	}
	if c := len(parallelCandidates(st, s.VectorWidth)); s.ParallelDepth < 0 || s.ParallelDepth > c {
		return errors.Errorf("parallel depth %d: only %d perfectly nested spatial loops", s.ParallelDepth, c)
	}
	return nil
}
