package fuse

import (
	"slices"

	"github.com/neoflow/neoflow/core/bounds"
	"github.com/neoflow/neoflow/core/ir"
)

// maxParts caps the parts one statement is split into.
const maxParts = 8

// Split partitions statements by their where conditions (index-set
// splitting). A comparison that is affine in one spatial axis v of its
// statement, and mentions no other variable, changes value at one point
// of v; cutting v's range at those points leaves parts on which every
// such comparison is decided, and Fold reduces each part's right-hand
// side to the branches it takes. Each part writes its box of the tensor
// (ir.BoundStmt.Offset): d_W[g, j] += where(j >= 256, X-term, H-term)
// becomes one contraction over j < 256 and one over j in [256, 512). A
// part whose sum is of 0.0 becomes a fill of 0.0. A statement is split
// only when the reward is positive: the arithmetic of the branches no
// longer evaluated (points times cost) against the loop nests added;
// temporaries in Options.Keep are not
// split, and neither are statements with equality conditions (scatter
// forms, which the lowering matches whole).
func Split(spec *ir.Spec, opts Options, notes *Notes) *ir.Spec {
	var stmts []*ir.BoundStmt
	changed := false
	for _, st := range spec.Stmts {
		parts := []*ir.BoundStmt{st}
		var r Reward
		if !opts.Keep[st.Stmt.Tensor] {
			parts, r = splitStmt(st, opts)
		}
		if len(parts) > 1 {
			notes.add("split: %s into %d parts: %s: %s", st.Stmt.Tensor, len(parts), describeParts(parts), r)
			changed = true
		}
		stmts = append(stmts, parts...)
	}
	if !changed {
		return spec
	}
	return spec.WithStmts(stmts)
}

// splitStmt splits st on its first axis with cuts, then each part on the
// next, while the parts stay within maxParts, if the reward is positive
// (or always), and returns the reward.
func splitStmt(st *ir.BoundStmt, opts Options) ([]*ir.BoundStmt, Reward) {
	if hasEquality(st.Stmt.RHS) {
		return []*ir.BoundStmt{st}, Reward{}
	}
	parts := []*ir.BoundStmt{st}
	for d := range st.Spatial {
		var next []*ir.BoundStmt
		for _, p := range parts {
			next = append(next, splitAxis(p, d)...)
		}
		if len(next) > maxParts {
			break
		}
		parts = next
	}
	r := opts.Machine.reward(0, work(opts.Machine, []*ir.BoundStmt{st})-work(opts.Machine, parts), 1-int64(len(parts)))
	if len(parts) == 1 || !opts.SplitAlways && r.R <= 0 {
		return []*ir.BoundStmt{st}, r
	}
	return parts, r
}

// work is the arithmetic of statements: points times cost.
func work(m Machine, stmts []*ir.BoundStmt) int64 {
	var n int64
	for _, st := range stmts {
		n += st.Points() * m.Cost(st.Stmt.RHS)
	}
	return n
}

// splitAxis cuts st's spatial axis d where its conditions change value.
func splitAxis(st *ir.BoundStmt, d int) []*ir.BoundStmt {
	v := st.Spatial[d]
	cuts := axisCuts(st.Stmt.RHS, v)
	if len(cuts) == 0 {
		return []*ir.BoundStmt{st}
	}
	bounds := append(append([]int64{0}, cuts...), v.Extent)
	var parts []*ir.BoundStmt
	for k := 0; k+1 < len(bounds); k++ {
		parts = append(parts, part(st, d, bounds[k], bounds[k+1]))
	}
	return parts
}

// part is st restricted to lo <= v < hi on spatial axis d: v counts from
// 0 again, the right-hand side reads v + lo and the part writes at offset
// lo (on top of st's own).
func part(st *ir.BoundStmt, d int, lo, hi int64) *ir.BoundStmt {
	v := st.Spatial[d]
	out := *st
	out.Spatial = slices.Clone(st.Spatial)
	out.Spatial[d].Extent = hi - lo
	out.Offset = make([]int64, len(st.Spatial))
	for k := range out.Offset {
		out.Offset[k] = st.OffsetAt(k)
	}
	out.Offset[d] += lo
	rhs := st.Stmt.RHS
	if lo != 0 {
		rhs = ir.SubstIndex(rhs, map[string]ir.Expr{v.Name: &ir.Binary{Op: ir.Add, X: &ir.Index{Name: v.Name}, Y: &ir.IntLit{Value: lo}}})
	}
	rhs = foldExpr(rhs, bounds.ForExtents(extents(&out)))
	s := *st.Stmt
	s.RHS = rhs
	if ir.IsZero(rhs) && s.Reduce == ir.Sum {
		s.Reduce, out.Reduction = ir.Assign, nil
	}
	out.Stmt = &s
	return &out
}

// axisCuts lists, in order, the points of (0, v.Extent) where a where
// condition of e that is affine in v alone changes value.
func axisCuts(e ir.Expr, v ir.Var) []int64 {
	var cuts []int64
	ir.Walk(e, func(n ir.Expr) bool {
		w, ok := n.(*ir.Where)
		if !ok {
			return true
		}
		for _, c := range ir.Conjuncts(w.Cond) {
			if at, ok := cutOf(c, v.Name); ok && at > 0 && at < v.Extent && !slices.Contains(cuts, at) {
				cuts = append(cuts, at)
			}
		}
		return true
	})
	slices.Sort(cuts)
	return cuts
}

// cutOf is the point p where the comparison c, affine in v alone, changes
// value: it holds on one side of p (v < p or v >= p) and not the other.
func cutOf(c ir.Expr, v string) (int64, bool) {
	b, ok := c.(*ir.Binary)
	if !ok {
		return 0, false
	}
	ax, cx, okx := affine(b.X, v)
	ay, cy, oky := affine(b.Y, v)
	if !okx || !oky || ax == ay {
		return 0, false
	}
	// X - Y = a*v + k, compared with 0; as a*v + k >= 0 (or its negation).
	a, k := ax-ay, cx-cy
	switch b.Op {
	case ir.Ge:
	case ir.Gt:
		k-- // a*v + k > 0  <=>  a*v + k - 1 >= 0
	case ir.Le:
		a, k = -a, -k // a*v + k <= 0  <=>  -a*v - k >= 0
	case ir.Lt:
		a, k = -a, -k-1 // a*v + k < 0  <=>  -a*v - k - 1 >= 0
	default:
		return 0, false
	}
	// a*v + k >= 0: for a > 0 it holds from ceil(-k/a) on; for a < 0 up
	// to floor(k/-a), so it changes at floor(k/-a) + 1.
	if a > 0 {
		return -ir.FloorDiv(k, a), true // ceil(-k/a)
	}
	return ir.FloorDiv(k, -a) + 1, true
}

// affine is e as a*v + k with integer a and k, when its linear form
// (bounds.Linearize) has no atom but v.
func affine(e ir.Expr, v string) (a, k int64, ok bool) {
	l := bounds.Linearize(e)
	for _, t := range l.Terms() {
		x, isIndex := t.Atom.(*ir.Index)
		if !isIndex || x.Name != v {
			return 0, 0, false
		}
		a = t.Coef
	}
	return a, l.Const(), true
}

// hasEquality reports whether a where condition of e compares with == or
// != (the scatter forms of gradients).
func hasEquality(e ir.Expr) bool {
	found := false
	ir.Walk(e, func(n ir.Expr) bool {
		if w, ok := n.(*ir.Where); ok {
			ir.Walk(w.Cond, func(c ir.Expr) bool {
				if b, ok := c.(*ir.Binary); ok && (b.Op == ir.Eq || b.Op == ir.Ne) {
					found = true
				}
				return !found
			})
		}
		return !found
	})
	return found
}

func describeParts(parts []*ir.BoundStmt) string {
	s := ""
	for i, p := range parts {
		if i > 0 {
			s += "; "
		}
		s += ir.ShapeString(p.Offset) + " " + ir.VarsString(p.Spatial)
	}
	return s
}
