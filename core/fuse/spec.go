package fuse

import (
	"fmt"

	"github.com/neoflow/neoflow/core/ir"
)

// Options configure the fusion passes.
type Options struct {
	// Keep names temporaries that must stay whole: no pass removes them
	// or splits the statement that writes them.
	Keep map[string]bool
	// SplitAlways splits every statement whose conditions allow it, even
	// where that saves too little (tests: small shapes exercise Split).
	SplitAlways bool
	// Machine weighs the reward's terms; the zero value means
	// DefaultMachine.
	Machine Machine
}

// Notes collects the passes' decisions, one line each.
type Notes []string

func (n *Notes) add(format string, args ...any) {
	if n != nil {
		*n = append(*n, fmt.Sprintf(format, args...))
	}
}

// isTemp reports whether name is a temporary of spec that no option keeps.
func isTemp(spec *ir.Spec, name string, opts Options) bool {
	t := spec.Tensor(name)
	return t != nil && t.Role == ir.RoleTemp && !opts.Keep[name]
}

// declsOf maps each of spec's tensors' names to its declaration.
func declsOf(spec *ir.Spec) map[string]*ir.TensorDecl {
	m := make(map[string]*ir.TensorDecl, len(spec.Tensors))
	for _, t := range spec.Tensors {
		m[t.Name] = t
	}
	return m
}

// writers lists the statements that write name.
func writers(stmts []*ir.BoundStmt, name string) []int {
	var out []int
	for i, st := range stmts {
		if st.Stmt.Tensor == name {
			out = append(out, i)
		}
	}
	return out
}

// reads counts the accesses of tensor name that one evaluation of e
// makes at most: of a where's branches only the one taken is evaluated.
func reads(e ir.Expr, name string) int {
	switch x := e.(type) {
	case *ir.Access:
		n := 0
		if x.Tensor == name {
			n = 1
		}
		for _, i := range x.Indices {
			n += reads(i, name)
		}
		return n
	case *ir.Unary:
		return reads(x.X, name)
	case *ir.Binary:
		return reads(x.X, name) + reads(x.Y, name)
	case *ir.Call:
		n := 0
		for _, a := range x.Args {
			n += reads(a, name)
		}
		return n
	case *ir.Where:
		return reads(x.Cond, name) + max(reads(x.Then, name), reads(x.Else, name))
	}
	return 0
}

// accesses counts the tensor reads in e (every branch).
func accesses(e ir.Expr) int64 {
	var n int64
	ir.Walk(e, func(x ir.Expr) bool {
		if _, ok := x.(*ir.Access); ok {
			n++
		}
		return true
	})
	return n
}

// readers lists the statements whose right-hand side reads name.
func readers(stmts []*ir.BoundStmt, name string) []int {
	var out []int
	for i, st := range stmts {
		if reads(st.Stmt.RHS, name) > 0 {
			out = append(out, i)
		}
	}
	return out
}

// Cost estimates the arithmetic of one evaluation of e, in additions: a
// math function call counts call (Machine.Cost: the machine's measured
// CallOps), another operation, a comparison or a read 1, both branches of
// a where counted. Index arithmetic inside a read is address computation
// and not counted. Machine.OpsPerSec is in these units.
func Cost(e ir.Expr, call int64) int64 {
	switch x := e.(type) {
	case *ir.Access:
		return 1
	case *ir.Unary:
		return 1 + Cost(x.X, call)
	case *ir.Binary:
		return 1 + Cost(x.X, call) + Cost(x.Y, call)
	case *ir.Call:
		n := call
		for _, a := range x.Args {
			n += Cost(a, call)
		}
		return n
	case *ir.Where:
		return 1 + Cost(x.Cond, call) + Cost(x.Then, call) + Cost(x.Else, call)
	}
	return 0
}

// Cost is e's arithmetic with m's cost of a math function call.
func (m Machine) Cost(e ir.Expr) int64 { return Cost(e, m.orDefault().CallOps) }

// extents maps every axis of st to its extent.
func extents(st *ir.BoundStmt) map[string]int64 {
	ext := map[string]int64{}
	for _, v := range st.Spatial {
		ext[v.Name] = v.Extent
	}
	for _, v := range st.Reduction {
		ext[v.Name] = v.Extent
	}
	return ext
}

// isIdentity reports whether a reads its tensor at exactly the spatial
// axes of st, in order.
func isIdentity(a *ir.Access, st *ir.BoundStmt) bool {
	if len(a.Indices) != len(st.Spatial) {
		return false
	}
	for d, x := range a.Indices {
		ix, ok := x.(*ir.Index)
		if !ok || ix.Name != st.Spatial[d].Name {
			return false
		}
	}
	return true
}
