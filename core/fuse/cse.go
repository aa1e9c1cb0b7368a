package fuse

import (
	"slices"

	"github.com/neoflow/neoflow/core/ir"
)

// CSE removes elementwise statements that compute what an earlier one
// computes (common subexpressions across statements): when a temporary Q
// is written by one whole '=' statement whose right-hand side is that of
// an earlier whole '=' statement writing a temporary P of the same shape
// (the axes renamed in order), reads of Q become reads of P, and Prune
// drops Q. Gradients repeat themselves this way: d_RH and d_G of the
// subLSTM cell are one expression, as are d_RH, d_AX and d_PS of SC-RNN.
func CSE(spec *ir.Spec, opts Options, notes *Notes) *ir.Spec {
	stmts := slices.Clone(spec.Stmts)
	changed := false
	for j, q := range stmts {
		if !wholeAssign(spec, stmts, j) || !isTemp(spec, q.Stmt.Tensor, opts) {
			continue
		}
		for i, p := range stmts[:j] {
			if !wholeAssign(spec, stmts, i) || spec.Tensor(p.Stmt.Tensor).Role != ir.RoleTemp || !sameValue(p, q) {
				continue
			}
			for r := j + 1; r < len(stmts); r++ {
				if reads(stmts[r].Stmt.RHS, q.Stmt.Tensor) > 0 {
					stmts[r] = withRHS(stmts[r], ir.RenameTensors(stmts[r].Stmt.RHS, renamed(q.Stmt.Tensor, p.Stmt.Tensor)))
				}
			}
			r := opts.Machine.reward(spec.Tensor(q.Stmt.Tensor).Elems()*int64(spec.DType.Size()), q.Points()*opts.Machine.Cost(q.Stmt.RHS), 1)
			notes.add("cse: %s computes what %s does; its readers read %s: %s", q.Stmt.Tensor, p.Stmt.Tensor, p.Stmt.Tensor, r)
			changed = true
			break
		}
	}
	if !changed {
		return spec
	}
	return spec.WithStmts(stmts)
}

// wholeAssign reports whether statement i is the one statement writing
// its tensor, all of it, with '='.
func wholeAssign(spec *ir.Spec, stmts []*ir.BoundStmt, i int) bool {
	st := stmts[i]
	t := spec.Tensor(st.Stmt.Tensor)
	return st.Stmt.Reduce == ir.Assign && t != nil && !st.Partial(t.Shape) && len(writers(stmts, st.Stmt.Tensor)) == 1
}

// sameValue reports whether p and q compute the same value at the same
// point: equal extents and right-hand sides equal once q's axes are
// renamed to p's, in order.
func sameValue(p, q *ir.BoundStmt) bool {
	if !slices.Equal(extentsOf(p.Spatial), extentsOf(q.Spatial)) {
		return false
	}
	sub := map[string]ir.Expr{}
	for d, v := range q.Spatial {
		sub[v.Name] = &ir.Index{Name: p.Spatial[d].Name}
	}
	return ir.Equal(p.Stmt.RHS, ir.SubstIndex(q.Stmt.RHS, sub))
}

func extentsOf(vs []ir.Var) []int64 {
	out := make([]int64, len(vs))
	for i, v := range vs {
		out[i] = v.Extent
	}
	return out
}

// renamed maps from to to and keeps every other name.
func renamed(from, to string) func(string) string {
	return func(name string) string {
		if name == from {
			return to
		}
		return name
	}
}
