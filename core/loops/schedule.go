package loops

import (
	"fmt"
	"slices"

	"github.com/pkg/errors"

	"github.com/neoflow/neoflow/core/ir"
)

// VectorBytes is the width of the default lane split in bytes.
const VectorBytes = 64

// defaultLanes is the lane count of the default split for dtype dt: as
// many elements as VectorBytes holds.
func defaultLanes(dt ir.DType) int64 { return int64(VectorBytes / max(dt.Size(), 1)) }

// MinParallelIters is the iteration count the default schedule collapses
// outer loops up to before distributing them over threads.
const MinParallelIters = 64

// Schedule is how one statement is lowered. The default schedule is
// DefaultSchedule; tuned schedules set other values. The zero values of
// VectorAxis and Order give the historical layout: spatial loops in
// left-hand-side order, the innermost one split into lanes.
type Schedule struct {
	// VectorWidth is the number of lanes the lane axis is split into (1:
	// no split). It must not exceed that axis's extent.
	VectorWidth int64
	// VectorAxis names the lane axis. Empty means the innermost spatial
	// loop (the last of Order). A spatial lane axis must be the last of
	// Order. A reduction axis gives a lane-parallel reduction: VectorWidth
	// partial results, combined at the end (see the package doc).
	VectorAxis string
	// Order lists the spatial axes, outermost loop first; nil means
	// left-hand-side order.
	Order []string
	// ParallelDepth is how many outermost loops (after loops of extent 1
	// are removed) form the parallel iteration space, 0 for none. Those
	// loops must be perfectly nested: the outer split loop of an axis with
	// a remainder can only be included when it is the first loop.
	ParallelDepth int
	// Scatter lowers a statement of the scatter form (see the package
	// doc) as a zero fill of its tensor followed by a serial scatter over
	// the reduction variables, instead of a gather; the fields above then
	// schedule the zero fill, an '=' statement over the left-hand side.
	Scatter bool
	// Atomic, with Scatter, distributes the scatter's points over the
	// threads too (its loops form one parallel loop) and combines each
	// term into the tensor with an atomic add (Store.Atomic). Only a
	// backend with atomics (CUDA) renders it; the order of the additions
	// then varies between runs.
	Atomic bool
	// Threads is the number of threads per block of the nest's parallel
	// loops on CUDA (0: DefaultThreads). The CPU backend ignores it.
	Threads int
	// Tiling, when set, lowers the statement as a gather by the tiled
	// lowering instead; the fields above are then ignored and Scatter
	// must be false.
	Tiling *Tiling
	// GPU, when set, lowers the statement as a gather by the GPU tiled
	// lowering (blocks, threads, registers, shared memory); only a CUDA
	// backend renders it. The fields above are then ignored, Scatter must
	// be false and Tiling nil.
	GPU *GPUTiling
	// GPUReduce, when set, lowers the statement by the GPU block
	// reduction instead (see GPUReduction); only a CUDA backend renders
	// it, and every other field must be unset.
	GPUReduce *GPUReduction
	// MMA, when set, runs a 16-bit contraction on Tensor Cores (MMATiling;
	// CUDA only); every other field must be unset.
	MMA *MMATiling
	// LaneSize, in a kernel with symbolic extents (Generalize), names the
	// size variable (with SizePrefix) that the lane axis runs to: its
	// split's outer loop then runs to LaneSize / VectorWidth and a serial
	// remainder loop to LaneSize % VectorWidth, at every value of the
	// size, whatever the axis's extent in the specialization lowered
	// (which VectorWidth may exceed). Only the untiled CPU lowering takes
	// it.
	LaneSize string
	// Group, when set on the first statement of a fused group
	// (ir.BoundStmt.Joined), lowers the group as one CPU loop nest
	// (GroupTiling); every other field must be unset, and the members'
	// own schedules are not used. Without it the members are lowered
	// one after the other, each with its own schedule.
	Group *GroupTiling
}

// String is the schedule as Dump prints it.
func (s Schedule) String() string {
	if s.Group != nil && s.Threads != 0 {
		return fmt.Sprintf("%s, threads %d", s.Group, s.Threads)
	}
	if s.Group != nil {
		return s.Group.String()
	}
	if s.GPUReduce != nil {
		return s.GPUReduce.String()
	}
	if s.MMA != nil {
		return s.MMA.String()
	}
	if s.GPU != nil {
		return s.GPU.String()
	}
	if s.Tiling != nil {
		return s.Tiling.String()
	}
	t := fmt.Sprintf("vector %d", s.VectorWidth)
	if s.Scatter {
		t = "scatter, " + t
	}
	if s.Atomic {
		t = "atomic " + t
	}
	if s.VectorAxis != "" {
		t += " over " + s.VectorAxis
	}
	if s.Order != nil {
		t += fmt.Sprintf(" order %v", s.Order)
	}
	if s.LaneSize != "" {
		t += " to size " + s.LaneSize[len(SizePrefix):]
	}
	t += fmt.Sprintf(", parallel %d", s.ParallelDepth)
	if s.Threads != 0 {
		t += fmt.Sprintf(", threads %d", s.Threads)
	}
	return t
}

// DefaultSchedule is the default CPU schedule of statement i of spec. A
// statement of the scatter form is lowered as a scatter (Scatter set),
// its zero fill scheduled as GatherSchedule schedules an '=' statement
// over the same left-hand side; any other statement gets GatherSchedule.
//
// The first statement of a fused group (ir.BoundStmt.Joined) gets the
// group's DefaultGroupTiling where there is one.
func DefaultSchedule(spec *ir.Spec, i int) Schedule {
	if g := groupTiling(spec, i, DefaultGroupTiling); g != nil {
		return Schedule{Group: g}
	}
	st := spec.Stmts[i]
	if _, ok := matchScatter(st); ok {
		s := defaultSchedule(spec, fillStmt(st))
		s.Scatter = true
		return s
	}
	return defaultSchedule(spec, st)
}

// GatherSchedule is the default schedule of statement i of spec lowered as
// a gather, the lowering every statement has: the lane axis chosen by
// LaneAxis, split into VectorBytes / element size lanes (capped to the
// extent of a spatial lane axis); for a lane-parallel reduction the
// spatial loops ordered by SpatialOrder; and the outermost loops collapsed
// into one parallel loop until they have at least MinParallelIters
// iterations.
func GatherSchedule(spec *ir.Spec, i int) Schedule {
	return defaultSchedule(spec, spec.Stmts[i])
}

func defaultSchedule(spec *ir.Spec, st *ir.BoundStmt) Schedule {
	s := laneSchedule(spec, st)
	if t := gatherRows(spec, st, s); t != nil {
		s = Schedule{Tiling: t}
	}
	return withParallelLoops(st, s)
}

// laneSchedule is the default schedule's lane axis and loop order: the
// axis LaneAxis picks, split into VectorBytes / element size lanes
// (capped to a spatial lane axis's extent), and for a lane-parallel
// reduction the spatial loops in SpatialOrder.
func laneSchedule(spec *ir.Spec, st *ir.BoundStmt) Schedule {
	s := Schedule{VectorWidth: 1}
	v := defaultLanes(spec.DType)
	if ax, ok := LaneAxis(spec, st, v); ok {
		n := len(st.Spatial)
		switch {
		case isReduction(st, ax.Name):
			s.VectorWidth = v
			s.VectorAxis = ax.Name
			s.Order = SpatialOrder(spec, st)
		case ax.Name == st.Spatial[n-1].Name:
			s.VectorWidth = max(min(v, ax.Extent), 1)
		default:
			s.VectorWidth = v
			s.VectorAxis = ax.Name
			for _, sp := range st.Spatial {
				if sp.Name != ax.Name {
					s.Order = append(s.Order, sp.Name)
				}
			}
			s.Order = append(s.Order, ax.Name)
		}
		if s.Order != nil && slices.Equal(s.Order, spatialNames(st)) {
			s.Order = nil
		}
	}
	return s
}

// withParallelLoops is s with the outermost loops collapsed into one
// parallel loop until they have at least MinParallelIters iterations, or
// none when the statement has too little work (MinParallelWork).
func withParallelLoops(st *ir.BoundStmt, s Schedule) Schedule {
	if st.Points() < MinParallelWork {
		if s.Tiling != nil {
			s.Tiling.Parallel = 0
		}
		return s // too little work to pay for starting threads
	}
	if s.Tiling != nil {
		return s
	}
	return withOuterParallel(st, s)
}

// withOuterParallel is s with the outermost loops collapsed into one
// parallel loop until they have at least MinParallelIters iterations.
func withOuterParallel(st *ir.BoundStmt, s Schedule) Schedule {
	prod := int64(1)
	for _, c := range parallelCandidates(st, s) {
		if prod >= MinParallelIters {
			break
		}
		prod *= c
		s.ParallelDepth++
	}
	return s
}

// MinParallelWork is the number of innermost iterations (the product of
// all of a statement's extents) below which the default schedule runs the
// statement on the calling thread: starting an OpenMP team costs a few
// microseconds, more than a small elementwise op takes. Tests set it to 0
// so that small shapes exercise the parallel code paths.
var MinParallelWork int64 = 1 << 15

// Uses reports whether index variable name occurs in e.
func Uses(e ir.Expr, name string) bool {
	found := false
	ir.Walk(e, func(x ir.Expr) bool {
		if ix, ok := x.(*ir.Index); ok && ix.Name == name {
			found = true
		}
		return true
	})
	return found
}

// stmtAccesses lists the store of st and the distinct tensor reads of its
// right-hand side, in order of first occurrence.
func stmtAccesses(st *ir.BoundStmt) []*ir.Access {
	out := []*ir.Access{{Tensor: st.Stmt.Tensor}}
	for _, ix := range st.Stmt.Indices {
		out[0].Indices = append(out[0].Indices, ix)
	}
	seen := map[string]bool{}
	ir.Walk(st.Stmt.RHS, func(e ir.Expr) bool {
		if a, ok := e.(*ir.Access); ok {
			if k := ir.ExprString(a); !seen[k] {
				seen[k] = true
				out = append(out, a)
			}
		}
		return true
	})
	return out
}

// SpatialOrder is the spatial loop order of a lane-parallel reduction:
// spatial axes by decreasing footprint, ties in left-hand-side order. The
// footprint of an axis is the total size of the tensors whose reads use it
// (each tensor counted once). The innermost spatial loops then walk the
// smallest tensors, while a row of each large tensor, indexed by the outer
// axes only, stays in cache across them: for WX[b,j] += W[j,k] * X[b,k]
// with W larger than X the order is j, b, so W's row j is reused for every
// b.
func SpatialOrder(spec *ir.Spec, st *ir.BoundStmt) []string {
	reads := stmtAccesses(st)[1:]
	foot := map[string]int64{}
	for _, ax := range st.Spatial {
		seen := map[string]bool{}
		for _, a := range reads {
			if seen[a.Tensor] || !Uses(a, ax.Name) {
				continue
			}
			seen[a.Tensor] = true
			if t := spec.Tensor(a.Tensor); t != nil {
				foot[ax.Name] += t.Elems()
			}
		}
	}
	return byFootprint(spatialNames(st), foot)
}

// byFootprint sorts names by decreasing foot, ties in their order.
func byFootprint(names []string, foot map[string]int64) []string {
	slices.SortStableFunc(names, func(a, b string) int {
		switch {
		case foot[a] > foot[b]:
			return -1
		case foot[a] < foot[b]:
			return 1
		}
		return 0
	})
	return names
}

func spatialNames(st *ir.BoundStmt) []string {
	out := make([]string, len(st.Spatial))
	for i, ax := range st.Spatial {
		out[i] = ax.Name
	}
	return out
}

func isReduction(st *ir.BoundStmt, name string) bool {
	_, red, _ := axis(st, name)
	return red
}

// order is the spatial axes of st in loop order, outermost first.
func (s Schedule) order(st *ir.BoundStmt) []ir.Var {
	if s.Order == nil {
		return st.Spatial
	}
	byName := map[string]ir.Var{}
	for _, ax := range st.Spatial {
		byName[ax.Name] = ax
	}
	out := make([]ir.Var, len(s.Order))
	for i, n := range s.Order {
		out[i] = byName[n]
	}
	return out
}

// lane is the lane axis of a checked schedule and whether it is a
// reduction axis; ok is false when there is no lane split.
func (s Schedule) lane(st *ir.BoundStmt) (ax ir.Var, reduction, ok bool) {
	if s.VectorWidth <= 1 {
		return ir.Var{}, false, false
	}
	if s.VectorAxis == "" {
		o := s.order(st)
		if len(o) == 0 {
			return ir.Var{}, false, false
		}
		return o[len(o)-1], false, true
	}
	return axis(st, s.VectorAxis)
}

// LaneVar names the lane axis of st under s, if s splits one.
func (s Schedule) LaneVar(st *ir.BoundStmt) (string, bool) {
	ax, _, ok := s.lane(st)
	return ax.Name, ok
}

// axis finds the axis of st named name.
func axis(st *ir.BoundStmt, name string) (ax ir.Var, reduction, ok bool) {
	for _, r := range st.Reduction {
		if r.Name == name {
			return r, true, true
		}
	}
	for _, sp := range st.Spatial {
		if sp.Name == name {
			return sp, false, true
		}
	}
	return ir.Var{}, false, false
}

// parallelCandidates lists the extents of the spatial loops that may form a
// collapsed parallel loop under schedule s, outermost first.
func parallelCandidates(st *ir.BoundStmt, s Schedule) []int64 {
	var out []int64
	ord := s.order(st)
	n := len(ord)
	_, red, ok := s.lane(st)
	split := ok && !red
	v := s.VectorWidth
	for i, ax := range ord {
		ext := ax.Extent
		last := split && i == n-1
		sized := last && s.LaneSize != "" // its loops exist at every size
		if last {
			ext = ax.Extent / v
		}
		if ext == 1 && !sized {
			continue
		}
		if last && (ax.Extent%v != 0 || sized) && len(out) > 0 {
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
	if s.Threads < 0 || s.Threads > MaxGPUThreads || s.Threads%32 != 0 {
		return errors.Errorf("threads per block %d: want a multiple of 32 up to %d, or 0", s.Threads, MaxGPUThreads)
	}
	if s.Group != nil {
		if s.Scatter || s.Atomic || s.Tiling != nil || s.GPU != nil || s.GPUReduce != nil || s.MMA != nil || s.VectorWidth > 1 {
			return errors.New("a fused group's schedule cannot scatter or be tiled otherwise too")
		}
		return nil // lowerGroup checks the rest against the members
	}
	if s.MMA != nil {
		if s.Scatter || s.Atomic || s.Tiling != nil || s.GPU != nil || s.GPUReduce != nil {
			return errors.New("a Tensor Core schedule cannot scatter or be tiled otherwise too")
		}
		return nil // lowerMMA checks the rest
	}
	if s.GPUReduce != nil {
		if s.Scatter || s.Tiling != nil || s.GPU != nil {
			return errors.New("a GPU reduction cannot scatter or be tiled too")
		}
		return nil // lowerGPUReduce checks the rest
	}
	if s.GPU != nil {
		if s.Scatter || s.Tiling != nil {
			return errors.New("a GPU tiled schedule cannot scatter or be tiled for the CPU too")
		}
		return nil // lowerGPU checks the tiling
	}
	if s.Tiling != nil {
		if s.Scatter {
			return errors.New("a tiled schedule cannot scatter")
		}
		_, err := s.Tiling.resolve(st)
		return err
	}
	if s.Atomic && !s.Scatter {
		return errors.New("an atomic schedule must scatter")
	}
	if s.LaneSize != "" && (s.Scatter || s.VectorWidth < 2 || !IsSize(s.LaneSize)) {
		return errors.Errorf("lane size %q: a lane axis that runs to a size needs a size variable, a vector width of at least 2, and no scatter", s.LaneSize)
	}
	if s.Scatter {
		if _, ok := matchScatter(st); !ok {
			return errors.New("scatter schedule for a statement that is not of the scatter form")
		}
		st = fillStmt(st)
	}
	if s.VectorWidth < 1 {
		return errors.Errorf("vector width %d < 1", s.VectorWidth)
	}
	if s.Order != nil {
		if len(s.Order) != len(st.Spatial) {
			return errors.Errorf("order %v does not list the %d spatial axes", s.Order, len(st.Spatial))
		}
		seen := map[string]bool{}
		for _, n := range s.Order {
			if seen[n] || !slices.Contains(spatialNames(st), n) {
				return errors.Errorf("order %v is not a permutation of the spatial axes %v", s.Order, spatialNames(st))
			}
			seen[n] = true
		}
	}
	if s.VectorAxis != "" {
		ord := s.order(st)
		ax, red, ok := axis(st, s.VectorAxis)
		switch {
		case !ok:
			return errors.Errorf("vector axis %s is not an axis of the statement", s.VectorAxis)
		case !red && ord[len(ord)-1].Name != ax.Name:
			return errors.Errorf("spatial vector axis %s is not the innermost spatial loop", s.VectorAxis)
		case s.VectorWidth > ax.Extent && s.LaneSize == "":
			return errors.Errorf("vector width %d exceeds the extent %d of axis %s", s.VectorWidth, ax.Extent, ax.Name)
		}
	} else if s.VectorWidth > 1 {
		ord := s.order(st)
		if len(ord) == 0 {
			return errors.Errorf("vector width %d on a statement without spatial axes", s.VectorWidth)
		}
		if e := ord[len(ord)-1].Extent; s.VectorWidth > e && s.LaneSize == "" {
			return errors.Errorf("vector width %d exceeds the extent %d of axis %s", s.VectorWidth, e, ord[len(ord)-1].Name)
		}
	}
	if c := len(parallelCandidates(st, s)); s.ParallelDepth < 0 || s.ParallelDepth > c {
		return errors.Errorf("parallel depth %d: only %d perfectly nested spatial loops", s.ParallelDepth, c)
	}
	return nil
}

// groupTiling is def's tiling of the fused group statement i of spec
// leads, nil when i leads none.
func groupTiling(spec *ir.Spec, i int, def func(*ir.Spec, []*ir.BoundStmt) *GroupTiling) *GroupTiling {
	idx := GroupMembers(spec, i)
	if len(idx) < 2 {
		return nil
	}
	members := make([]*ir.BoundStmt, len(idx))
	for k, j := range idx {
		members[k] = spec.Stmts[j]
	}
	return def(spec, members)
}
