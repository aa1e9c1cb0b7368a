package autotune

import (
	"slices"

	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/loops"
)

// groupSpace is the part of a genome that schedules a fused group (a
// statement and those joined to it, loops.GroupMembers) as one nest: a
// loops.GroupTiling. Its genes follow the lead statement's and are those
// of a statement over the group's domain (loops.GroupDomain: the axes
// spatial in every member are its spatial axes, the others its reduction
// axes) with the same meaning, less the ones a group tiling has no field
// for. The lead's mode gene chooses: 0 the default schedule (the group's
// default tiling), 1 the lead tiled alone (each member then by its own
// genes), 2 the group tiled by these genes.
type groupSpace struct {
	members []*ir.BoundStmt
	dom     stmtSpace
}

// newGroupSpace is the group space of the fused group statement i of
// spec leads, whose default schedule is def, its genes starting at off;
// nil when i leads no group or the group has no default tiling (its
// members do not share one nest).
func newGroupSpace(spec *ir.Spec, i int, def loops.Schedule, off int) *groupSpace {
	idx := loops.GroupMembers(spec, i)
	if len(idx) < 2 || def.Group == nil {
		return nil
	}
	gs := &groupSpace{}
	for _, j := range idx {
		gs.members = append(gs.members, spec.Stmts[j])
	}
	dom, ok := loops.GroupDomain(gs.members)
	if !ok || len(dom.Spatial) == 0 {
		return nil
	}
	gs.dom = stmtSpace{index: i, st: dom, off: off, red: len(dom.Reduction) > 0}
	return gs
}

// decode is the group tiling of g's group genes, or def (the default
// schedule) when that tiling does not lower the group.
func (gs *groupSpace) decode(def loops.Schedule, g []int) loops.Schedule {
	t, _ := gs.dom.tiling(g)
	gt := &loops.GroupTiling{Splits: t.Splits, Loops: t.Loops, Parallel: t.Parallel, Vector: t.Vector}
	if len(t.Loops) > 0 && isRedLoop(gs.dom.st, t.Loops[len(t.Loops)-1]) {
		gt.Vector = false // the lanes must be spatial in every member
	}
	ext := loops.TileExtents(gs.dom.st, t.Splits)
	gt.AccAt = make([]int, len(gs.members))
	for i, m := range gs.members {
		at := len(t.Loops)
		if m.Stmt.Reduce != ir.Assign && gs.dom.red {
			at = max(t.AccAt, t.Parallel)
			for at < len(t.Loops) && memberAccElems(m, t.Loops[at:], ext) > loops.MaxLocalElems {
				at++
			}
		}
		gt.AccAt[i] = at
	}
	if gt.Check(gs.members) != nil {
		return def
	}
	return loops.Schedule{Group: gt}
}

// memberAccElems is the size of member m's accumulator over the loops
// ls: one element per iteration of the loops over its spatial axes.
func memberAccElems(m *ir.BoundStmt, ls []string, ext map[string]int64) int64 {
	n := int64(1)
	for _, l := range ls {
		if !isRedLoop(m, l) {
			n *= max(ext[l], 1)
		}
	}
	return n
}

// groupSeed writes into g, for each fused group the space tiles, the
// group mode with genes like the group's default tiling: the default
// tiling's lane axis innermost in chunks of vecs vectors, the other
// group-spatial axes outside it in parallel, reductions whole or in tiles
// of red, with the accumulators after the outer spatial tiles. It reports
// whether any group was written.
func (sp *Space) groupSeed(g []int, vecs, red int64, template int) bool {
	v := int64(loops.VectorBytes / max(sp.spec.DType.Size(), 1))
	wrote := false
	for _, ss := range sp.stmts {
		gs := ss.grp
		if gs == nil {
			continue
		}
		dom := gs.dom.st
		def := loops.DefaultSchedule(sp.spec, ss.index).Group
		lane := len(dom.Spatial) - 1
		last := def.Loops[len(def.Loops)-1]
		for i, ax := range dom.Spatial {
			if ax.Name == baseAxis(last) {
				lane = i
			}
		}
		n, m := len(dom.Spatial), len(dom.Reduction)
		genes := g[gs.dom.off+numFixedGenes:]
		genes[lane] = closest(gs.dom.splits[lane], []int64{1, vecs * v})
		for r := range m {
			genes[n+r] = closest(gs.dom.splits[n+r], []int64{red})
		}
		var order []int
		for i := range n {
			if i != lane {
				order = append(order, i)
			}
		}
		copy(genes[n+m:], lehmerCode(append(order, lane)))
		f := g[gs.dom.off:]
		f[geneTemplate] = min(template, len(templates)-1)
		if !gs.dom.red {
			f[geneTemplate] = 0
		}
		f[geneAcc] = 0
		f[geneParallel] = n
		f[geneVector] = 1
		g[ss.off+geneMode] = 2
		wrote = true
	}
	return wrote
}

// groupOf lists, per tuning unit, the statements it schedules: a fused
// group's members together (the tuner composes and reverts a group's
// genes as a whole, and its nest's time is the lead's), each other
// statement alone.
func groupOf(spec *ir.Spec) [][]int {
	var out [][]int
	for i := 0; i < len(spec.Stmts); {
		idx := loops.GroupMembers(spec, i)
		out = append(out, slices.Clone(idx))
		i += len(idx)
	}
	return out
}
