package autodiff

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/pkg/errors"

	"github.com/neoflow/neoflow/core/ir"
)

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

	form := formOf(zs, zn, sol, nU, fname, shift)
	dep := depOf(sol, m, form)
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
		if stepsTaken, stepGuards, err = residueSteps(sol, taken, fname, shift, form, ext, red, fsub, stepExpr); err != nil {
			return nil, err
		}
	}
	isStepped := func(k int) bool { _, ok := stepExpr[k]; return ok }

	// interval of a dependent's numerator over A's index ranges and the
	// free unknowns' ranges.
	numRange := numRangeOf(ls, zs, sol, nU)

	// Guards: divisibility, equalities, then the ranges of the dependents.
	guards, err := divGuards(stepGuards, sol, nU, zs, zn, form, isStepped)
	if err != nil {
		return nil, err
	}
	sub, guards, err := depSubst(ls, sol, dep, stepExpr, numRange, guards)
	if err != nil {
		return nil, err
	}
	how := "exact inversion"
	if len(stepsTaken) > 0 {
		for n, e := range sub {
			sub[n] = ir.SubstIndex(e, fsub)
		}
		for i, g := range guards {
			guards[i] = ir.SubstIndex(g, fsub)
		}
		var names []string
		for _, st := range stepsTaken {
			names = append(names, fmt.Sprintf("%s = %s", fname[st.f], ir.ExprString(fsub[fname[st.f]])))
		}
		how += ", residue stepping " + strings.Join(names, ", ")
	}

	return b.finishGather(t, zn, red, ext, sub, guards, m, simp, how)
}

// formOf returns form, which writes a linear form lf over A's indices
// (named zn) and the free unknowns (the loop variables fname, shifted by
// shift to start at 0) as an index expression.
func formOf(zs []zsym, zn []string, sol *solution, nU int, fname []string, shift []int64) func(lf lform) (ir.Expr, error) {
	return func(lf lform) (ir.Expr, error) {
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
}

// depOf returns dep, which writes dependent unknown k as num[k] / den[k]
// (or num[k] alone when den[k] is 1, wrapped as num[k] / 1 under opaque
// substitution).
func depOf(sol *solution, m subMode, form func(lform) (ir.Expr, error)) func(k int) (ir.Expr, error) {
	return func(k int) (ir.Expr, error) {
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
}

// residueSteps takes the residue steps of sol (steps): each stepped free
// unknown f becomes res + den·w over a new reduction variable w, in fsub,
// in red and in ext, and its dependent's expression goes to stepExpr. It
// returns the steps and the guards res + den·w < extent(f) that they need,
// or errNoStep when sol has no step to take.
func residueSteps(sol *solution, taken nameSet, fname []string, shift []int64, form func(lform) (ir.Expr, error),
	ext map[string]int64, red []string, fsub map[string]ir.Expr, stepExpr map[int]ir.Expr) ([]step, []ir.Expr, error) {
	var stepGuards []ir.Expr
	stepsTaken := steps(sol)
	if len(stepsTaken) == 0 {
		return nil, nil, errNoStep
	}
	for _, st := range stepsTaken {
		d := sol.den[st.k]
		fn := fname[st.f]
		w := taken.fresh(fn + "_step")
		res, dep, err := stepForms(sol.num[st.k], st, d, shift[st.f], w, form)
		if err != nil {
			return nil, nil, err
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
	return stepsTaken, stepGuards, nil
}

// numRangeOf returns numRange, the interval of a dependent's numerator over
// A's index ranges and the free unknowns' ranges.
func numRangeOf(ls *linsys, zs []zsym, sol *solution, nU int) func(lf lform) (int64, int64, error) {
	return func(lf lform) (int64, int64, error) {
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
}

// divGuards appends to the step guards the divisibility guard of each
// dependent that is not stepped and the equality guards of sol.
func divGuards(stepGuards []ir.Expr, sol *solution, nU int, zs []zsym, zn []string,
	form func(lform) (ir.Expr, error), isStepped func(k int) bool) ([]ir.Expr, error) {
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
	return guards, nil
}

// depSubst maps each forward variable to its expression in the gather (a
// free one to itself, a dependent to dep or its stepped form) and appends
// to guards the range guards of the dependents that their numerators'
// ranges do not imply.
func depSubst(ls *linsys, sol *solution, dep func(k int) (ir.Expr, error), stepExpr map[int]ir.Expr,
	numRange func(lf lform) (int64, int64, error), guards []ir.Expr) (map[string]ir.Expr, []ir.Expr, error) {
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
			return nil, nil, err
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
	return sub, guards, nil
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
