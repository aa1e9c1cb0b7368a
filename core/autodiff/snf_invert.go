package autodiff

import (
	"github.com/pkg/errors"

	"github.com/neoflow/neoflow/core/ir"
)

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

	var rng [][2]int64
	if !inconsistent {
		rng, err = snfRanges(ls, zs, sol, nZ, r, n, nT)
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

	forms, err := snfForms(sol, rng, nZ, r, nT)
	if err != nil {
		return nil, err
	}

	taken := b.varTaken(bs)
	zn := b.zNames(t, ls, taken, snfExact(forms))
	shape := b.shapes[t.tensor]
	ext, red, sub, tn := snfNames(ls, forms, zn, shape, taken, rng, nT)

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
	var guards []ir.Expr
	if empty {
		guards = append(guards, never())
	}
	atoms, alo, ahi, guards, err := snfDivGuards(sol, zs, zn, nZ, r, zlin, zrange, guards)
	if err != nil {
		return nil, err
	}
	if guards, err = snfSubst(ls, forms, zs, zn, r, nT, rng, tn, atoms, alo, ahi, m, zrange, sub, guards); err != nil {
		return nil, err
	}
	return b.finishGather(t, zn, red, ext, sub, guards, m, simp, "exact inversion (Smith normal form)")
}

// snfRanges computes the ranges of the free y_j. Variables: z (the
// symbols, in their box), y_0..y_(n-1). Constraints: p_i(z) = 0 (rows >=
// rank); the bounds lo_k <= (V·y)_k <= hi_k of every unknown; the box of
// each free y_j that y = V⁻¹·u gives from the unknowns' bounds (so the
// result is bounded even if Fourier–Motzkin has to relax). The determined
// y_i are substituted exactly with d_i·y_i = p_i(z), then Fourier–Motzkin
// eliminates z and the other free y_j.
func snfRanges(ls *linsys, zs []zsym, sol *snfSolution, nZ, r, n, nT int) ([][2]int64, error) {
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

// uform is an unknown of the SNF system written as Σ z-terms + Σ atoms
// (y_i = p_i / d_i, d_i > 1) + Σ t-terms + c, with y_i = p_i substituted
// where d_i == 1 and t_j shifted to start at 0.
type uform struct {
	z, atom, t []int64
	c          int64
}

// snfForms writes every unknown of the system that the solution covers
// (sol.cols) as a uform, over the ranges rng of the free y_j.
func snfForms(sol *snfSolution, rng [][2]int64, nZ, r, nT int) (map[int]uform, error) {
	var err error
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
	return forms, nil
}

// snfExact says, for zNames, whether unknown k (in forms) is exactly z_d.
func snfExact(forms map[int]uform) func(k, d int) bool {
	return func(k, d int) bool {
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
	}
}

// snfNames gives the gather its variables and their extents: A's indices
// zn, the forward variables in no row of the system (free reduction axes
// under their own names, in sub as themselves), and a new reduction axis
// tn[j] for each free y_j.
func snfNames(ls *linsys, forms map[int]uform, zn []string, shape []int64, taken nameSet, rng [][2]int64,
	nT int) (map[string]int64, []string, map[string]ir.Expr, []string) {
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
	return ext, red, sub, tn
}

// snfDivGuards writes each y_i = p_i / d_i with d_i > 1 as an atom, with
// its range [alo[i], ahi[i]] over the box, and appends to guards its
// divisibility guard p_i % d_i == 0, then the equality guards p_i == 0 of
// the rows past the rank.
func snfDivGuards(sol *snfSolution, zs []zsym, zn []string, nZ, r int, zlin func(lf lform) ir.Expr,
	zrange func(zc []int64, c int64) (int64, int64, error), guards []ir.Expr) ([]ir.Expr, []int64, []int64, []ir.Expr, error) {
	atoms := make([]ir.Expr, r)
	alo, ahi := make([]int64, r), make([]int64, r)
	for i := range r {
		if sol.d[i] == 1 {
			continue
		}
		pe := zlin(sol.p[i])
		atoms[i] = bin(ir.Div, pe, ilit(sol.d[i]))
		lo, hi, err := zrange(sol.p[i].z, sol.p[i].c)
		if err != nil {
			return nil, nil, nil, nil, err
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
	return atoms, alo, ahi, guards, nil
}

// snfSubst maps each forward variable that the solution covers to its
// expression in A's indices, the atoms and the new axes tn (in sub), and
// appends to guards the bounds of every unknown that the ranges of its
// terms do not imply.
func snfSubst(ls *linsys, forms map[int]uform, zs []zsym, zn []string, r, nT int, rng [][2]int64, tn []string,
	atoms []ir.Expr, alo, ahi []int64, m subMode, zrange func(zc []int64, c int64) (int64, int64, error),
	sub map[string]ir.Expr, guards []ir.Expr) ([]ir.Expr, error) {
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
	return guards, nil
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
