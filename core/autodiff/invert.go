package autodiff

import (
	"errors"
	"fmt"
	"math"
	"slices"
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

// invert builds the exact gather by Gauss-Jordan elimination: it solves
// f(x, r) = z for the statement's variables (doc.go, "Index inversion").
func (b *builder) invert(t target, m subMode, simp bool) (*gstmt, error) {
	return b.eliminate(t, m, simp, false)
}

// errNoStep says that no dependent of an elimination can be stepped.
var errNoStep = errors.New("no divisibility guard to step over")

// invertStepped is invert with residue stepping (doc.go, "Index
// inversion", step 4): a free unknown f that a dependent u = N / D uses
// with coefficient ±1 steps through the one residue class mod D that
// makes N divisible, so the gather visits only the points that
// contribute and needs no divisibility guard. Without such a dependent it
// fails with errNoStep, and gather goes on to the plain elimination.
func (b *builder) invertStepped(t target, m subMode, simp bool) (*gstmt, error) {
	return b.eliminate(t, m, simp, true)
}

// step is one residue step: dependent k = (a + sigma·f) / den, with free
// unknown f (loop variable fname[f], 0 <= fname[f] < extent) replaced by
// res + den·w over a new reduction variable w.
type step struct {
	k, f  int
	sigma int64
}

// steps picks the residue steps of sol: each dependent with den > 1 steps
// over the first free unknown it uses with coefficient ±1 that no other
// step uses; a step's dependent may not use another step's unknown, so
// every residue is an expression of z and unstepped free unknowns.
func steps(sol *solution) []step {
	var out []step
	for k := range sol.free {
		if sol.free[k] || sol.den[k] == 1 {
			continue
		}
		num := sol.num[k]
		f := -1
		for j, c := range num.u {
			if sol.free[j] && (c == 1 || c == -1) && !slices.ContainsFunc(out, func(s step) bool { return s.f == j }) {
				f = j
				break
			}
		}
		if f < 0 || slices.ContainsFunc(out, func(s step) bool { return num.u[s.f] != 0 || sol.num[s.k].u[f] != 0 }) {
			continue
		}
		out = append(out, step{k: k, f: f, sigma: num.u[f]})
	}
	return out
}

// stepForms builds the residue and the dependent of step st over the new
// variable w: with a the numerator num without its f term (f's shift
// folded into the constant), res = a % d and a / d - w for sigma -1, or
// res = -a % d and (a + d - 1) / d + w for sigma +1.
func stepForms(num lform, st step, d, shift int64, w string, form func(lform) (ir.Expr, error)) (res, dep ir.Expr, err error) {
	a := lform{z: num.z, u: slices.Clone(num.u), c: num.c}
	a.u[st.f] = 0
	c, err := mulChk(st.sigma, shift)
	if err != nil {
		return nil, nil, err
	}
	if a.c, err = addChk(a.c, c); err != nil {
		return nil, nil, err
	}
	if st.sigma < 0 {
		ae, err := form(a)
		if err != nil {
			return nil, nil, err
		}
		return bin(ir.Mod, ae, ilit(d)), bin(ir.Sub, bin(ir.Div, ae, ilit(d)), idx(w)), nil
	}
	if a.c == math.MinInt64 {
		return nil, nil, errors.New("residue step: the constant overflows int64")
	}
	ne, err := form(lform{z: negVec(a.z), u: negVec(a.u), c: -a.c})
	if err != nil {
		return nil, nil, err
	}
	up := a
	if up.c, err = addChk(a.c, d-1); err != nil {
		return nil, nil, err
	}
	ue, err := form(up)
	if err != nil {
		return nil, nil, err
	}
	return bin(ir.Mod, ne, ilit(d)), bin(ir.Add, bin(ir.Div, ue, ilit(d)), idx(w)), nil
}

// eliminate is invert, with residue stepping when stepped is set.
func (b *builder) eliminate(t target, m subMode, simp, stepped bool) (*gstmt, error) {
	bs := b.spec.Stmts[t.si]
	ls, eqs, zs, err := b.system(t)
	if err != nil {
		return nil, err
	}
	shape := b.shapes[t.tensor]
	nU := len(ls.us)
	sol, err := solve(eqs, nU, len(zs), ls.pivotOrder())
	if err != nil {
		return nil, err
	}

	// Names: A's indices reuse a plain forward variable that solves to
	// exactly that index; free forward variables keep their names.
	taken := b.varTaken(bs)
	zn := b.zNames(t, ls, taken, func(k, d int) bool {
		return !sol.free[k] && sol.den[k] == 1 && unitZ(sol.num[k], d)
	})
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
	// Residue steps: f = res + den·w, where res = a mod den for sigma -1
	// (-a mod den for +1) and a is the numerator without its f term; the
	// dependent becomes a / den - w (sigma -1) or (a + den - 1) / den + w
	// (+1), exactly, and res + den·w < extent(f) is a guard unless den
	// divides the extent. fsub rewrites f in every other expression.
	var stepsTaken []step
	fsub := map[string]ir.Expr{}
	stepExpr := map[int]ir.Expr{}
	var stepGuards []ir.Expr
	if stepped {
		stepsTaken = steps(sol)
		if len(stepsTaken) == 0 {
			return nil, errNoStep
		}
		for _, st := range stepsTaken {
			d := sol.den[st.k]
			fn := fname[st.f]
			w := taken.fresh(fn + "_step")
			res, dep, err := stepForms(sol.num[st.k], st, d, shift[st.f], w, form)
			if err != nil {
				return nil, err
			}
			stepExpr[st.k] = dep
			e := ext[fn]
			fe := bin(ir.Add, res, bin(ir.Mul, ilit(d), idx(w)))
			fsub[fn] = fe
			if e%d != 0 {
				stepGuards = append(stepGuards, bin(ir.Lt, fe, ilit(e)))
			}
			delete(ext, fn)
			ext[w] = (e + d - 1) / d
			red[slices.Index(red, fn)] = w
		}
	}
	isStepped := func(k int) bool { _, ok := stepExpr[k]; return ok }

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
	guards := stepGuards
	for k := range nU {
		if sol.free[k] || sol.den[k] == 1 || isStepped(k) {
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
		if se, ok := stepExpr[k]; ok {
			e = se
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
	how := "exact inversion"
	if len(stepsTaken) > 0 {
		for n, e := range sub {
			sub[n] = substitute(e, fsub)
		}
		for i, g := range guards {
			guards[i] = substitute(g, fsub)
		}
		var names []string
		for _, st := range stepsTaken {
			names = append(names, fmt.Sprintf("%s = %s", fname[st.f], ir.ExprString(fsub[fname[st.f]])))
		}
		how += ", residue stepping " + strings.Join(names, ", ")
	}

	return b.finishGather(t, zn, red, ext, sub, guards, m, simp, how)
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
	body = substitute(body, sub)
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
// core/loops lowers this shape as a serial scatter (see doc.go).
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
		body = where(ir.AndAll(conds), body, zero())
	}
	if simp {
		body = simplifyGuards(body, ext)
	}
	body, red, err := fixVars(body, red, ext, t.tensor, len(t.acc.Indices), b.rhs[t.si])
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
// sema infers no extent from that read and proves nothing under it (when
// A is a scalar, the read is of another tensor the body reads, else of one
// the forward right-hand side fwd reads; the extent then comes from the
// gradient op's Sizes). A variable used nowhere
// is summed out by scaling the body by its extent.
func fixVars(body ir.Expr, red []string, ext map[string]int64, tensor string, rank int, fwd ir.Expr) (ir.Expr, []string, error) {
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
		at, n := tensor, rank
		if n == 0 { // a scalar has no index to hold v: anchor it in another tensor the body reads
			at, n = anchorTensor(body)
			if n == 0 {
				at, n = anchorTensor(fwd)
			}
			if n == 0 {
				return nil, nil, fmt.Errorf("index %s is used only in guards", v)
			}
		}
		a := &ir.Access{Tensor: at, Indices: []ir.Expr{idx(v)}}
		for range n - 1 {
			a.Indices = append(a.Indices, ilit(0))
		}
		anchors = addAnchor(anchors, a)
		never = append(never, bin(ir.Lt, idx(v), ilit(0)))
	}
	if anchors != nil {
		body = bin(ir.Add, body, where(ir.AndAll(never), anchors, zero()))
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

// anchorTensor is a tensor of rank 1 or more that body reads, and its rank
// (0 when there is none).
func anchorTensor(body ir.Expr) (string, int) {
	for _, a := range accessesOf(body) {
		if len(a.Indices) > 0 {
			return a.Tensor, len(a.Indices)
		}
	}
	return "", 0
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

// invertSNF builds the exact gather through the Smith normal form of the
// index system, the general method for quasi-affine reads (doc.go, "Index
// inversion", step 5): u = V·y, y_i = p_i(z) / d_i under the guard
// p_i(z) % d_i == 0 for i < rank, p_i(z) == 0 for the other rows, and the
// free y_j (new reduction axes t, t_1, ...) range over the constant bounds
// that Fourier–Motzkin elimination (fm.go) finds for them from the
// unknowns' ranges, over the whole box of A's indices. The bounds
// lo <= u_k <= hi of every forward variable and remainder that the ranges
// do not imply stay as guards.
func (b *builder) invertSNF(t target, m subMode, simp bool) (*gstmt, error) {
	bs := b.spec.Stmts[t.si]
	ls, eqs, zs, err := b.system(t)
	if err != nil {
		return nil, err
	}
	nZ := len(zs)
	sol, err := solveSNF(eqs, len(ls.us), nZ)
	if err != nil {
		return nil, err
	}
	r, n := sol.rank, len(sol.cols)
	nT := n - r
	inconsistent := false // a row 0 = c != 0: no solution for any z
	for i := r; i < len(sol.p); i++ {
		if isZeroVec(sol.p[i].z) && sol.p[i].c != 0 {
			inconsistent = true
		}
	}

	// Ranges of the free y_j. Variables: z (the symbols, in their box),
	// y_0..y_(n-1). Constraints: p_i(z) = 0 (rows >= rank); the bounds
	// lo_k <= (V·y)_k <= hi_k of every unknown; the box of each free y_j
	// that y = V⁻¹·u gives from the unknowns' bounds (so the result is
	// bounded even if Fourier–Motzkin has to relax). The determined y_i are
	// substituted exactly with d_i·y_i = p_i(z), then Fourier–Motzkin
	// eliminates z and the other free y_j.
	ranges := func() ([][2]int64, error) {
		var err error
		fm := newFM(nZ + n)
		for i, z := range zs {
			if err := fm.addBox(i, z.lo, z.hi); err != nil {
				return nil, err
			}
		}
		for i := r; i < len(sol.p); i++ {
			p := sol.p[i]
			a := make([]int64, nZ+n)
			copy(a, p.z)
			if err := fm.add(ineq{a: a, c: p.c}); err != nil {
				return nil, err
			}
			if err := fm.add(ineq{a: negVec(a), c: -p.c}); err != nil {
				return nil, err
			}
		}
		for ci, k := range sol.cols {
			a := make([]int64, nZ+n)
			copy(a[nZ:], sol.v[ci])
			u := ls.us[k]
			if err := fm.add(ineq{a: a, c: -u.lo}); err != nil {
				return nil, err
			}
			if err := fm.add(ineq{a: negVec(a), c: u.hi}); err != nil {
				return nil, err
			}
		}
		for j := r; j < n; j++ {
			lo, hi := int64(0), int64(0)
			for ci, k := range sol.cols {
				if lo, hi, err = addTerm(lo, hi, sol.vinv[j][ci], ls.us[k].lo, ls.us[k].hi); err != nil {
					return nil, err
				}
			}
			if err := fm.addBox(nZ+j, lo, hi); err != nil {
				return nil, err
			}
		}
		for i := range r {
			// d_i·y_i - p_i(z) = 0
			a := make([]int64, nZ+n)
			for d, v := range sol.p[i].z {
				a[d] = -v
			}
			a[nZ+i] = sol.d[i]
			if err := fm.substitute(nZ+i, ineq{a: a, c: -sol.p[i].c}); err != nil {
				return nil, err
			}
		}
		var keep []int
		for j := range nT {
			keep = append(keep, nZ+r+j)
		}
		return fmRanges(fm, keep)
	}
	var rng [][2]int64
	if !inconsistent {
		rng, err = ranges()
	}
	empty := inconsistent || errors.Is(err, errEmpty)
	if empty {
		// No solution in range: the gather is zero. It is built all the
		// same, under a guard that never holds, with one-point ranges.
		rng, err = make([][2]int64, nT), nil
	}
	if err != nil {
		return nil, err
	}

	// Each unknown in the system as Σ z-terms + Σ atoms (y_i = p_i / d_i,
	// d_i > 1) + Σ t-terms + c, with y_i = p_i substituted where d_i == 1
	// and t_j shifted to start at 0.
	type uform struct {
		z, atom, t []int64
		c          int64
	}
	forms := map[int]uform{}
	for ci, k := range sol.cols {
		f := uform{z: make([]int64, nZ), atom: make([]int64, r), t: make([]int64, nT)}
		for i := range r {
			v := sol.v[ci][i]
			switch {
			case v == 0:
			case sol.d[i] > 1:
				f.atom[i] = v
			default:
				for d := range nZ {
					if f.z[d], err = axpyChk(f.z[d], v, sol.p[i].z[d]); err != nil {
						return nil, err
					}
				}
				if f.c, err = axpyChk(f.c, v, sol.p[i].c); err != nil {
					return nil, err
				}
			}
		}
		for j := range nT {
			f.t[j] = sol.v[ci][r+j]
			if f.c, err = axpyChk(f.c, f.t[j], rng[j][0]); err != nil {
				return nil, err
			}
		}
		forms[k] = f
	}

	taken := b.varTaken(bs)
	zn := b.zNames(t, ls, taken, func(k, d int) bool {
		f, ok := forms[k]
		if !ok || f.c != 0 || !isZeroVec(f.atom) || !isZeroVec(f.t) {
			return false
		}
		for e, v := range f.z {
			want := int64(0)
			if e == d {
				want = 1
			}
			if v != want {
				return false
			}
		}
		return true
	})
	shape := b.shapes[t.tensor]
	ext := map[string]int64{}
	for d, nm := range zn {
		ext[nm] = shape[d]
	}
	var red []string
	sub := map[string]ir.Expr{}
	for k, u := range ls.us {
		if _, ok := forms[k]; !ok && (u.kind == kSpatial || u.kind == kRed) {
			// In no row: unconstrained, free under its own name.
			red = append(red, u.name)
			ext[u.name] = u.hi - u.lo + 1
			sub[u.name] = idx(u.name)
		}
	}
	tn := make([]string, nT)
	for j := range nT {
		tn[j] = taken.fresh("t")
		red = append(red, tn[j])
		ext[tn[j]] = rng[j][1] - rng[j][0] + 1
	}

	zlin := func(lf lform) ir.Expr {
		var terms []term
		for i := range zs {
			terms = append(terms, term{zexpr(zs, i, zn), lf.z[i]})
		}
		return linearExpr(terms, lf.c)
	}
	// ranges of the z-affine parts, over the box, as sema bounds them.
	zrange := func(zc []int64, c int64) (lo, hi int64, err error) {
		lo, hi = c, c
		for i, z := range zs {
			if lo, hi, err = addTerm(lo, hi, zc[i], z.lo, z.hi); err != nil {
				return 0, 0, err
			}
		}
		return lo, hi, nil
	}
	atoms := make([]ir.Expr, r)
	alo, ahi := make([]int64, r), make([]int64, r)
	var guards []ir.Expr
	if empty {
		guards = append(guards, never())
	}
	for i := range r {
		if sol.d[i] == 1 {
			continue
		}
		pe := zlin(sol.p[i])
		atoms[i] = bin(ir.Div, pe, ilit(sol.d[i]))
		lo, hi, err := zrange(sol.p[i].z, sol.p[i].c)
		if err != nil {
			return nil, err
		}
		alo[i], ahi[i] = ir.FloorDiv(lo, sol.d[i]), ir.FloorDiv(hi, sol.d[i])
		// p_i % d_i == 0, with p_i's coefficients reduced modulo d_i.
		pr := lform{z: make([]int64, nZ), c: ir.FloorMod(sol.p[i].c, sol.d[i])}
		for d, v := range sol.p[i].z {
			pr.z[d] = ir.FloorMod(v, sol.d[i])
		}
		guards = append(guards, bin(ir.Eq, bin(ir.Mod, zlin(pr), ilit(sol.d[i])), ilit(0)))
	}
	for i := r; i < len(sol.p); i++ {
		if !isZeroVec(sol.p[i].z) {
			guards = append(guards, eqCond(sol.p[i], zs, zn))
		}
	}
	for k, u := range ls.us {
		f, ok := forms[k]
		if !ok {
			continue
		}
		var terms []term
		for i := range zs {
			terms = append(terms, term{zexpr(zs, i, zn), f.z[i]})
		}
		lo, hi, err := zrange(f.z, f.c)
		if err != nil {
			return nil, err
		}
		for i := range r {
			if f.atom[i] != 0 {
				terms = append(terms, term{atoms[i], f.atom[i]})
				if lo, hi, err = addTerm(lo, hi, f.atom[i], alo[i], ahi[i]); err != nil {
					return nil, err
				}
			}
		}
		for j := range nT {
			if f.t[j] != 0 {
				terms = append(terms, term{idx(tn[j]), f.t[j]})
				if lo, hi, err = addTerm(lo, hi, f.t[j], 0, rng[j][1]-rng[j][0]); err != nil {
					return nil, err
				}
			}
		}
		e := linearExpr(terms, f.c)
		if m == opaque && !isAtomic(e) {
			e = bin(ir.Div, e, ilit(1))
		}
		if u.kind == kSpatial || u.kind == kRed {
			sub[u.name] = e
		}
		if u.kind == kQuo {
			continue // q = floor(e/c) follows from e = c*q + s and s's range
		}
		if lo < u.lo {
			guards = append(guards, bin(ir.Ge, e, ilit(u.lo)))
		}
		if hi > u.hi {
			guards = append(guards, bin(ir.Lt, e, ilit(u.hi+1)))
		}
	}
	return b.finishGather(t, zn, red, ext, sub, guards, m, simp, "exact inversion (Smith normal form)")
}

// addTerm adds k·[l, h] to the interval [lo, hi].
func addTerm(lo, hi, k, l, h int64) (int64, int64, error) {
	a, err := mulChk(k, l)
	if err != nil {
		return 0, 0, err
	}
	c, err := mulChk(k, h)
	if err != nil {
		return 0, 0, err
	}
	if c < a {
		a, c = c, a
	}
	if lo, err = addChk(lo, a); err != nil {
		return 0, 0, err
	}
	if hi, err = addChk(hi, c); err != nil {
		return 0, 0, err
	}
	return lo, hi, nil
}

func negVec(a []int64) []int64 {
	out := make([]int64, len(a))
	for i, v := range a {
		out[i] = -v
	}
	return out
}
