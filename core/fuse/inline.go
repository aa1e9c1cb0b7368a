package fuse

import (
	"slices"

	"github.com/neoflow/neoflow/core/ir"
)

// Inline substitutes elementwise temporaries into their readers (recompute
// instead of store). A temporary qualifies when one whole statement
// writes it with '=' and no option keeps it, and substituting recomputes
// nothing: it is a copy (its right-hand side one access or a literal), or
// its readers evaluate it at most as often as its own statement did
// (points of each reader times its reads there, summed, at most the
// temporary's points: d_E read once per point of the part of d_G that
// reads it). Each read P[e...] becomes P's right-hand side with P's axes
// replaced by e.... Temporaries are taken in statement order; the
// statement that wrote an inlined temporary is left for Prune.
func Inline(spec *ir.Spec, opts Options, notes *Notes) *ir.Spec {
	stmts := slices.Clone(spec.Stmts)
	changed := false
	for i, p := range stmts {
		name := p.Stmt.Tensor
		if !inlinable(spec, stmts, i, opts) {
			continue
		}
		var users []string
		for _, r := range readers(stmts, name) {
			stmts[r] = withRHS(stmts[r], inlineInto(stmts[r].Stmt.RHS, p))
			users = append(users, stmts[r].Stmt.Tensor)
		}
		notes.add("inline: %s into %v", name, users)
		changed = true
	}
	if !changed {
		return spec
	}
	return withStmts(spec, stmts)
}

// inlinable reports whether statement i writes a temporary that Inline
// substitutes into its readers.
func inlinable(spec *ir.Spec, stmts []*ir.BoundStmt, i int, opts Options) bool {
	p := stmts[i]
	name := p.Stmt.Tensor
	if p.Stmt.Reduce != ir.Assign || p.Offset != nil || !isTemp(spec, name, opts) || len(writers(stmts, name)) != 1 {
		return false
	}
	rs := readers(stmts, name)
	if len(rs) == 0 || reads(p.Stmt.RHS, name) > 0 {
		return false
	}
	switch p.Stmt.RHS.(type) {
	case *ir.Access, *ir.FloatLit, *ir.Const:
		return true
	}
	var evals int64
	for _, r := range rs {
		evals += points(stmts[r]) * int64(reads(stmts[r].Stmt.RHS, name))
	}
	return evals <= points(p)
}

// inlineInto replaces every read of p's tensor in e by p's right-hand
// side at the read's indices.
func inlineInto(e ir.Expr, p *ir.BoundStmt) ir.Expr {
	return ir.Rewrite(e, func(n ir.Expr) ir.Expr {
		a, ok := n.(*ir.Access)
		if !ok || a.Tensor != p.Stmt.Tensor {
			return nil
		}
		sub := map[string]ir.Expr{}
		for d, v := range p.Spatial {
			sub[v.Name] = a.Indices[d]
		}
		return substIndex(p.Stmt.RHS, sub)
	})
}
