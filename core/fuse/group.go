package fuse

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/loops"
)

// Group joins statements over the same axes into fused groups, each
// lowered as one loop nest (ir.BoundStmt.Joined, loops.GroupTiling):
//
//   - loop fusion: '=' statements over the same points (the parts Split
//     cut, a gradient's elementwise terms) run in one parallel region;
//   - parallel fusion: statements that read a common tensor and whose
//     axes agree (the two contractions of a weight's and an input's
//     gradient, d_W[g,k] += d_G[b,g] * X[b,k] and d_X[b,k] += d_G[b,g] *
//     W[g,k], both over b, g, k) run in one nest that reads the common
//     tensor once, parallel over the axes spatial in both.
//
// A statement joins a group when, with its axes renamed to the group's
// (matched through a common read, a read of the group's output, or the
// left-hand sides), the axes are the same, running it point by point
// with the group computes what running it after the group does (it reads
// a member's output only where that member just stored it, and only from
// an '=' member; no member reads what it writes; statements between the
// group and it neither feed it nor read it), and loops.DefaultGroupTiling
// schedules the group. An '=' statement over a reduction's spatial axes
// that reads the reduction's output where it is stored joins it as its
// epilogue instead (epilogue fusion, tryEpilogue): it runs in the
// reduction's nest after each element's reduction. The reward of a join is R = ΔT/Pd + L: the bytes
// of the common reads read once (or of the output read back from cache)
// and one loop nest saved; joins apply greedily, the best first. The
// joined statement moves to just after its group.
//
// Group weighs, for each group, the joins with its neighbours in program
// order (nearby) and with the nearest groups that read or write a tensor
// it touches, and keeps the joins it weighed until one of their groups
// changes (grouping.go): its work grows with the program, not with its
// square. A group holds at most MaxGroup statements.
func Group(spec *ir.Spec, opts Options, notes *Notes) *ir.Spec {
	g := newGrouping(spec, opts)
	for {
		c := g.best()
		if c == nil {
			break
		}
		notes.add("group: %s joins %s's nest (%s; %s): %s", tensorsOf(c.j.members[len(c.a.members):]), c.a.members[0].Stmt.Tensor,
			ir.VarsString(c.j.axes), c.j.why, c.j.reward)
		g.apply(c)
	}
	for _, why := range slices.Compact(slices.Sorted(maps.Values(g.refused))) {
		notes.add("no group: %s", why)
	}
	var out []*ir.BoundStmt
	joined := false
	for _, gr := range g.groups {
		for k, st := range gr.members {
			st.Joined = k > 0
			joined = joined || k > 0
			out = append(out, st)
		}
	}
	if !joined {
		return spec
	}
	return spec.WithStmts(out)
}

// MaxGroup is the most statements one fused nest holds. Each join weighs
// the new members against every member (legality, alignment, the
// nest's schedule), and past a few dozen statements the one loop nest a
// further join saves is worth less than that (a 1,000-statement program
// built in 7 s with 32, 23 s with 64).
const MaxGroup = 32

// join is a candidate join of two groups: the first group's members then
// the second's, renamed; its reward and what it shares.
type join struct {
	members []*ir.BoundStmt
	axes    []ir.Var
	reward  Reward
	why     string
}

// tryJoin is the join of gb into ga, which may run right after it
// (movable), or nil and, for a pair that shares data but cannot join, the
// reason.
func (g *grouping) tryJoin(a, b *group) (*join, string) {
	ga, gb := a.members, b.members
	if len(ga)+len(gb) > MaxGroup {
		return nil, ""
	}
	for _, m := range alignments(ga, gb, g.plainReads(a), g.plainReads(b)) {
		renamed := make([]*ir.BoundStmt, len(gb))
		for k, st := range gb {
			renamed[k] = renameVars(st, m)
		}
		members := append(slices.Clone(ga), renamed...)
		dom, ok := loops.GroupDomain(members)
		if !ok {
			continue
		}
		bytes, why, ok := shared(g.decls, g.spec.DType, a, b.reads, renamed)
		if !ok {
			continue
		}
		if why == "" && !allAssign(members) {
			continue // contractions that share nothing gain nothing
		}
		if !legal(ga, renamed, g.readSets(a), g.readSets(b)) {
			return nil, fmt.Sprintf("%s stays out of %s's nest: it reads or writes what the nest computes in a way a point-by-point loop cannot", tensorsOf(gb), ga[0].Stmt.Tensor)
		}
		t := loops.DefaultGroupTiling(g.spec, members)
		if t == nil {
			return nil, fmt.Sprintf("%s stays out of %s's nest: no axis spatial in every member runs in lanes", tensorsOf(gb), ga[0].Stmt.Tensor)
		}
		if why == "" {
			why = "same points"
		}
		joined := mergeAxes(g.readAxes(a), renameAxes(g.readAxes(b), m))
		mc := g.opts.Machine.orDefault()
		dt := g.traffic(a, mc) + g.traffic(b, mc) - trafficOf(g.decls, g.spec.DType, joined, loops.GroupLoopAxes(members, t), mc)
		dc := accumulatorOps(ga, mc.AccumulatorOps) + accumulatorOps(gb, mc.AccumulatorOps) - accumulatorOps(members, mc.AccumulatorOps)
		r := mc.reward(max(dt, bytes), dc, 1)
		if r.R <= 0 {
			return nil, fmt.Sprintf("%s stays out of %s's nest (%s): %s", tensorsOf(gb), ga[0].Stmt.Tensor, why, r)
		}
		return &join{members: members, axes: dom.Vars(), reward: r, why: why}, ""
	}
	return nil, ""
}

// shared is what the members of a and gb (b's members renamed, which read
// readB) share:
// the bytes that running them in one nest saves (each tensor both read,
// once; each output of a that gb reads) and a description; ok is false
// when they share nothing and are not both all '=' statements.
func shared(decls map[string]*ir.TensorDecl, dt ir.DType, a *group, readB map[string]bool, gb []*ir.BoundStmt) (bytes int64, why string, ok bool) {
	var common, fed []string
	for _, t := range sortedKeys(readB) {
		switch {
		case a.reads[t]:
			common = append(common, t)
		case a.writes[t]:
			fed = append(fed, t)
		}
	}
	size := int64(dt.Size())
	for _, t := range append(slices.Clone(common), fed...) {
		if d := decls[t]; d != nil {
			bytes += d.Elems() * size
		}
	}
	var parts []string
	if len(common) > 0 {
		parts = append(parts, "both read "+strings.Join(common, ", "))
	}
	if len(fed) > 0 {
		parts = append(parts, "reads "+strings.Join(fed, ", ")+" where it is stored")
	}
	return bytes, strings.Join(parts, "; "), len(parts) > 0 || allAssign(a.members) && allAssign(gb)
}

// legal reports whether gb's members may run at each point of ga's loops
// right after ga's: a member of gb reads a tensor a member of ga writes
// only where an '=' member writes the whole tensor and at the point it
// stores; no member of ga reads what gb writes; members writing the same
// tensor write disjoint parts. The members of ga, joined legally
// already, are not weighed against each other again. readA and readB
// are the tensors each member of ga and gb reads.
func legal(ga, gb []*ir.BoundStmt, readA, readB []map[string]int) bool {
	all := append(slices.Clone(ga), gb...)
	rs := append(slices.Clone(readA), readB...)
	for j := len(ga); j < len(all); j++ {
		q := all[j]
		for i, p := range all[:j] {
			if p.Stmt.Tensor == q.Stmt.Tensor && !disjoint(p, q) {
				return false
			}
			if rs[i][q.Stmt.Tensor] > 0 {
				return false // reads what a later member writes
			}
			if rs[j][p.Stmt.Tensor] > 0 && !readsAtStore(q.Stmt.RHS, p) {
				return false
			}
		}
	}
	return true
}

// readsAtStore reports whether every read of p's tensor in e is at the
// element p stores at the same point: p is an '=' statement writing its
// whole tensor and the read's indices are p's spatial axes.
func readsAtStore(e ir.Expr, p *ir.BoundStmt) bool {
	return p.Stmt.Reduce == ir.Assign && p.Offset == nil && readsOnlyAtPoint(e, p)
}

// readsOnlyAtPoint reports whether every read of p's tensor in e is at
// p's own point: its indices are p's spatial axes.
func readsOnlyAtPoint(e ir.Expr, p *ir.BoundStmt) bool {
	ok := true
	ir.Walk(e, func(x ir.Expr) bool {
		if a, is := x.(*ir.Access); is && a.Tensor == p.Stmt.Tensor && !isIdentity(a, p) {
			ok = false
		}
		return true
	})
	return ok
}

// disjoint reports whether p and q write disjoint boxes of their tensor.
func disjoint(p, q *ir.BoundStmt) bool {
	if len(p.Spatial) != len(q.Spatial) {
		return false
	}
	for d := range p.Spatial {
		lo1, lo2 := p.OffsetAt(d), q.OffsetAt(d)
		if lo1+p.Spatial[d].Extent <= lo2 || lo2+q.Spatial[d].Extent <= lo1 {
			return true
		}
	}
	return false
}

func allAssign(sts []*ir.BoundStmt) bool {
	for _, st := range sts {
		if st.Stmt.Reduce != ir.Assign {
			return false
		}
	}
	return true
}

func readSet(sts []*ir.BoundStmt) map[string]bool {
	out := map[string]bool{}
	for _, st := range sts {
		ir.Walk(st.Stmt.RHS, func(e ir.Expr) bool {
			if a, ok := e.(*ir.Access); ok {
				out[a.Tensor] = true
			}
			return true
		})
	}
	return out
}

func tensorsOf(sts []*ir.BoundStmt) string {
	var names []string
	for _, st := range sts {
		if !slices.Contains(names, st.Stmt.Tensor) {
			names = append(names, st.Stmt.Tensor)
		}
	}
	return strings.Join(names, ", ")
}

func pairName(ga, gb []*ir.BoundStmt) string { return tensorsOf(ga) + "|" + tensorsOf(gb) }
