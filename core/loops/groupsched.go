package loops

import (
	"slices"

	"github.com/neoflow/neoflow/core/ir"
)

// MaxGroupChunk is the most elements of the lane axis one iteration of a
// fused group's outer lane loop covers (DefaultGroupTiling): the inner
// loops then stream a row of that length of every tensor indexed by it.
const MaxGroupChunk = 256

// DefaultGroupTiling is the default CPU schedule of a fused group, nil
// when the members cannot share one nest (GroupDomain fails) or the group
// has no axis that is spatial in every member to run in lanes and in
// parallel. It is:
//
//   - the lane axis: the group-spatial axis of extent at least 2 whose
//     accesses over all members score best (laneScore), which must be
//     positive;
//   - the lane axis split as a.t0, a.t1, a.t2 with a.t2 of V lanes (64
//     bytes) and a.t1*a.t2 a chunk of at most MaxGroupChunk elements
//     leaving a.t0 at least 8 iterations where the extent allows; an
//     extent V does not divide stays one lane loop;
//   - loops: the other group-spatial axes in the first member's order,
//     a.t0, then the remaining axes by decreasing footprint (SpatialOrder's
//     measure over all members' reads), then a.t1 and a.t2;
//   - the leading group-spatial loops collapsed into one parallel loop
//     until they have MinParallelIters iterations (none for less work
//     than MinParallelWork);
//   - each reduction member's accumulator at its outermost reduction loop
//     when it fits in MaxLocalElems, else none (identity fill, combine
//     into the output).
func DefaultGroupTiling(spec *ir.Spec, members []*ir.BoundStmt) *GroupTiling {
	dom, ok := GroupDomain(members)
	if !ok || len(dom.Spatial) == 0 {
		return nil
	}
	v := defaultLanes(spec.DType)
	var acc []*ir.Access
	for _, m := range members {
		acc = append(acc, stmtAccesses(m)...)
	}
	lane, best := ir.Var{}, int64(0)
	for i := len(dom.Spatial) - 1; i >= 0; i-- {
		ax := dom.Spatial[i]
		if sc, _ := laneScore(spec, acc, ax.Name, v); ax.Extent >= 2 && sc > best {
			lane, best = ax, sc
		}
	}
	if best <= 0 {
		return nil
	}
	g := &GroupTiling{Vector: true}
	var head, tail []string
	for _, ax := range dom.Spatial {
		if ax.Name != lane.Name {
			head = append(head, ax.Name)
		}
	}
	if lane.Extent%v == 0 && lane.Extent > v {
		chunks := lane.Extent / v
		c := int64(1)
		for d := int64(1); d*v <= MaxGroupChunk && d <= chunks; d++ {
			if chunks%d == 0 && (chunks/d >= 8 || d == 1) {
				c = d
			}
		}
		g.Splits = []Split{{Axis: lane.Name, Factors: []int64{c, v}}}
		head = append(head, TileLoop(lane.Name, 0))
		tail = []string{TileLoop(lane.Name, 1), TileLoop(lane.Name, 2)}
	} else {
		tail = []string{lane.Name}
	}
	g.Loops = append(append(head, footprintOrder(spec, dom, members)...), tail...)
	ord, err := (&Tiling{Splits: g.Splits, Loops: g.Loops}).resolve(dom)
	if err != nil {
		return nil
	}
	if dom.Points() >= MinParallelWork {
		prod := int64(1)
		for _, l := range ord {
			if prod >= MinParallelIters || !l.spatial || l.name == ord[len(ord)-1].name {
				break
			}
			prod *= l.extent
			g.Parallel++
		}
	}
	g.AccAt = make([]int, len(members))
	for i, m := range members {
		g.AccAt[i] = len(ord)
		if m.Stmt.Reduce == ir.Assign {
			continue
		}
		at := slices.IndexFunc(ord, func(l tileLoop) bool { return isReduction(m, l.axis) && l.extent > 1 })
		if at >= 0 && at >= g.Parallel && accLen(memberSpatial(m, ord[at:])) <= MaxLocalElems {
			g.AccAt[i] = at
		}
	}
	if _, _, err := g.resolve(members); err != nil {
		return nil
	}
	return g
}

// footprintOrder lists the group's non-spatial axes (dom.Reduction) by
// decreasing footprint: the total size of the tensors that any member
// reads or writes with the axis, each tensor counted once; ties keep the
// domain's order. The outer loops then walk the large tensors once.
func footprintOrder(spec *ir.Spec, dom *ir.BoundStmt, members []*ir.BoundStmt) []string {
	foot := map[string]int64{}
	var names []string
	for _, ax := range dom.Reduction {
		names = append(names, ax.Name)
		seen := map[string]bool{}
		for _, m := range members {
			for _, a := range stmtAccesses(m) {
				if seen[a.Tensor] || !usesAccess(a, ax.Name) {
					continue
				}
				seen[a.Tensor] = true
				if t := spec.Tensor(a.Tensor); t != nil {
					foot[ax.Name] += t.Elems()
				}
			}
		}
	}
	return byFootprint(names, foot)
}

func usesAccess(a *ir.Access, name string) bool {
	return slices.ContainsFunc(a.Indices, func(e ir.Expr) bool { return Uses(e, name) })
}

// GPUGroupTiling is the CUDA schedule of a fused group whose members are
// all '=' statements over the same axes: every axis in one collapsed
// parallel loop (a grid-stride loop, one point per thread, the first
// member's left-hand-side order so that consecutive threads store
// consecutive elements), the members computed in order at each point.
// It is nil for any other group: its members are lowered one by one.
func GPUGroupTiling(members []*ir.BoundStmt) *GroupTiling {
	for _, m := range members {
		if m.Stmt.Reduce != ir.Assign {
			return nil
		}
	}
	dom, ok := GroupDomain(members)
	if !ok || len(dom.Reduction) > 0 || len(dom.Spatial) == 0 {
		return nil
	}
	g := &GroupTiling{AccAt: make([]int, len(members))}
	for _, ax := range dom.Spatial {
		g.Loops = append(g.Loops, ax.Name)
		if ax.Extent > 1 {
			g.Parallel++
		}
	}
	// Loops of extent 1 are not emitted; the parallel ones must lead.
	slices.SortStableFunc(g.Loops, func(a, b string) int {
		ea, eb := axisExt(dom, a) > 1, axisExt(dom, b) > 1
		switch {
		case ea && !eb:
			return -1
		case eb && !ea:
			return 1
		}
		return 0
	})
	if _, _, err := g.resolve(members); err != nil {
		return nil
	}
	return g
}

func axisExt(st *ir.BoundStmt, name string) int64 {
	ax, _, _ := axis(st, name)
	return ax.Extent
}

// LoopAxes lists the loops of a nest, outermost first, each as the axis
// it steps and its extent (the loops of a split axis each name the
// axis): the shape a traffic estimate needs (core/fuse's reward).
//
// GroupLoopAxes is the nest of a fused group under g; DefaultLoopAxes
// that of one statement under its untiled default schedule: the spatial
// loops in the schedule's order, a spatial lane axis split into an outer
// loop in its place and the lanes innermost, then the reduction loops in
// statement order, a reduction lane axis split the same way.
func GroupLoopAxes(members []*ir.BoundStmt, g *GroupTiling) []ir.Var {
	_, ord, err := g.resolve(members)
	if err != nil {
		return nil
	}
	out := make([]ir.Var, len(ord))
	for i, l := range ord {
		out[i] = ir.Var{Name: l.axis, Extent: l.extent}
	}
	return out
}

// DefaultLoopAxes: see GroupLoopAxes.
func DefaultLoopAxes(spec *ir.Spec, st *ir.BoundStmt) []ir.Var {
	s := defaultSchedule(spec, st)
	lane, _, split := s.lane(st)
	var out, inner []ir.Var
	add := func(ax ir.Var) {
		if split && ax.Name == lane.Name {
			out = append(out, ir.Var{Name: ax.Name, Extent: max(ax.Extent/s.VectorWidth, 1)})
			inner = append(inner, ir.Var{Name: ax.Name, Extent: s.VectorWidth})
			return
		}
		out = append(out, ax)
	}
	for _, ax := range s.order(st) {
		add(ax)
	}
	for _, ax := range st.Reduction {
		add(ax)
	}
	return append(out, inner...)
}
