package loops

import (
	"fmt"
	"slices"
	"strings"

	"github.com/pkg/errors"

	"github.com/neoflow/neoflow/core/ir"
)

// GroupTiling lowers a fused group (ir.BoundStmt.Joined: a statement and
// the statements joined to it) as one loop nest over their common axes
// (Schedule.Group). The tile loops are those of the tiled lowering
// (Tiling) over the group's axes: an axis is spatial for the group when
// it is spatial in every member, so that the parallel loops and the lane
// loop, which must be spatial, write disjoint elements of every member's
// output. At each point of the loops the members run in statement order:
// an '=' member stores its element, a reduction member combines its term
// into its accumulator (or its output). A later member may read an
// earlier '=' member's output at the point just stored (core/fuse's
// fuse-group checks which groups are legal).
type GroupTiling struct {
	// Splits gives tile factors; they must divide the axes' extents
	// (groups have no lane remainder).
	Splits []Split
	// Loops lists every tile loop, outermost first.
	Loops []string
	// Parallel is how many outermost loops, all spatial for the group,
	// form one collapsed parallel loop.
	Parallel int
	// Vector makes the innermost loop, spatial for the group, a lane
	// loop.
	Vector bool
	// AccAt gives each member (in statement order) the position in Loops
	// of its local accumulator, as Tiling.AccAt does for one statement:
	// it holds one element per iteration of the member's spatial loops
	// at AccAt and later, filled with the identity before the loop at
	// AccAt and stored into the output after it. Reduction loops before
	// AccAt, or AccAt == len(Loops), make the member combine into its
	// output, filled with the identity first. Ignored for '=' members;
	// AccAt must not be inside the parallel loops.
	AccAt []int
}

// String is the group tiling as Dump prints it.
func (g *GroupTiling) String() string {
	var b strings.Builder
	writeTiles(&b, "group", g.Splits, g.Loops, g.Parallel, g.AccAt, g.Vector)
	return b.String()
}

// GroupMembers is the fused group statement i of spec leads: i and the
// statements joined to it (ir.BoundStmt.Joined), in order.
func GroupMembers(spec *ir.Spec, i int) []int {
	out := []int{i}
	for j := i + 1; j < len(spec.Stmts) && spec.Stmts[j].Joined; j++ {
		out = append(out, j)
	}
	return out
}

// GroupDomain is the loop domain of a group's members: a statement whose
// spatial axes are those spatial in every member (in the first member's
// left-hand-side order) and whose reduction axes are the others (the
// first member's order, then the later members'). ok is false when the
// members do not all have the same axes (names and extents).
func GroupDomain(members []*ir.BoundStmt) (dom *ir.BoundStmt, ok bool) {
	ext := map[string]int64{}
	axes := func(st *ir.BoundStmt) []ir.Var { return st.Vars() }
	for _, ax := range axes(members[0]) {
		ext[ax.Name] = ax.Extent
	}
	for _, m := range members[1:] {
		all := axes(m)
		if len(all) != len(ext) {
			return nil, false
		}
		for _, ax := range all {
			if e, ok := ext[ax.Name]; !ok || e != ax.Extent {
				return nil, false
			}
		}
	}
	spatialIn := func(st *ir.BoundStmt, name string) bool {
		return slices.ContainsFunc(st.Spatial, func(v ir.Var) bool { return v.Name == name })
	}
	dom = &ir.BoundStmt{Stmt: &ir.Stmt{Tensor: members[0].Stmt.Tensor, Reduce: ir.Assign}}
	seen := map[string]bool{}
	for _, m := range members {
		for _, ax := range axes(m) {
			if seen[ax.Name] {
				continue
			}
			seen[ax.Name] = true
			common := true
			for _, o := range members {
				common = common && spatialIn(o, ax.Name)
			}
			if common {
				dom.Spatial = append(dom.Spatial, ax)
			} else {
				dom.Reduction = append(dom.Reduction, ax)
			}
		}
	}
	return dom, true
}

// Check reports whether g lowers the fused group members (their
// statements, in order): the members share one domain, the loops name
// its axes once each, the tile factors divide the extents, and every
// accumulator position is in range and fits in MaxLocalElems.
func (g *GroupTiling) Check(members []*ir.BoundStmt) error {
	_, _, err := g.resolve(members)
	return err
}

// resolve checks g against the members and returns the group's domain
// and its loops in g.Loops order.
func (g *GroupTiling) resolve(members []*ir.BoundStmt) (*ir.BoundStmt, []tileLoop, error) {
	dom, ok := GroupDomain(members)
	if !ok {
		return nil, nil, errors.New("the members of a fused group do not have the same axes")
	}
	t := &Tiling{Splits: g.Splits, Loops: g.Loops, Parallel: g.Parallel, Vector: g.Vector}
	ord, err := t.resolve(dom)
	if err != nil {
		return nil, nil, err
	}
	if _, rem := remainderLoop(ord); rem {
		return nil, nil, errors.New("a fused group's tile factors must divide the extents")
	}
	if len(g.AccAt) != len(members) {
		return nil, nil, errors.Errorf("%d accumulator positions for %d members", len(g.AccAt), len(members))
	}
	for i, m := range members {
		if m.Stmt.Reduce == ir.Assign {
			continue
		}
		at := g.AccAt[i]
		if at < g.Parallel || at > len(ord) {
			return nil, nil, errors.Errorf("member %d: accumulator position %d out of range [%d, %d]", i, at, g.Parallel, len(ord))
		}
		if n := accLen(memberSpatial(m, ord[at:])); n > MaxLocalElems {
			return nil, nil, errors.Errorf("member %d: local accumulator of %d elements exceeds %d", i, n, MaxLocalElems)
		}
	}
	return dom, ord, nil
}

// memberSpatial is the loops of ls over axes spatial in member m (with
// extent above 1): the loops its accumulator spans.
func memberSpatial(m *ir.BoundStmt, ls []tileLoop) []tileLoop {
	var out []tileLoop
	for _, l := range ls {
		if l.extent > 1 && !isReduction(m, l.axis) {
			l.spatial = true
			out = append(out, l)
		}
	}
	return out
}

// groupLowerer builds the nest of one fused group.
type groupLowerer struct {
	spec    *ir.Spec
	members []*ir.BoundStmt
	g       *GroupTiling
	ord     []tileLoop
	tl      *tiler
	// acc names each reduction member's accumulator ("" when it
	// combines into its output), partial whether its output is filled
	// with the identity first.
	acc     []string
	partial []bool
	par     []*Loop
}

// lowerGroup builds nest, the fused group members (Nest.Members), under g.
func lowerGroup(spec *ir.Spec, nest *Nest, members []*ir.BoundStmt, g *GroupTiling) error {
	dom, ord, err := g.resolve(members)
	if err != nil {
		return err
	}
	env := tileEnv(dom, ord)
	gl := &groupLowerer{spec: spec, members: members, g: g, ord: ord,
		tl:  &tiler{st: dom, env: env, unroll: map[string]int{}, vector: g.Vector, last: ord[len(ord)-1].name},
		acc: make([]string, len(members)), partial: make([]bool, len(members))}
	for i, m := range members {
		if m.Stmt.Reduce == ir.Assign {
			continue
		}
		at := g.AccAt[i]
		if at < len(ord) {
			gl.acc[i] = fmt.Sprintf("%s%d", accName, i)
		}
		for _, l := range ord[:at] {
			gl.partial[i] = gl.partial[i] || (isReduction(m, l.axis) && l.extent > 1)
		}
		if gl.partial[i] || at == len(ord) {
			gl.partial[i] = true
			emitIdentityFill(spec, m, &nest.Body)
		}
	}
	gl.build(0, &nest.Body)
	collapseParallel(gl.par)
	return nil
}

// build appends the loops from position d of the group's order to *body:
// the accumulators declared at d, the loop at d with the rest inside it
// (the members' stores innermost), then the accumulators' stores.
func (gl *groupLowerer) build(d int, body *[]Node) {
	if d == len(gl.ord) {
		for i, m := range gl.members {
			rhs := Subst(m.Stmt.RHS, gl.tl.env)
			dst := outAccess(m, gl.tl.env)
			if gl.acc[i] != "" {
				dst = gl.accAccess(i)
			}
			*body = append(*body, &Store{Dst: dst, Op: m.Stmt.Reduce, Value: rhs})
		}
		return
	}
	mine := gl.accsAt(d)
	for _, i := range mine {
		n := accLen(memberSpatial(gl.members[i], gl.ord[d:]))
		*body = append(*body, &Local{Name: gl.acc[i], Len: n})
		c := gl.tl.nestOver(body, memberSpatial(gl.members[i], gl.ord[d:]))
		*c = append(*c, &Store{Dst: gl.accAccess(i), Op: ir.Assign, Value: &ir.FloatLit{Value: Identity(gl.members[i].Stmt.Reduce)}})
	}
	inner := body
	if lp := gl.tl.loop(body, gl.ord[d]); lp != nil {
		if d < gl.g.Parallel {
			gl.par = append(gl.par, lp)
		}
		inner = &lp.Body
	}
	gl.build(d+1, inner)
	for _, i := range mine {
		m := gl.members[i]
		c := gl.tl.nestOver(body, memberSpatial(m, gl.ord[d:]))
		op := ir.Assign
		if gl.partial[i] {
			op = m.Stmt.Reduce
		}
		*c = append(*c, &Store{Dst: outAccess(m, gl.tl.env), Op: op, Value: gl.accAccess(i)})
	}
}

// accsAt lists the members whose accumulator is declared at position d.
func (gl *groupLowerer) accsAt(d int) []int {
	var out []int
	for i, name := range gl.acc {
		if name != "" && gl.g.AccAt[i] == d {
			out = append(out, i)
		}
	}
	return out
}

// accAccess is member i's accumulator element at the current point.
func (gl *groupLowerer) accAccess(i int) *ir.Access {
	sp := memberSpatial(gl.members[i], gl.ord[gl.g.AccAt[i]:])
	a := &ir.Access{Tensor: gl.acc[i]}
	if accLen(sp) > 1 {
		a.Indices = []ir.Expr{loopIndex(sp, 1)}
	}
	return a
}

// collapseParallel makes the perfectly nested loops par one collapsed
// parallel loop. Collapsed loops carry no annotations of their own: the
// first takes the lane mark (omp parallel for simd) and unrolling goes.
func collapseParallel(par []*Loop) {
	if len(par) == 0 {
		return
	}
	vec := false
	for _, lp := range par {
		vec = vec || lp.Vector
		lp.Vector, lp.Unroll = false, 0
	}
	par[0].Vector = vec
	par[0].Parallel, par[0].Collapse = true, len(par)
}
