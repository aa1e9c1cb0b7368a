package fuse

import (
	"github.com/neoflow/neoflow/core/bounds"
	"github.com/neoflow/neoflow/core/ir"
)

// Fold simplifies every statement's right-hand side over the ranges of
// its axes: a where whose condition the ranges decide becomes its branch
// (where(0 > 1, Bias[0], d) is d; autodiff writes such never-taken reads
// so that a gradient op reads all its inputs), conjuncts that always hold
// are dropped, a where with equal branches is the branch, two wheres on
// the same condition added are one where of the added branches, and
// the result is simplified by ir.Simplify's rules (exact: a branch 0.0
// folded into a sum, 0.0 + x, stays, as -0.0 + 0.0 is +0.0).
func Fold(spec *ir.Spec, _ Options, notes *Notes) *ir.Spec {
	changed := false
	stmts := make([]*ir.BoundStmt, len(spec.Stmts))
	for i, st := range spec.Stmts {
		rhs := foldExpr(st.Stmt.RHS, bounds.ForExtents(extents(st)))
		stmts[i] = st
		if rhs != st.Stmt.RHS {
			stmts[i] = withRHS(st, rhs)
			notes.add("fold: %s: %s -> %s", st.Stmt.Tensor, clip(ir.ExprString(st.Stmt.RHS)), clip(ir.ExprString(rhs)))
			changed = true
		}
	}
	if !changed {
		return spec
	}
	return spec.WithStmts(stmts)
}

// withRHS is st with another right-hand side.
func withRHS(st *ir.BoundStmt, rhs ir.Expr) *ir.BoundStmt {
	s := *st.Stmt
	s.RHS = rhs
	out := *st
	out.Stmt = &s
	return &out
}

// foldExpr is Fold's rewrite of one expression in scope s.
func foldExpr(e ir.Expr, s *bounds.Scope) ir.Expr {
	k := ir.KindMemo{}
	return ir.Rewrite(e, func(n ir.Expr) ir.Expr {
		if x, ok := n.(*ir.Where); ok {
			return foldWhere(x, s)
		}
		if r := ir.SimplifyNode(n, k); r != n {
			return r
		}
		if x, ok := n.(*ir.Binary); ok {
			if w := sameCondSum(x); w != nil {
				return foldExpr(w, s)
			}
		}
		return nil
	})
}

// sameCondSum is where(c, a + b, e + f) for where(c, a, e) + where(c, b, f)
// (the same condition: one branch of each is taken, the same one), so
// that the branches are evaluated and read once; nil otherwise.
func sameCondSum(x *ir.Binary) ir.Expr {
	if x.Op != ir.Add {
		return nil
	}
	a, ok1 := x.X.(*ir.Where)
	b, ok2 := x.Y.(*ir.Where)
	if !ok1 || !ok2 || !ir.Equal(a.Cond, b.Cond) {
		return nil
	}
	return &ir.Where{Pos: a.Pos, Cond: a.Cond,
		Then: &ir.Binary{Op: ir.Add, X: a.Then, Y: b.Then},
		Else: &ir.Binary{Op: ir.Add, X: a.Else, Y: b.Else}}
}

func foldWhere(w *ir.Where, s *bounds.Scope) ir.Expr {
	if ir.Equal(w.Then, w.Else) {
		return w.Then
	}
	conj := ir.Conjuncts(w.Cond)
	var keep []ir.Expr
	for _, c := range conj {
		switch s.Decide(c) {
		case 1:
			continue
		case -1:
			return w.Else
		}
		keep = append(keep, c)
	}
	switch len(keep) {
	case 0:
		return w.Then
	case len(conj):
		return nil
	}
	out := *w
	out.Cond = ir.AndAll(keep)
	return &out
}

// clip shortens a printed expression for a note.
func clip(s string) string {
	const n = 120
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}
