package autodiff

import (
	"fmt"

	"github.com/pkg/errors"

	"github.com/neoflow/neoflow/core/ir"
)

// reduction returns v(x, r) · ∂fold/∂F(x, r) for statement si,
// Y[x] op= F(x, r), with the auxiliary statements it reads (doc.go,
// "Reductions"): reverse mode passes v = dY[x] (the factor R), forward
// mode the tangent of F (tangent.go).
func (b *builder) reduction(si int, v ir.Expr) (ir.Expr, []*gstmt, error) {
	bs := b.spec.Stmts[si]
	s := bs.Stmt
	F := b.rhs[si]
	fwdY := s.Tensor
	Y := b.gname(fwdY)
	var xs []ir.Expr
	var xi []*ir.Index
	ext := map[string]int64{}
	for _, v := range bs.Spatial {
		xs = append(xs, idx(v.Name))
		xi = append(xi, idx(v.Name))
		ext[v.Name] = v.Extent
	}
	var rs []ir.Expr
	for _, v := range bs.Reduction {
		rs = append(rs, idx(v.Name))
		ext[v.Name] = v.Extent
	}
	at := func(t string, ix []ir.Expr) *ir.Access { return &ir.Access{Tensor: t, Indices: ix} }
	if s.Reduce == ir.Assign || s.Reduce == ir.Sum || len(bs.Reduction) == 0 {
		return v, nil, nil
	}
	shapeY := b.shapes[Y]
	newAux := func(base string, shape []int64, lhs []*ir.Index, red ir.ReduceOp, rhs ir.Expr, note string) *gstmt {
		name := b.tnames.fresh(base)
		b.shapes[name] = shape
		e := map[string]int64{}
		for k, v := range ext {
			e[k] = v
		}
		return &gstmt{s: &ir.Stmt{Tensor: name, Indices: lhs, Reduce: red, RHS: rhs}, ext: e, note: note}
	}

	if s.Reduce == ir.Prod {
		// Zero-safe product rule: Z counts zero factors, P multiplies the
		// non-zero ones; the product of the other factors is P/F when there
		// is no zero, P at the single zero, and 0 otherwise.
		isZ := bin(ir.Eq, F, flit(0))
		nz := newAux("nz_"+fwdY, shapeY, xi, ir.Sum, where(isZ, flit(1), flit(0)),
			fmt.Sprintf("number of zero factors of %s", fwdY))
		pnz := newAux("pnz_"+fwdY, shapeY, xi, ir.Prod, where(isZ, flit(1), F),
			fmt.Sprintf("product of the non-zero factors of %s", fwdY))
		Z, P := at(nz.s.Tensor, xs), at(pnz.s.Tensor, xs)
		G := where(bin(ir.Eq, Z, flit(0)), div(P, F),
			where(bin(ir.And, bin(ir.Eq, Z, flit(1)), isZ), P, zero()))
		return mul(v, G), []*gstmt{nz, pnz}, nil
	}

	// max= / min=: the gradient goes to the first arg-extremum in the
	// row-major order of the reduction axes.
	n := int64(1)
	for _, v := range bs.Reduction {
		p, err := mulChk(n, v.Extent)
		if err != nil {
			return nil, nil, errors.Errorf("autodiff: statement %d (%s): reduction space overflows", si+1, ir.StmtString(s))
		}
		n = p
	}
	if bits := b.dtype.Significand(); bits > 0 && n > int64(1)<<bits {
		return nil, nil, errors.Errorf("autodiff: statement %d (%s): the %s reduction has %d points, more than %s represents exactly (2^%d); "+
			"the arg-extremum index that routes its gradient would be inexact", si+1, ir.StmtString(s), s.Reduce, n, b.dtype, bits)
	}
	var terms []term
	stride := int64(1)
	for k := len(bs.Reduction) - 1; k >= 0; k-- {
		terms = append([]term{{idx(bs.Reduction[k].Name), stride}}, terms...)
		stride *= bs.Reduction[k].Extent
	}
	lin := linearExpr(terms, 0)
	var aux []*gstmt
	var val, ext0 ir.Expr
	if exactValue(F) {
		// F is a stored value (reads, literals): it compares exactly with
		// the recomputed Y.
		val, ext0 = F, at(Y, xs)
	} else {
		// Store F first, so that the comparison sees the very values the
		// extremum was taken over (whatever the kernel's rounding).
		lhs := append(append([]*ir.Index{}, xi...), indicesOf(rs)...)
		shape := append(append([]int64{}, shapeY...), extents(bs.Reduction)...)
		t := newAux("v_"+fwdY, shape, lhs, ir.Assign, F, fmt.Sprintf("the values %s reduces", fwdY))
		xr := append(append([]ir.Expr{}, xs...), rs...)
		m := newAux("m_"+fwdY, shapeY, xi, s.Reduce, at(t.s.Tensor, xr), fmt.Sprintf("%s over the stored values", s.Reduce))
		aux = append(aux, t, m)
		val, ext0 = at(t.s.Tensor, xr), at(m.s.Tensor, xs)
	}
	arg := newAux("arg_"+fwdY, shapeY, xi, ir.Min, where(bin(ir.Eq, val, ext0), lin, ilit(n)),
		fmt.Sprintf("first arg-%s of %s (row-major over %s)", map[ir.ReduceOp]string{ir.Max: "max", ir.Min: "min"}[s.Reduce], fwdY, varList(bs.Reduction)))
	aux = append(aux, arg)
	return where(bin(ir.Eq, lin, at(arg.s.Tensor, xs)), v, zero()), aux, nil
}

// exactValue reports whether e's value is a stored or literal value, with
// no arithmetic that a kernel could round differently.
func exactValue(e ir.Expr) bool {
	switch e := e.(type) {
	case *ir.Access, *ir.FloatLit, *ir.IntLit, *ir.Const:
		return true
	case *ir.Unary:
		return e.Op == ir.Neg && exactValue(e.X)
	case *ir.Where:
		return exactValue(e.Then) && exactValue(e.Else)
	}
	return false
}

func indicesOf(es []ir.Expr) []*ir.Index {
	out := make([]*ir.Index, len(es))
	for i, e := range es {
		out[i] = e.(*ir.Index)
	}
	return out
}

func extents(vs []ir.Var) []int64 {
	out := make([]int64, len(vs))
	for i, v := range vs {
		out[i] = v.Extent
	}
	return out
}

func varList(vs []ir.Var) string {
	s := ""
	for i, v := range vs {
		if i > 0 {
			s += ", "
		}
		s += v.Name
	}
	return s
}
