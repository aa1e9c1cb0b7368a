package autodiff

import (
	"fmt"
	"slices"

	"github.com/pkg/errors"

	"github.com/neoflow/neoflow/core/ir"
)

// Tangent returns the tangent op of spec (forward mode) with respect to
// the inputs wrt selects: given the forward inputs and, for each selected
// input X, a tangent t_X of X's shape, it computes for every output Y its
// tangent t_Y = Σ_X ∂Y/∂X · t_X, of Y's shape, in spec.Outputs() order. See
// the package documentation ("Forward mode").
//
// Its inputs are the forward inputs (same names), then t_<X> for each
// selected input in input order (d_X's rule for a taken name: t_X_1, ...);
// its outputs are t_<Y> for every output. GradOp.Tangents records wrt. As
// with Grad the result is an ordinary op, checked before it is returned,
// so Tangent and Grad apply to its Spec again (forward over reverse, as
// torch.func.hessian is, differentiates a gradient op's Spec with Tangent).
func Tangent(spec *ir.Spec, wrt []bool) (*GradOp, error) {
	b, err := newBuilder(spec, wrt, "t_")
	if err != nil {
		return nil, err
	}
	op := spec.Op
	body, err := b.tangents(wrt)
	if err != nil {
		return nil, err
	}
	var outputs []string
	var want [][]int64
	for _, t := range spec.Outputs() {
		outputs = append(outputs, b.dOut[t.Name])
		want = append(want, t.Shape)
	}
	body = prune(body, outputs)
	all := append(b.recompute(body), body...)

	inputs := slices.Clone(op.Inputs)
	var shapes [][]int64
	for _, t := range spec.InputsDecl() {
		shapes = append(shapes, t.Shape)
	}
	for i, in := range op.Inputs {
		if wrt[i] {
			inputs = append(inputs, b.dIn[in])
			shapes = append(shapes, spec.Tensor(in).Shape)
			b.shapes[b.dIn[in]] = spec.Tensor(in).Shape
		}
	}
	anchorInputs(all, inputs, outputs[0], b.shapes)
	name := "jvp"
	if op.Name != "" {
		name = op.Name + "_jvp"
	}
	g, err := b.assemble(name, inputs, outputs, shapes, all, want)
	if err != nil {
		return nil, err
	}
	g.Tangents = slices.Clone(wrt)
	return g, nil
}

// tangents walks the statements forwards: the tangent of each statement
// on a path from a selected input, then a zero tangent for each output no
// derivative reaches.
func (b *builder) tangents(wrt []bool) ([]*gstmt, error) {
	spec := b.spec
	active := b.active(wrt)
	isOutput := map[string]bool{}
	for _, t := range spec.Outputs() {
		isOutput[t.Name] = true
	}
	// tan names the tangent of each forward tensor that has one.
	tan := map[string]string{}
	for i, in := range b.fwd.Inputs {
		if wrt[i] {
			tan[in] = b.dIn[in]
		}
	}
	var body []*gstmt
	for si, s := range b.fwd.Stmts {
		if !active[s.Tensor] || spec.ElemType(spec.Tensor(s.Tensor)).Integer() {
			continue // an integer tensor has no tangent
		}
		dF, err := b.tangentOf(si, tan)
		if err != nil {
			return nil, err
		}
		if ir.IsZero(dF) {
			continue
		}
		rhs, aux, err := b.reduction(si, dF)
		if err != nil {
			return nil, err
		}
		name := b.dOut[s.Tensor]
		if !isOutput[s.Tensor] {
			name = b.tnames.fresh("t_" + s.Tensor)
			b.shapes[name] = b.shapes[b.gname(s.Tensor)]
		}
		g, err := b.tangentStmt(si, name, rhs)
		if err != nil {
			return nil, err
		}
		body = append(append(body, aux...), g)
		tan[s.Tensor] = name
	}
	for _, t := range spec.Outputs() {
		if _, ok := tan[t.Name]; !ok {
			body = append(body, b.zeroStmt(b.dOut[t.Name], t.Name, "no tangent reaches "+t.Name))
		}
	}
	return body, nil
}

// tangentOf is the tangent of statement si's right-hand side F: the sum,
// over the reads A[f] of tensors with a tangent, of ∂F/∂A[f] · t_A[f],
// each partial under the guards of its read (the same table, product rule
// and guards as reverse mode, table.go). No index is inverted: t_A is read
// where A is.
func (b *builder) tangentOf(si int, tan map[string]string) (ir.Expr, error) {
	var reads, names []string
	seen := map[string]bool{}
	for _, a := range accessesOf(b.fwd.Stmts[si].RHS) {
		if _, ok := tan[a.Tensor]; ok && !seen[a.Tensor] {
			seen[a.Tensor] = true
			reads = append(reads, a.Tensor)
			names = append(names, b.gname(a.Tensor))
		}
	}
	occs, err := occurrences(b.rhs[si], names, b.memo)
	if err != nil {
		return nil, err
	}
	var dF ir.Expr = zero()
	for _, A := range reads {
		for _, grp := range groupOccs(occs[b.gname(A)]) {
			c := grp.contribution(&ir.Access{Tensor: tan[A], Indices: grp.acc.Indices}, b.memo)
			if !ir.IsZero(c) {
				dF = sumTerm(dF, c)
			}
		}
	}
	if err := b.memo.charge(b.fwd, si, []ir.Expr{dF}); err != nil {
		return nil, err
	}
	return dF, nil
}

// tangentStmt writes rhs, the tangent of statement si's right-hand side
// through its reduction (reduction), into name over the statement's own
// variables: a sum over its reduction axes, or '=' without any. A
// reduction variable the tangent no longer reads is made legal as a
// gradient's is (fixVars): a read in a branch that never runs where a
// guard still uses it, else a factor of its extent.
func (b *builder) tangentStmt(si int, name string, rhs ir.Expr) (*gstmt, error) {
	bs := b.spec.Stmts[si]
	ext := map[string]int64{}
	var lhs []*ir.Index
	for _, v := range bs.Spatial {
		lhs = append(lhs, idx(v.Name))
		ext[v.Name] = v.Extent
	}
	var red []string
	for _, v := range bs.Reduction {
		ext[v.Name] = v.Extent
		red = append(red, v.Name)
	}
	rhs, red, err := fixVars(rhs, red, ext, "", 0, b.rhs[si])
	if err != nil {
		return nil, errors.Errorf("autodiff: the tangent of statement %d (%s): %v", si+1, ir.StmtString(bs.Stmt), err)
	}
	op := ir.Sum
	if len(red) == 0 {
		op = ir.Assign
	}
	note := fmt.Sprintf("tangent of statement %d (%s)", si+1, clip(ir.StmtString(bs.Stmt), 60))
	return &gstmt{s: &ir.Stmt{Tensor: name, Indices: lhs, Reduce: op, RHS: rhs}, ext: ext, note: note}, nil
}
