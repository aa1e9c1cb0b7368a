package fuse

import (
	"slices"

	"github.com/neoflow/neoflow/core/ir"
)

// Prune drops the statements that write temporaries no later statement
// reads and no option keeps (what Inline left behind), and those
// temporaries, and the ones no statement writes any more (Merge's), from
// the kernel's buffers.
func Prune(spec *ir.Spec, opts Options, notes *Notes) *ir.Spec {
	read := map[string]bool{}
	keep := make([]bool, len(spec.Stmts))
	for i := len(spec.Stmts) - 1; i >= 0; i-- {
		st := spec.Stmts[i]
		if !isTemp(spec, st.Stmt.Tensor, opts) || read[st.Stmt.Tensor] {
			keep[i] = true
			ir.Walk(st.Stmt.RHS, func(e ir.Expr) bool {
				if a, ok := e.(*ir.Access); ok {
					read[a.Tensor] = true
				}
				return true
			})
		}
	}
	var stmts []*ir.BoundStmt
	var dropped []string
	for i, st := range spec.Stmts {
		if keep[i] {
			stmts = append(stmts, st)
		} else if !slices.Contains(dropped, st.Stmt.Tensor) {
			dropped = append(dropped, st.Stmt.Tensor)
		}
	}
	for _, t := range spec.Tensors {
		// A temporary with no statement left (Merge moved its sum).
		if isTemp(spec, t.Name, opts) && len(writers(spec.Stmts, t.Name)) == 0 && !slices.Contains(dropped, t.Name) {
			dropped = append(dropped, t.Name)
		}
	}
	if len(dropped) == 0 {
		return spec
	}
	notes.add("prune: %v no longer stored", dropped)
	out := spec.WithStmts(stmts)
	out.Tensors = slices.DeleteFunc(out.Tensors, func(t *ir.TensorDecl) bool { return slices.Contains(dropped, t.Name) })
	return out
}
