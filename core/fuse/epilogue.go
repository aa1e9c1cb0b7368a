package fuse

import (
	"fmt"
	"maps"
	"slices"

	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/loops"
)

// tryEpilogue is the join of gb, one '=' statement without reduction
// axes, into ga, a reduction (and the epilogue
// statements joined to it already), as an epilogue (loops.EpilogueMembers):
// the statement runs inside the reduction's nest right after each element
// of its output is complete, reading that element where it was stored.
// It must read the output of the reduction or of an earlier epilogue
// statement, and read those outputs only at the element being stored; no
// member may read what it writes; and the reduction's default schedule
// must store its output in lanes over the last axis of both outputs
// (loops.EpilogueInLanes), so that the epilogue runs vectorized: under a
// lane reduction it would run one element at a time, along the
// reduction's loop order, and the RNN cells' forward kernels measured
// slower so (MI-LSTM 3.0 -> 3.3-4.0 ms, subLSTM 0.78 -> 1.15 ms). The reward is R = ΔT/Pd + L: the reduction's output read
// back from cache rather than memory, with any tensor both read, and one
// loop nest saved. nil, with the reason for a pair that shares data but
// cannot join, otherwise.
func (g *grouping) tryEpilogue(a, b *group) (*join, string) {
	ga, gb := a.members, b.members
	r := ga[0]
	if len(gb) != 1 || r.Stmt.Reduce == ir.Assign || len(ga) >= MaxGroup {
		return nil, ""
	}
	for _, m := range epilogueAlignments(ga, gb[0]) {
		e := renameVars(gb[0], m)
		members := append(slices.Clone(ga), e)
		if !loops.EpilogueMembers(members) {
			continue
		}
		if !loops.EpilogueInLanes(g.spec, r, e) {
			return nil, fmt.Sprintf("%s stays out of %s's nest: %s's schedule stores its elements one at a time (in lanes over its reduction, or over another axis than %s's last), where %s would run unvectorized", e.Stmt.Tensor, r.Stmt.Tensor, r.Stmt.Tensor, e.Stmt.Tensor, e.Stmt.Tensor)
		}
		if !epilogueLegal(ga, e) {
			return nil, fmt.Sprintf("%s stays out of %s's nest: it reads %s's output elsewhere than at the element just completed", e.Stmt.Tensor, r.Stmt.Tensor, tensorsOf(ga))
		}
		bytes, why, _ := shared(g.decls, g.spec.DType, a, readSet([]*ir.BoundStmt{e}), []*ir.BoundStmt{e})
		rw := g.opts.Machine.reward(bytes, 0, 1)
		if rw.R <= 0 {
			return nil, fmt.Sprintf("%s stays out of %s's nest (%s): %s", e.Stmt.Tensor, r.Stmt.Tensor, why, rw)
		}
		return &join{members: members, axes: slices.Clone(r.Spatial), reward: rw, why: why + "; as its epilogue, after each element's reduction"}, ""
	}
	return nil, ""
}

// epilogueLegal reports whether e may run right after each element of
// ga's reduction is stored: it reads the reduction's output and the
// other members' outputs only at that element, writes none of their
// tensors, and no member reads what it writes.
func epilogueLegal(ga []*ir.BoundStmt, e *ir.BoundStmt) bool {
	for k, p := range ga {
		if p.Stmt.Tensor == e.Stmt.Tensor || reads(p.Stmt.RHS, e.Stmt.Tensor) > 0 {
			return false
		}
		if !readsOnlyAtPoint(e.Stmt.RHS, p) || k > 0 && p.Offset != nil {
			return false
		}
	}
	return true
}

// epilogueAlignments lists renamings of e's axes to the spatial axes of
// ga's reduction, one per read in e of a member's output at plain axes
// that names each of e's axes once, with equal extents.
func epilogueAlignments(ga []*ir.BoundStmt, e *ir.BoundStmt) []map[string]string {
	ext := extents(e)
	var out []map[string]string
	for _, p := range ga {
		for _, a := range plainReads([]*ir.BoundStmt{e}) {
			if a.Tensor != p.Stmt.Tensor || len(a.Indices) != len(p.Spatial) || len(a.Indices) != len(ext) {
				continue
			}
			m := map[string]string{}
			for d, x := range a.Indices {
				name := x.(*ir.Index).Name
				if _, dup := m[name]; dup || ext[name] != p.Spatial[d].Extent {
					m = nil
					break
				}
				m[name] = p.Spatial[d].Name
			}
			if m != nil && !slices.ContainsFunc(out, func(o map[string]string) bool { return maps.Equal(o, m) }) {
				out = append(out, m)
			}
		}
	}
	return out
}
