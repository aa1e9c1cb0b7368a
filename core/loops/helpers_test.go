package loops

import "github.com/neoflow/neoflow/core/ir"

// Small constructors for hand-built specs.

func ix(n string) ir.Expr                   { return &ir.Index{Name: n} }
func lit(v int64) ir.Expr                   { return &ir.IntLit{Value: v} }
func flit(v float64) ir.Expr                { return &ir.FloatLit{Value: v} }
func bin(op ir.BinOp, x, y ir.Expr) ir.Expr { return &ir.Binary{Op: op, X: x, Y: y} }
func at(t string, idx ...ir.Expr) ir.Expr   { return &ir.Access{Tensor: t, Indices: idx} }
func v(n string, e int64) ir.Var            { return ir.Var{Name: n, Extent: e} }
func where(c, a, b ir.Expr) ir.Expr         { return &ir.Where{Cond: c, Then: a, Else: b} }

func tensor(name string, role ir.Role, shape ...int64) *ir.TensorDecl {
	return &ir.TensorDecl{Name: name, Role: role, Shape: shape}
}

// stmt builds a bound statement writing tensor[spatial...].
func stmt(tensor string, red ir.ReduceOp, rhs ir.Expr, spatial []ir.Var, reduction ...ir.Var) *ir.BoundStmt {
	s := &ir.Stmt{Tensor: tensor, Reduce: red, RHS: rhs}
	for _, ax := range spatial {
		s.Indices = append(s.Indices, &ir.Index{Name: ax.Name})
	}
	return &ir.BoundStmt{Stmt: s, Spatial: spatial, Reduction: reduction}
}

func spec(name string, dt ir.DType, tensors []*ir.TensorDecl, stmts ...*ir.BoundStmt) *ir.Spec {
	op := &ir.Op{Name: name}
	for _, t := range tensors {
		if t.Role == ir.RoleInput {
			op.Inputs = append(op.Inputs, t.Name)
		}
	}
	for _, s := range stmts {
		op.Stmts = append(op.Stmts, s.Stmt)
	}
	return &ir.Spec{Op: op, DType: dt, Tensors: tensors, Stmts: stmts}
}

func matmulSpec(dt ir.DType, m, n, k int64) *ir.Spec {
	return spec("matmul", dt,
		[]*ir.TensorDecl{tensor("A", ir.RoleInput, m, k), tensor("B", ir.RoleInput, k, n), tensor("C", ir.RoleOutput, m, n)},
		stmt("C", ir.Sum, bin(ir.Mul, at("A", ix("i"), ix("k")), at("B", ix("k"), ix("j"))),
			[]ir.Var{v("i", m), v("j", n)}, v("k", k)))
}

// Lower, LowerWith and LowerStmt give this package's tests the nests as the
// renderers take them: the loop-level passes of core/pipeline's table
// (lower, hoist-guards, version-lanes, fuse-nests, hoist-invariants, check-bounds; Lower, with the
// default schedules, parallel-rows too) in its order, which these tests cannot import (the pipeline
// imports loops).
func Lower(spec *ir.Spec) (*Func, error) {
	fn, err := LowerNests(spec, DefaultSchedule)
	if err != nil {
		return nil, err
	}
	return CheckFunc(HoistInvariants(ParallelRows(FuseNests(VersionFunc(HoistFunc(fn))))))
}

func LowerWith(spec *ir.Spec, sched func(*ir.Spec, int) Schedule) (*Func, error) {
	fn, err := LowerNests(spec, sched)
	if err != nil {
		return nil, err
	}
	return CheckFunc(HoistInvariants(FuseNests(VersionFunc(HoistFunc(fn)))))
}

func LowerStmt(spec *ir.Spec, i int, s Schedule) (*Nest, error) {
	n, err := LowerNest(spec, i, s)
	if err != nil {
		return nil, err
	}
	fn, err := CheckFunc(HoistInvariants(VersionFunc(HoistFunc(&Func{Spec: spec, Nests: []*Nest{n}}))))
	if err != nil {
		return nil, err
	}
	return fn.Nests[0], nil
}
