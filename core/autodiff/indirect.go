package autodiff

import (
	"fmt"
	"slices"

	"github.com/neoflow/neoflow/core/ir"
)

// substituteIndirect removes the reduction variables that a gradient
// statement's guards equate with an index tensor read, or with a
// left-hand-side variable (lhsEquality), in a statement that has such a
// read. A sum
//
//	T[...] += where(z == Dst[e] && c, body, 0.0)
//
// over a reduction variable z adds, for each other point, the one term
// with z = Dst[e]: the scatter through Dst that the forward wrote (Y[Dst[e],
// f] += ...) becomes a gather, T[...] += where(c, body[z := Dst[e]], 0.0),
// and the sum no longer visits every z. The rewrite is exact when Dst[e]
// lies in [0, ext(z)): it is, where z plainly indexes a dimension of
// exactly that extent in body, because the read that takes z's place there
// makes Dst an index tensor checked against that dimension before each
// launch. Other statements are returned unchanged.
func substituteIndirect(g *gstmt, shapes map[string][]int64) {
	s := g.s
	if s.Reduce != ir.Sum {
		return
	}
	conds, body := guardsOf(s.RHS)
	lhs := map[string]bool{}
	for _, x := range s.Indices {
		lhs[x.Name] = true
	}
	indirect := false
	ir.Walk(s.RHS, func(e ir.Expr) bool {
		indirect = indirect || ir.IsIndirect(e)
		return !indirect
	})
	if !indirect {
		return
	}
	changed := false
	for i := 0; i < len(conds); i++ {
		z, t, ok := indirectEquality(conds[i], lhs)
		if ok && !indexesWhole(body, z, g.ext[z], shapes) {
			continue
		}
		if !ok {
			// z == w with w a left-hand-side variable no wider than z:
			// w becomes a free axis of the scatter (core/loops), looped
			// in parallel lanes instead of matched point by point.
			if z, t, ok = lhsEquality(conds[i], lhs, g.ext); !ok {
				continue
			}
		}
		sub := map[string]ir.Expr{z: t}
		g.note += fmt.Sprintf("; %s summed out where %s == %s", z, z, ir.ExprString(t))
		body = ir.SubstIndex(body, sub)
		conds = slices.Delete(conds, i, i+1)
		for j := range conds {
			conds[j] = ir.SubstIndex(conds[j], sub)
		}
		i = -1 // the substitution may have changed the other conjuncts
		changed = true
	}
	if !changed {
		return
	}
	if len(conds) > 0 {
		body = where(ir.AndAll(conds), body, zero())
	}
	g.s = &ir.Stmt{Pos: s.Pos, Tensor: s.Tensor, Indices: s.Indices, Reduce: s.Reduce, RHS: body}
	if !hasReduction(g.s) {
		g.s.Reduce = ir.Assign
	}
}

// guardsOf peels the guards off e, where(c1, where(c2, body, 0.0), 0.0):
// the conjuncts of every condition, outermost first, and the body.
func guardsOf(e ir.Expr) ([]ir.Expr, ir.Expr) {
	var conds []ir.Expr
	for {
		w, ok := e.(*ir.Where)
		if !ok || !ir.IsZero(w.Else) {
			return conds, e
		}
		conds = append(conds, ir.Conjuncts(w.Cond)...)
		e = w.Then
	}
}

// indirectEquality recognizes z == T or T == z with z a bare variable
// that is not on the left-hand side and T an index tensor read that does
// not mention z.
func indirectEquality(c ir.Expr, lhs map[string]bool) (string, ir.Expr, bool) {
	for _, p := range ir.EqOperands(c) {
		z, isIx := p[0].(*ir.Index)
		if isIx && !lhs[z.Name] && ir.IsIndirect(p[1]) && !slices.Contains(varsOf(p[1]), z.Name) {
			return z.Name, p[1], true
		}
	}
	return "", nil, false
}

// lhsEquality recognizes z == w or w == z with z a bare variable that is
// not on the left-hand side and w one that is, whose extent does not
// exceed z's: every value of w is a value of z, so summing over z picks
// the one term z = w.
func lhsEquality(c ir.Expr, lhs map[string]bool, ext map[string]int64) (string, ir.Expr, bool) {
	for _, p := range ir.EqOperands(c) {
		z, isZ := p[0].(*ir.Index)
		w, isW := p[1].(*ir.Index)
		if isZ && isW && !lhs[z.Name] && lhs[w.Name] && ext[w.Name] > 0 && ext[w.Name] <= ext[z.Name] {
			return z.Name, w, true
		}
	}
	return "", nil, false
}

// indexesWhole reports whether variable z, of extent n, is a whole index
// of some read in e along a dimension of extent n.
func indexesWhole(e ir.Expr, z string, n int64, shapes map[string][]int64) bool {
	found := false
	ir.Walk(e, func(x ir.Expr) bool {
		if a, ok := x.(*ir.Access); ok && !found {
			for d, ix := range a.Indices {
				if v, isIx := ix.(*ir.Index); isIx && v.Name == z && d < len(shapes[a.Tensor]) && shapes[a.Tensor][d] == n {
					found = true
				}
			}
		}
		return !found
	})
	return found
}

// hasReduction reports whether s has a variable on its right-hand side
// that its left-hand side does not bind.
func hasReduction(s *ir.Stmt) bool {
	lhs := map[string]bool{}
	for _, x := range s.Indices {
		lhs[x.Name] = true
	}
	return slices.ContainsFunc(varsOf(s.RHS), func(v string) bool { return !lhs[v] })
}
