package autodiff

import (
	"fmt"
	"strings"

	"github.com/pkg/errors"

	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/sema"
)

// target is one gather to build: the gradient contribution of a group of
// reads A[f(x, r)] of statement si, written as a part tensor dst indexed by
// A's own indices.
type target struct {
	si      int
	tensor  string     // gradient-op name of A
	fwdT    string     // forward name of A (for index-name hints)
	acc     *ir.Access // the read, in the statement's renamed right-hand side
	contrib ir.Expr    // Σ dY-weighted partials, over the forward variables
	dst     string
}

// subMode selects how solved variables are substituted. plain writes an
// affine solution as is (x2 - r + 1); opaque wraps it as (x2 - r + 1) / 1,
// an atom that sema's guard facts bound directly, which proves accesses
// that use the variable with other coefficients.
type subMode int

const (
	plain subMode = iota
	opaque
)

// gather builds the part statement for t. Each candidate is checked with
// sema.Specialize before it is accepted, in this order:
//
//  1. exact inversion by Gauss-Jordan elimination (invert), plain, then
//     with opaque substitution;
//  2. exact inversion through the Smith normal form (invertSNF), plain,
//     then opaque: the general method for any quasi-affine read, used when
//     elimination fails or its gather does not specialize;
//  3. the indicator form, for reads that are not quasi-affine (and, as a
//     last resort, should both exact gathers of a quasi-affine read fail
//     to specialize; no known case does).
func (b *builder) gather(t target) (*gstmt, error) {
	var why string
	methods := []func(target, subMode, bool) (*gstmt, error){b.invertStepped, b.invert, b.invertSNF}
	if b.forceSNF {
		methods = methods[2:]
	}
inversion:
	for _, inv := range methods {
		for _, m := range []subMode{plain, opaque} {
			for _, simp := range []bool{true, false} {
				g, err := inv(t, m, simp)
				if err != nil {
					why = err.Error()
					var na *errNotAffine
					if errors.As(err, &na) {
						break inversion
					}
					continue inversion // the next method
				}
				if err := b.validate(g); err != nil {
					why = "the inverted gather does not specialize: " + firstLine(err.Error())
					continue
				}
				return g, nil
			}
		}
	}
	var err error
	for _, simp := range []bool{true, false} {
		var g *gstmt
		if g, err = b.indicator(t, why, simp); err != nil {
			break
		}
		if err = b.validate(g); err == nil {
			return g, nil
		}
	}
	return nil, errors.Errorf("autodiff: cannot differentiate the read %s in statement %d (%s): %v",
		ir.ExprString(t.acc), t.si+1, ir.StmtString(b.fwd.Stmts[t.si]), firstLine(err.Error()))
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// varTaken is the set of names a gather of statement si may not reuse for
// new variables: the constants and every variable of the statement.
func (b *builder) varTaken(bs *ir.BoundStmt) nameSet {
	taken := nameSet{}
	for c := range b.consts {
		taken[c] = true
	}
	for _, v := range bs.Spatial {
		taken[v.Name] = true
	}
	for _, v := range bs.Reduction {
		taken[v.Name] = true
	}
	return taken
}

// system writes the read's indices as the affine integer system over the
// statement's variables and auxiliary quotients and remainders, after
// mixed-radix splitting (affine.go, split.go). The right-hand symbols zs
// start with A's indices.
func (b *builder) system(t target) (*linsys, []spEq, []zsym, error) {
	ls := newLinsys(b.spec.Stmts[t.si])
	shape := b.shapes[t.tensor]
	var eqs []spEq
	var zs []zsym
	for d, ix := range t.acc.Indices {
		a, err := ls.lin(ix)
		if err != nil {
			return nil, nil, nil, err
		}
		eqs = append(eqs, spEq{a: a.u, z: map[int]int64{d: 1}, c: -a.c})
		zs = append(zs, zsym{dim: d, lo: 0, hi: shape[d] - 1})
	}
	eqs, zs = splitRows(ls, eqs, zs)
	eqs = append(eqs, ls.auxEq...)
	return ls, eqs, zs, nil
}

// zNames names A's indices: index d reuses the plain forward variable it
// reads when exact(k, d) says that variable (unknown k) solves to exactly
// z_d; the others get fresh names after the dimension.
func (b *builder) zNames(t target, ls *linsys, taken nameSet, exact func(k, d int) bool) []string {
	zn := make([]string, len(t.acc.Indices))
	for d, ix := range t.acc.Indices {
		if v, ok := ix.(*ir.Index); ok && exact(ls.byName[v.Name], d) {
			zn[d] = v.Name
		}
	}
	for d := range zn {
		if zn[d] == "" {
			zn[d] = taken.fresh(b.dimHint(t.fwdT, d))
		}
	}
	return zn
}

// finishGather builds the gather statement of an exact inversion: the
// contribution with the read of A replaced by A[zn] and the solved
// variables substituted (sub), under the guards, reducing over red
// (extents in ext, which also holds A's indices).
func (b *builder) finishGather(t target, zn, red []string, ext map[string]int64, sub map[string]ir.Expr,
	guards []ir.Expr, m subMode, simp bool, how string) (*gstmt, error) {
	zacc := &ir.Access{Tensor: t.tensor}
	for _, n := range zn {
		zacc.Indices = append(zacc.Indices, idx(n))
	}
	body := ir.Rewrite(t.contrib, func(e ir.Expr) ir.Expr {
		if a, ok := e.(*ir.Access); ok && ir.Equal(a, t.acc) {
			return zacc
		}
		return nil
	})
	body = ir.SubstIndex(body, sub)
	if len(guards) > 0 {
		body = where(ir.AndAll(guards), body, zero())
	}
	if simp {
		order := append(append([]string{}, zn...), red...)
		body = simplifyGuards(canonIndex(body, order), ext)
	}
	body, red, err := fixVars(body, red, ext, t.tensor, len(zn), b.rhs[t.si])
	if err != nil {
		return nil, err
	}
	g := &gstmt{s: &ir.Stmt{Tensor: t.dst, Reduce: ir.Assign, RHS: body}, ext: ext}
	for _, n := range zn {
		g.s.Indices = append(g.s.Indices, idx(n))
	}
	if len(red) > 0 {
		g.s.Reduce = ir.Sum
	}
	if m == opaque {
		how += ", opaque substitution"
	}
	if len(red) > 0 {
		how += "; reduces over " + strings.Join(red, ", ")
	}
	g.note = fmt.Sprintf("through %s (%s)", ir.ExprString(t.acc), how)
	return g, nil
}

func isAtomic(e ir.Expr) bool {
	switch e.(type) {
	case *ir.Index, *ir.IntLit:
		return true
	}
	return false
}

// eqCond prints the condition lf == 0 over A's indices as P == Q with
// positive coefficients on both sides.
func eqCond(lf lform, zs []zsym, zn []string) ir.Expr {
	var pos, negs []term
	for i, v := range lf.z {
		switch {
		case v > 0:
			pos = append(pos, term{zexpr(zs, i, zn), v})
		case v < 0:
			negs = append(negs, term{zexpr(zs, i, zn), -v})
		}
	}
	if len(pos) == 0 {
		pos, negs = negs, pos
		lf.c = -lf.c
	}
	return bin(ir.Eq, linearExpr(pos, 0), linearExpr(negs, -lf.c))
}

// validate specializes a single statement on its own (its reads as inputs,
// every variable's extent as a size): the bounds proof must accept it.
func (b *builder) validate(g *gstmt) error {
	var reads []string
	var shapes [][]int64
	seen := map[string]bool{}
	for _, a := range accessesOf(g.s.RHS) {
		if !seen[a.Tensor] {
			seen[a.Tensor] = true
			reads = append(reads, a.Tensor)
			shapes = append(shapes, b.shapes[a.Tensor])
		}
	}
	op := &ir.Op{Inputs: reads, Stmts: []*ir.Stmt{g.s}, Consts: b.consts}
	op.Source = ir.Print(op)
	var ints map[string]ir.DType
	for _, r := range reads {
		if t, ok := b.ints[r]; ok {
			if ints == nil {
				ints = map[string]ir.DType{}
			}
			ints[r] = t
		}
	}
	_, err := sema.SpecializeTyped(op, b.dtype, shapes, g.ext, ints)
	return err
}

func negVec(a []int64) []int64 {
	out := make([]int64, len(a))
	for i, v := range a {
		out[i] = -v
	}
	return out
}
