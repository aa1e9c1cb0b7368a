package fuse

import (
	"fmt"
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
//
// Candidates are found by a key of their extents and right-hand side
// with the axes renamed in order (valueKey), confirmed by sameValue.
func CSE(spec *ir.Spec, opts Options, notes *Notes) *ir.Spec {
	stmts := slices.Clone(spec.Stmts)
	u := newUses(stmts)
	decls := declsOf(spec)
	earlier := map[string][]int{} // valueKey → whole '=' temporaries, in order
	changed := false
	for j, q := range stmts {
		if !wholeAssign(decls, u, j) {
			continue
		}
		key := valueKey(q)
		i := -1
		if isTemp(spec, q.Stmt.Tensor, opts) {
			if k := slices.IndexFunc(earlier[key], func(i int) bool { return sameValue(stmts[i], q) }); k >= 0 {
				i = earlier[key][k]
			}
		}
		if i < 0 {
			if decls[q.Stmt.Tensor].Role == ir.RoleTemp {
				earlier[key] = append(earlier[key], j)
			}
			continue
		}
		p := stmts[i]
		for _, r := range u.readersOf(q.Stmt.Tensor) {
			if r > j {
				u.set(r, withRHS(stmts[r], ir.RenameTensors(stmts[r].Stmt.RHS, renamed(q.Stmt.Tensor, p.Stmt.Tensor))))
			}
		}
		r := opts.Machine.reward(decls[q.Stmt.Tensor].Elems()*int64(spec.DType.Size()), q.Points()*opts.Machine.Cost(q.Stmt.RHS), 1)
		notes.add("cse: %s computes what %s does; its readers read %s: %s", q.Stmt.Tensor, p.Stmt.Tensor, p.Stmt.Tensor, r)
		changed = true
	}
	if !changed {
		return spec
	}
	return spec.WithStmts(stmts)
}

// wholeAssign reports whether statement i is the one statement writing
// its tensor, all of it, with '='.
func wholeAssign(decls map[string]*ir.TensorDecl, u *uses, i int) bool {
	st := u.stmts[i]
	t := decls[st.Stmt.Tensor]
	return st.Stmt.Reduce == ir.Assign && t != nil && !st.Partial(t.Shape) && len(u.writersOf(st.Stmt.Tensor)) == 1
}

// valueKey is st's extents and right-hand side with its spatial axes
// renamed to their positions: statements that compute the same value have
// the same key.
func valueKey(st *ir.BoundStmt) string {
	sub := map[string]ir.Expr{}
	for d, v := range st.Spatial {
		sub[v.Name] = &ir.Index{Name: fmt.Sprintf("$%d", d)}
	}
	return fmt.Sprint(extentsOf(st.Spatial), ir.ExprString(ir.SubstIndex(st.Stmt.RHS, sub)))
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
