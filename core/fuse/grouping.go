package fuse

import (
	"container/heap"
	"fmt"
	"slices"
	"sort"

	"github.com/neoflow/neoflow/core/ir"
)

// Nearby is how many groups on each side of a group, in program order,
// Group weighs joining it with, and how many of the nearest groups on
// each side that read or write a tensor it touches, or run over axes of
// the same extents; of all these, the MaxPartners nearest are weighed. A
// program of at most Nearby+1 statements has every pair weighed.
const Nearby = 8

// MaxPartners bounds the groups one group is weighed against when it is
// made: a group that touches many tensors would otherwise be weighed
// against hundreds at each join.
const MaxPartners = 2 * Nearby

// grouping is Group's state: the groups in program order, the joins
// weighed so far, best first, and those that wait until the groups
// between theirs move away (movable).
type grouping struct {
	spec  *ir.Spec
	opts  Options
	decls map[string]*ir.TensorDecl
	// groups is in program order, which is the order of their anchors.
	groups []*group
	// touch lists, per tensor, the groups that read or write it, and per
	// domain (domainKey), the groups over it, in order.
	touch   map[string][]*group
	weighed map[[2]*group]bool
	queue   candidates
	blocked []*candidate
	refused map[string]string
}

// group is statements that run in one nest.
type group struct {
	members []*ir.BoundStmt
	// anchor is the place of the group's first statement in the program:
	// joins keep the groups' order, so anchors order them.
	anchor        int
	reads, writes map[string]bool
	traffic       int64
	hasTraffic    bool
	plain         []*ir.Access               // plainReads of members, once known
	memberReads   []map[string]int           // readCounts of each member, once known
	axes          map[string]map[string]bool // readAxes of members, once known
}

// candidate is a join weighed for groups a and b (a first), or the
// reason they cannot join.
type candidate struct {
	a, b *group
	j    *join
	why  string
}

func newGrouping(spec *ir.Spec, opts Options) *grouping {
	g := &grouping{spec: spec, opts: opts, decls: declsOf(spec), touch: map[string][]*group{},
		weighed: map[[2]*group]bool{}, refused: map[string]string{}}
	for i, st := range spec.Stmts {
		c := *st
		c.Joined = false
		gr := &group{members: []*ir.BoundStmt{&c}, anchor: i, reads: readSet([]*ir.BoundStmt{&c}), writes: map[string]bool{c.Stmt.Tensor: true}}
		g.groups = append(g.groups, gr)
		g.enter(gr)
	}
	for _, gr := range slices.Clone(g.groups) {
		g.consider(gr)
	}
	return g
}

// best takes the best join whose groups are still there and may run one
// after the other; nil when none is left.
func (g *grouping) best() *candidate {
	for g.queue.Len() > 0 {
		c := heap.Pop(&g.queue).(*candidate)
		switch {
		case g.pos(c.a) < 0 || g.pos(c.b) < 0:
		case !g.movable(c.a, c.b):
			g.blocked = append(g.blocked, c)
		default:
			return c
		}
	}
	return nil
}

// apply replaces c's groups by their join, at the first's place, and
// weighs the new group's joins and those that the move unblocked.
func (g *grouping) apply(c *candidate) {
	n := &group{members: c.j.members, anchor: c.a.anchor, reads: map[string]bool{}, writes: map[string]bool{}}
	for _, src := range []*group{c.a, c.b} {
		for t := range src.reads {
			n.reads[t] = true
		}
		for t := range src.writes {
			n.writes[t] = true
		}
		g.leave(src)
	}
	if c.a.memberReads != nil && c.b.memberReads != nil {
		n.memberReads = append(slices.Clone(c.a.memberReads), c.b.memberReads...) // renamed axes, same tensors
	}
	from := c.b.anchor
	g.groups[g.pos(c.a)] = n
	g.groups = slices.Delete(g.groups, g.pos(c.b), g.pos(c.b)+1)
	g.enter(n)
	g.consider(n)
	// A pair on both sides of b's old place may now be movable.
	blocked := g.blocked[:0]
	for _, w := range g.blocked {
		switch {
		case g.pos(w.a) < 0 || g.pos(w.b) < 0:
		case w.a.anchor < from && from < w.b.anchor && w.a.anchor > n.anchor && g.movable(w.a, w.b):
			g.admit(w)
		default:
			blocked = append(blocked, w)
		}
	}
	g.blocked = blocked
}

// consider weighs joining x with the groups near it and with the nearest
// groups that touch the tensors it touches.
func (g *grouping) consider(x *group) {
	i := g.pos(x)
	var partners []*group
	partners = append(partners, g.groups[max(0, i-Nearby):i]...)
	partners = append(partners, g.groups[i+1:min(len(g.groups), i+1+Nearby)]...)
	for _, t := range keys(x) {
		list := g.touch[t]
		k := sort.Search(len(list), func(k int) bool { return list[k].anchor >= x.anchor })
		partners = append(partners, list[max(0, k-Nearby):k]...)
		if k < len(list) && list[k] == x {
			k++
		}
		partners = append(partners, list[k:min(len(list), k+Nearby)]...)
	}
	partners = nearest(partners, x)
	for _, y := range partners {
		a, b := x, y
		if b.anchor < a.anchor {
			a, b = b, a
		}
		if g.weighed[[2]*group{a, b}] {
			continue
		}
		g.weighed[[2]*group{a, b}] = true
		j, why := g.tryJoin(a, b)
		if j == nil && why == "" {
			j, why = g.tryEpilogue(a, b)
		}
		if j == nil && why == "" {
			continue
		}
		c := &candidate{a: a, b: b, j: j, why: why}
		if g.movable(a, b) {
			g.admit(c)
		} else {
			g.blocked = append(g.blocked, c)
		}
	}
}

// nearest is partners without x and repeats, the MaxPartners nearest to x
// in program order.
func nearest(partners []*group, x *group) []*group {
	seen := map[*group]bool{x: true}
	var out []*group
	for _, y := range partners {
		if !seen[y] {
			seen[y] = true
			out = append(out, y)
		}
	}
	dist := func(y *group) int { return max(y.anchor-x.anchor, x.anchor-y.anchor) }
	slices.SortStableFunc(out, func(a, b *group) int { return dist(a) - dist(b) })
	return out[:min(len(out), MaxPartners)]
}

// admit queues a join, or notes why the pair cannot join.
func (g *grouping) admit(c *candidate) {
	if c.j != nil {
		heap.Push(&g.queue, c)
		return
	}
	g.refused[pairName(c.a.members, c.b.members)] = c.why
}

// movable reports whether b may run right after a: no group between them
// writes what b reads or writes, or reads what b writes.
func (g *grouping) movable(a, b *group) bool {
	for _, mid := range g.groups[g.pos(a)+1 : g.pos(b)] {
		if meets(mid.writes, b.writes) || meets(mid.writes, b.reads) || meets(mid.reads, b.writes) {
			return false
		}
	}
	return true
}

// pos is x's place among the groups, or -1 when it was joined away.
func (g *grouping) pos(x *group) int {
	i := sort.Search(len(g.groups), func(i int) bool { return g.groups[i].anchor >= x.anchor })
	if i < len(g.groups) && g.groups[i] == x {
		return i
	}
	return -1
}

// enter adds x to the lists of the tensors it touches; leave takes it out.
func (g *grouping) enter(x *group) {
	for _, t := range keys(x) {
		list := g.touch[t]
		k := sort.Search(len(list), func(k int) bool { return list[k].anchor >= x.anchor })
		g.touch[t] = slices.Insert(list, k, x)
	}
}

func (g *grouping) leave(x *group) {
	for _, t := range keys(x) {
		g.touch[t] = slices.DeleteFunc(g.touch[t], func(y *group) bool { return y == x })
	}
}

// traffic is the bytes x's nest reads under its default schedule.
func (g *grouping) traffic(x *group, m Machine) int64 {
	if !x.hasTraffic {
		x.traffic, x.hasTraffic = trafficOf(g.decls, g.spec.DType, g.readAxes(x), nestAxes(g.spec, x.members), m), true
	}
	return x.traffic
}

// readAxes is readAxes(x.members), computed once.
func (g *grouping) readAxes(x *group) map[string]map[string]bool {
	if x.axes == nil {
		x.axes = readAxes(x.members)
	}
	return x.axes
}

// keys lists the entries of touch that x is in: the tensors it reads or
// writes, and its domain.
func keys(x *group) []string {
	return append(sortedKeys(union(x.reads, x.writes)), domainKey(x.members[0]))
}

// domainKey names the extents of st's axes, in order: statements that may
// run at the same points (GroupDomain) have the same key. It cannot be a
// tensor's name.
func domainKey(st *ir.BoundStmt) string {
	ext := extentsOf(st.Vars())
	slices.Sort(ext)
	return fmt.Sprint("(domain)", ext)
}

// readSets is readCounts of each of x's members, computed once.
func (g *grouping) readSets(x *group) []map[string]int {
	if x.memberReads == nil {
		for _, st := range x.members {
			x.memberReads = append(x.memberReads, readCounts(st.Stmt.RHS))
		}
	}
	return x.memberReads
}

// plainReads is plainReads(x.members), computed once.
func (g *grouping) plainReads(x *group) []*ir.Access {
	if x.plain == nil {
		x.plain = plainReads(x.members)
		if x.plain == nil {
			x.plain = []*ir.Access{}
		}
	}
	return x.plain
}

func union(a, b map[string]bool) map[string]bool {
	out := make(map[string]bool, len(a)+len(b))
	for t := range a {
		out[t] = true
	}
	for t := range b {
		out[t] = true
	}
	return out
}

// meets reports whether two sets share an element.
func meets(a, b map[string]bool) bool {
	if len(b) < len(a) {
		a, b = b, a
	}
	for t := range a {
		if b[t] {
			return true
		}
	}
	return false
}

// candidates is a heap of joins: the highest reward first, then the
// earliest pair in program order (the first group, then the second).
type candidates []*candidate

func (q candidates) Len() int { return len(q) }
func (q candidates) Less(i, j int) bool {
	a, b := q[i], q[j]
	if a.j.reward.R != b.j.reward.R {
		return a.j.reward.R > b.j.reward.R
	}
	if a.a.anchor != b.a.anchor {
		return a.a.anchor < b.a.anchor
	}
	return a.b.anchor < b.b.anchor
}
func (q candidates) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *candidates) Push(x any)   { *q = append(*q, x.(*candidate)) }
func (q *candidates) Pop() any {
	old := *q
	c := old[len(old)-1]
	*q = old[:len(old)-1]
	return c
}
