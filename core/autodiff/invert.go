package autodiff

import (
	"fmt"
	"strings"

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

// gather builds the part statement for t: the exact inversion (plain, then
// opaque substitution), else the indicator form. Every candidate is
// checked with sema.Specialize before it is accepted.
func (b *builder) gather(t target) (*gstmt, error) {
	var why string
inversion:
	for _, m := range []subMode{plain, opaque} {
		for _, simp := range []bool{true, false} {
			g, err := b.invert(t, m, simp)
			if err != nil {
				why = err.Error()
				break inversion
			}
			if err := b.validate(g); err != nil {
				why = "the inverted gather does not specialize: " + firstLine(err.Error())
				continue
			}
			return g, nil
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
	return nil, fmt.Errorf("autodiff: cannot differentiate the read %s in statement %d (%s): %v",
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

// invert builds the exact gather: it solves f(x, r) = z for the statement's
// variables (doc.go, "Index inversion").
func (b *builder) invert(t target, m subMode, simp bool) (*gstmt, error) {
	bs := b.spec.Stmts[t.si]
	ls := newLinsys(bs)
	nZ := len(t.acc.Indices)
	shape := b.shapes[t.tensor]
	var eqs []spEq
	var zs []zsym
	for d, ix := range t.acc.Indices {
		a, err := ls.lin(ix)
		if err != nil {
			return nil, err
		}
		eqs = append(eqs, spEq{a: a.u, z: map[int]int64{d: 1}, c: -a.c})
		zs = append(zs, zsym{dim: d, lo: 0, hi: shape[d] - 1})
	}
	eqs, zs = splitRows(ls, eqs, zs)
	eqs = append(eqs, ls.auxEq...)
	nU := len(ls.us)
	sol, err := solve(eqs, nU, len(zs), ls.pivotOrder())
	if err != nil {
		return nil, err
	}

	// Names: A's indices reuse a plain forward variable that solves to
	// exactly that index; free forward variables keep their names.
	taken := b.varTaken(bs)
	zn := make([]string, nZ)
	for d, ix := range t.acc.Indices {
		v, ok := ix.(*ir.Index)
		if !ok {
			continue
		}
		k := ls.byName[v.Name]
		if !sol.free[k] && sol.den[k] == 1 && unitZ(sol.num[k], d) {
			zn[d] = v.Name
		}
	}
	for d := range zn {
		if zn[d] == "" {
			zn[d] = taken.fresh(b.dimHint(t.fwdT, d))
		}
	}
	fname := make([]string, nU)
	shift := make([]int64, nU)
	var red []string
	ext := map[string]int64{}
	for d, n := range zn {
		ext[n] = shape[d]
	}
	for k, u := range ls.us {
		if !sol.free[k] {
			continue
		}
		switch u.kind {
		case kSpatial, kRed:
			fname[k] = u.name
		default:
			fname[k] = taken.fresh(u.name)
			shift[k] = u.lo
		}
		red = append(red, fname[k])
		ext[fname[k]] = u.hi - u.lo + 1
	}

	form := func(lf lform) (ir.Expr, error) {
		var terms []term
		c := lf.c
		for i := range zs {
			terms = append(terms, term{zexpr(zs, i, zn), lf.z[i]})
		}
		for k := range nU {
			if !sol.free[k] || lf.u[k] == 0 {
				continue
			}
			terms = append(terms, term{idx(fname[k]), lf.u[k]})
			s, err := mulChk(lf.u[k], shift[k])
			if err != nil {
				return nil, err
			}
			if c, err = addChk(c, s); err != nil {
				return nil, err
			}
		}
		return linearExpr(terms, c), nil
	}
	dep := func(k int) (ir.Expr, error) {
		n, err := form(sol.num[k])
		if err != nil {
			return nil, err
		}
		switch {
		case sol.den[k] > 1:
			return bin(ir.Div, n, ilit(sol.den[k])), nil
		case m == opaque && !isAtomic(n):
			return bin(ir.Div, n, ilit(1)), nil
		}
		return n, nil
	}
	// interval of a dependent's numerator over A's index ranges and the
	// free unknowns' ranges.
	numRange := func(lf lform) (int64, int64, error) {
		a := aform{c: lf.c, u: map[int]int64{}}
		for k := range nU {
			if sol.free[k] && lf.u[k] != 0 {
				a.u[k] = lf.u[k]
			}
		}
		lo, hi, err := ls.interval(a)
		if err != nil {
			return 0, 0, err
		}
		for i, z := range zs {
			l, err := mulChk(lf.z[i], z.lo)
			if err != nil {
				return 0, 0, err
			}
			h, err := mulChk(lf.z[i], z.hi)
			if err != nil {
				return 0, 0, err
			}
			if h < l {
				l, h = h, l
			}
			if lo, err = addChk(lo, l); err != nil {
				return 0, 0, err
			}
			if hi, err = addChk(hi, h); err != nil {
				return 0, 0, err
			}
		}
		return lo, hi, nil
	}

	// Guards: divisibility, equalities, then the ranges of the dependents.
	var guards []ir.Expr
	for k := range nU {
		if sol.free[k] || sol.den[k] == 1 {
			continue
		}
		n, err := form(sol.num[k])
		if err != nil {
			return nil, err
		}
		guards = append(guards, bin(ir.Eq, bin(ir.Mod, n, ilit(sol.den[k])), ilit(0)))
	}
	for _, e := range sol.eqs {
		guards = append(guards, eqCond(e, zs, zn))
	}
	sub := map[string]ir.Expr{}
	for k, u := range ls.us {
		if sol.free[k] {
			if u.kind == kSpatial || u.kind == kRed {
				sub[u.name] = idx(u.name)
			}
			continue
		}
		e, err := dep(k)
		if err != nil {
			return nil, err
		}
		if u.kind == kSpatial || u.kind == kRed {
			sub[u.name] = e
		}
		if u.kind == kQuo {
			continue // q = floor(e/c) follows from e = c*q + s and s's range
		}
		lo, hi, err := numRange(sol.num[k])
		if err != nil || ir.FloorDiv(lo, sol.den[k]) < u.lo {
			guards = append(guards, bin(ir.Ge, e, ilit(u.lo)))
		}
		if err != nil || ir.FloorDiv(hi, sol.den[k]) > u.hi {
			guards = append(guards, bin(ir.Lt, e, ilit(u.hi+1)))
		}
	}

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
	body = substitute(body, sub)
	if len(guards) > 0 {
		body = where(and(guards), body, zero())
	}
	if simp {
		order := append(append([]string{}, zn...), red...)
		body = simplifyGuards(canonIndex(body, order), ext)
	}
	body, red, err = fixVars(body, red, ext, t.tensor, nZ)
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
	how := "exact inversion"
	if m == opaque {
		how += ", opaque substitution"
	}
	if len(red) > 0 {
		how += "; reduces over " + strings.Join(red, ", ")
	}
	g.note = fmt.Sprintf("through %s (%s)", ir.ExprString(t.acc), how)
	return g, nil
}

// unitZ reports whether lf is exactly z_d.
func unitZ(lf lform, d int) bool {
	if lf.c != 0 {
		return false
	}
	for j, v := range lf.z {
		if (j == d && v != 1) || (j != d && v != 0) {
			return false
		}
	}
	for _, v := range lf.u {
		if v != 0 {
			return false
		}
	}
	return true
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

// indicator builds the always-correct fallback: the gather reduces over
// every variable of the forward statement and keeps the points where the
// read hits the gradient's index, dA[z] += where(f(x, r) == z, contrib, 0).
// It costs a loop over the whole forward iteration space per element of
// dA; a scatter kernel is future work.
func (b *builder) indicator(t target, why string, simp bool) (*gstmt, error) {
	bs := b.spec.Stmts[t.si]
	taken := b.varTaken(bs)
	ext := map[string]int64{}
	var zs []*ir.Index
	var conds []ir.Expr
	for d, ix := range t.acc.Indices {
		n := taken.fresh(b.dimHint(t.fwdT, d))
		zs = append(zs, idx(n))
		ext[n] = b.shapes[t.tensor][d]
		conds = append(conds, bin(ir.Eq, ix, idx(n)))
	}
	var red []string
	for _, vs := range [][]ir.Var{bs.Spatial, bs.Reduction} {
		for _, v := range vs {
			red = append(red, v.Name)
			ext[v.Name] = v.Extent
		}
	}
	body := t.contrib
	if len(conds) > 0 {
		body = where(and(conds), body, zero())
	}
	if simp {
		body = simplifyGuards(body, ext)
	}
	body, red, err := fixVars(body, red, ext, t.tensor, len(t.acc.Indices))
	if err != nil {
		return nil, err
	}
	g := &gstmt{s: &ir.Stmt{Tensor: t.dst, Indices: zs, Reduce: ir.Assign, RHS: body}, ext: ext}
	if len(red) > 0 {
		g.s.Reduce = ir.Sum
	}
	g.note = fmt.Sprintf("through %s (indicator fallback over the whole forward iteration space: %s)",
		ir.ExprString(t.acc), why)
	return g, nil
}

// fixVars makes every reduction variable of a gather legal for sema, which
// needs each variable inside some tensor access. A variable left only in
// guards (it selects how many points contribute, not what they add) gets
// a read in a branch that never runs, body + where(v < 0, A[v, 0, ...],
// 0.0), where A is the differentiated tensor; the condition names v, so
// sema infers no extent from that read and proves nothing under it. A
// variable used nowhere is summed out by scaling the body by its extent.
func fixVars(body ir.Expr, red []string, ext map[string]int64, tensor string, rank int) (ir.Expr, []string, error) {
	inAcc := accessVars(body)
	used := map[string]bool{}
	for _, v := range varsOf(body) {
		used[v] = true
	}
	var anchors ir.Expr
	var never []ir.Expr
	for _, v := range red {
		if inAcc[v] || !used[v] {
			continue
		}
		if rank == 0 {
			return nil, nil, fmt.Errorf("index %s is used only in guards", v)
		}
		a := &ir.Access{Tensor: tensor, Indices: []ir.Expr{idx(v)}}
		for range rank - 1 {
			a.Indices = append(a.Indices, ilit(0))
		}
		anchors = addAnchor(anchors, a)
		never = append(never, bin(ir.Lt, idx(v), ilit(0)))
	}
	if anchors != nil {
		body = bin(ir.Add, body, where(and(never), anchors, zero()))
	}
	used = map[string]bool{}
	for _, v := range varsOf(body) {
		used[v] = true
	}
	scale := int64(1)
	var keep []string
	for _, v := range red {
		if used[v] {
			keep = append(keep, v)
			continue
		}
		p, err := mulChk(scale, ext[v])
		if err != nil || p > 1<<53 {
			return nil, nil, fmt.Errorf("reduction over unused indices too large to scale")
		}
		scale = p
		delete(ext, v)
	}
	if scale != 1 {
		body = mul(body, flit(float64(scale)))
	}
	return body, keep, nil
}

func addAnchor(acc, a ir.Expr) ir.Expr {
	if acc == nil {
		return a
	}
	return bin(ir.Add, acc, a)
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
	_, err := sema.Specialize(op, b.dtype, shapes, g.ext)
	return err
}
