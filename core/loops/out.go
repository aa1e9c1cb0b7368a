package loops

import "github.com/neoflow/neoflow/core/ir"

// outAccess is the element statement st writes when each spatial axis
// stands at env[axis]: Tensor[env[v0] + Offset[0], ...]. Every family's
// lowering stores through it, so a statement that writes a part of its
// tensor (ir.BoundStmt.Offset) is placed the same way everywhere.
func outAccess(st *ir.BoundStmt, env map[string]ir.Expr) *ir.Access {
	out := &ir.Access{Tensor: st.Stmt.Tensor}
	for d, ax := range st.Spatial {
		x := env[ax.Name]
		if off := st.OffsetAt(d); off != 0 {
			x = Add(x, Lit(off))
		}
		out.Indices = append(out.Indices, x)
	}
	return out
}
