package fuse

import (
	"slices"
	"strings"

	"github.com/neoflow/neoflow/core/ir"
)

// Merge folds sums of reductions into one reduction (reduction fusion):
// a statement T[i...] = A[i...] + B[i...] + ..., whose terms each read a
// temporary at exactly T's indices, where every temporary is written by
// one whole statement A[i...] += f (a sum over axes of the same extents
// for all of them) and read by nothing else, becomes
//
//	T[i...] += f + g + ...   over the shared reduction axes
//
// and the temporaries are never stored. The gradient of a weight read
// twice is such a sum (d_W = d_W_1 + d_W_2); after Merge, Split gives
// each half of d_W its own contraction. One term (T = A) moves A's
// reduction into T.
func Merge(spec *ir.Spec, opts Options, notes *Notes) *ir.Spec {
	stmts := slices.Clone(spec.Stmts)
	changed := false
	for i := 0; i < len(stmts); i++ {
		merged, drop := mergeAt(spec, stmts, i, opts)
		if merged == nil {
			continue
		}
		notes.add("merge: %s = %s becomes one sum over %s: %s", stmts[i].Stmt.Tensor, strings.Join(drop, " + "), varNames(merged.Reduction), mergeReward(spec, stmts[i], drop, opts))
		stmts[i] = merged
		stmts = slices.DeleteFunc(stmts, func(st *ir.BoundStmt) bool { return slices.Contains(drop, st.Stmt.Tensor) })
		i = -1 // positions moved; start over (each merge removes statements, so this ends)
		changed = true
	}
	if !changed {
		return spec
	}
	return spec.WithStmts(stmts)
}

// mergeAt is statement i merged with the reductions it adds up, and the
// temporaries that no longer need storing; nil when it does not apply.
func mergeAt(spec *ir.Spec, stmts []*ir.BoundStmt, i int, opts Options) (*ir.BoundStmt, []string) {
	st := stmts[i]
	if st.Stmt.Reduce != ir.Assign || st.Offset != nil {
		return nil, nil
	}
	var parts []*ir.BoundStmt
	var names []string
	for _, t := range addends(st.Stmt.RHS) {
		a, ok := t.(*ir.Access)
		if !ok || !isIdentity(a, st) || slices.Contains(names, a.Tensor) || !isTemp(spec, a.Tensor, opts) {
			return nil, nil
		}
		w := writers(stmts, a.Tensor)
		if len(w) != 1 || len(readers(stmts, a.Tensor)) != 1 {
			return nil, nil
		}
		p := stmts[w[0]]
		if p.Stmt.Reduce != ir.Sum || p.Offset != nil || len(p.Reduction) == 0 || !sameExtents(p.Reduction, partsFirst(parts, p).Reduction) {
			return nil, nil
		}
		parts = append(parts, p)
		names = append(names, a.Tensor)
	}
	if len(parts) == 0 {
		return nil, nil
	}
	red := freshReduction(parts[0].Reduction, st.Spatial)
	var rhs ir.Expr
	for _, p := range parts {
		sub := map[string]ir.Expr{}
		for d, v := range p.Spatial {
			sub[v.Name] = &ir.Index{Name: st.Spatial[d].Name}
		}
		for k, v := range p.Reduction {
			sub[v.Name] = &ir.Index{Name: red[k].Name}
		}
		term := ir.SubstIndex(p.Stmt.RHS, sub)
		if rhs == nil {
			rhs = term
		} else {
			rhs = &ir.Binary{Op: ir.Add, X: rhs, Y: term}
		}
	}
	s := *st.Stmt
	s.Reduce, s.RHS = ir.Sum, rhs
	return &ir.BoundStmt{Stmt: &s, Spatial: st.Spatial, Reduction: red}, names
}

// mergeReward: the merged temporaries are neither stored nor loaded, the
// additions of T = A + B are made in the sum, and their nests go.
func mergeReward(spec *ir.Spec, st *ir.BoundStmt, merged []string, opts Options) Reward {
	var traffic int64
	for _, name := range merged {
		traffic += 2 * spec.Tensor(name).Elems() * int64(spec.DType.Size())
	}
	return opts.Machine.reward(traffic, st.Points(), int64(len(merged)))
}

func partsFirst(parts []*ir.BoundStmt, p *ir.BoundStmt) *ir.BoundStmt {
	if len(parts) == 0 {
		return p
	}
	return parts[0]
}

// addends lists the terms of a sum (a tree of +).
func addends(e ir.Expr) []ir.Expr {
	if b, ok := e.(*ir.Binary); ok && b.Op == ir.Add {
		return append(addends(b.X), addends(b.Y)...)
	}
	return []ir.Expr{e}
}

func sameExtents(a, b []ir.Var) bool {
	return slices.EqualFunc(a, b, func(x, y ir.Var) bool { return x.Extent == y.Extent })
}

// freshReduction is red renamed where a name is one of the spatial axes.
func freshReduction(red, spatial []ir.Var) []ir.Var {
	taken := map[string]bool{}
	for _, v := range spatial {
		taken[v.Name] = true
	}
	out := make([]ir.Var, len(red))
	for k, v := range red {
		name := v.Name
		for taken[name] {
			name += "_r"
		}
		taken[name] = true
		out[k] = ir.Var{Name: name, Extent: v.Extent}
	}
	return out
}

func varNames(vs []ir.Var) string {
	names := make([]string, len(vs))
	for i, v := range vs {
		names[i] = v.Name
	}
	return strings.Join(names, ", ")
}
