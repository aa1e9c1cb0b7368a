package autodiff

import (
	"math/big"

	"github.com/pkg/errors"
)

// lform is Σ z[d]·z_d + Σ u[k]·u_k + c with integer coefficients, where
// z are the indices of the gradient tensor and u the free unknowns.
type lform struct {
	z []int64
	u []int64
	c int64
}

// solution describes every integer solution of M·u = B·z + c:
//
//   - free[k]: u_k is free (it becomes a reduction axis of the gather);
//   - for a dependent u_k: u_k = num[k] / den[k] (den > 0), an integer
//     exactly when num[k] % den[k] == 0 (a divisibility guard);
//   - eqs: conditions lform == 0 over z alone that a solution needs (from
//     rows that elimination reduced to zero; equality guards).
//
// For fixed z and free values, the dependents are determined, so each
// integer solution is enumerated exactly once by looping over the free
// unknowns and keeping the points that satisfy the guards.
type solution struct {
	free []bool
	num  []lform
	den  []int64
	eqs  []lform
}

// solve runs exact Gauss-Jordan elimination over the rationals, pivoting on
// the unknowns in the given order of preference (each on the unused row
// with the smallest nonzero coefficient), then clears denominators. It is
// an exact integer elimination: the divisibility guards num % den == 0
// select exactly the integer points of the solution set. Coefficients are
// big rationals; results must fit int64.
func solve(eqs []spEq, nU, nZ int, order []int) (*solution, error) {
	width := nU + nZ + 1 // unknowns | z | constant, row·(u, -z, -1) = 0
	rows := ratRows(eqs, nU, width)
	used, pivot := gaussJordan(rows, nU, order)

	sol := &solution{free: make([]bool, nU), num: make([]lform, nU), den: make([]int64, nU)}
	for k := range nU {
		sol.free[k] = pivot[k] < 0
	}
	if err := solveDependents(sol, rows, pivot, nU, nZ); err != nil {
		return nil, err
	}
	if err := consistencyRows(sol, rows, used, nU, nZ, width); err != nil {
		return nil, err
	}
	return sol, nil
}

// ratRows writes the equations eqs as rows of big rationals of the given
// width: the unknowns' coefficients, the negated z coefficients, then the
// negated constant.
func ratRows(eqs []spEq, nU, width int) [][]*big.Rat {
	rows := make([][]*big.Rat, len(eqs))
	for i, e := range eqs {
		r := make([]*big.Rat, width)
		for j := range r {
			r[j] = new(big.Rat)
		}
		for k, v := range e.a {
			r[k].SetInt64(v)
		}
		for d, v := range e.z {
			r[nU+d].SetInt64(-v)
		}
		r[width-1].SetInt64(-e.c)
		rows[i] = r
	}
	return rows
}

// gaussJordan eliminates in rows, in place, pivoting on the unknowns in
// order (each on the unused row with the smallest nonzero coefficient),
// and returns which rows were used as pivots and each unknown's pivot row
// (-1 when it has none: it is free).
func gaussJordan(rows [][]*big.Rat, nU int, order []int) ([]bool, []int) {
	used := make([]bool, len(rows))
	pivot := make([]int, nU)
	for k := range pivot {
		pivot[k] = -1
	}
	for _, k := range order {
		best := -1
		var bestAbs *big.Rat
		for i, r := range rows {
			if used[i] || r[k].Sign() == 0 {
				continue
			}
			a := new(big.Rat).Abs(r[k])
			if best < 0 || a.Cmp(bestAbs) < 0 {
				best, bestAbs = i, a
			}
		}
		if best < 0 {
			continue
		}
		used[best] = true
		pivot[k] = best
		p := rows[best]
		inv := new(big.Rat).Inv(p[k])
		for j := range p {
			p[j].Mul(p[j], inv)
		}
		for i, r := range rows {
			if i == best || r[k].Sign() == 0 {
				continue
			}
			f := new(big.Rat).Set(r[k])
			for j := range r {
				r[j].Sub(r[j], new(big.Rat).Mul(f, p[j]))
			}
		}
	}
	return used, pivot
}

// solveDependents writes each dependent unknown of sol from its pivot row
// as an integer numerator over a positive denominator.
func solveDependents(sol *solution, rows [][]*big.Rat, pivot []int, nU, nZ int) error {
	for k := range nU {
		if sol.free[k] {
			continue
		}
		// u_k + Σ_free r_f u_f - Σ z_d (..)  + ... = 0  =>  u_k = -(rest).
		r := rows[pivot[k]]
		var ents []*big.Rat
		for f := range nU {
			if sol.free[f] {
				ents = append(ents, r[f])
			}
		}
		ents = append(ents, r[nU:]...)
		den := lcd(ents)
		lf, err := toLform(r, nU, nZ, sol.free, den, true)
		if err != nil {
			return err
		}
		if !den.IsInt64() {
			return errOverflow
		}
		sol.num[k], sol.den[k] = lf, den.Int64()
	}
	return nil
}

// consistencyRows adds to sol.eqs the conditions on z of the rows that
// were not pivots, and fails when one of them can never hold.
func consistencyRows(sol *solution, rows [][]*big.Rat, used []bool, nU, nZ, width int) error {
	for i, r := range rows {
		if used[i] {
			continue
		}
		zeroZ := true
		for d := range nZ {
			if r[nU+d].Sign() != 0 {
				zeroZ = false
			}
		}
		if zeroZ {
			if r[width-1].Sign() != 0 {
				return errors.Errorf("the index system has no solution")
			}
			continue
		}
		lf, err := toLform(r, nU, nZ, nil, lcd(r[nU:]), false)
		if err != nil {
			return err
		}
		sol.eqs = append(sol.eqs, lf)
	}
	return nil
}

// lcd is the least common multiple of the denominators.
func lcd(xs []*big.Rat) *big.Int {
	l := big.NewInt(1)
	for _, x := range xs {
		d := x.Denom()
		g := new(big.Int).GCD(nil, nil, l, d)
		l.Mul(l, new(big.Int).Quo(d, g))
	}
	return l
}

// toLform scales a row r (r·(u, z, 1) = 0) by den into integers: for a
// pivot row (negate) the numerator of u_k = -(Σ_free r_f·u_f + Σ r_d·z_d
// + r_c); for a consistency row Σ r_d·z_d + r_c, which must be zero.
func toLform(r []*big.Rat, nU, nZ int, free []bool, den *big.Int, negate bool) (lform, error) {
	sc := new(big.Rat).SetInt(den)
	if negate {
		sc.Neg(sc)
	}
	conv := func(x *big.Rat) (int64, error) {
		v := new(big.Rat).Mul(x, sc)
		if !v.IsInt() || !v.Num().IsInt64() {
			return 0, errOverflow
		}
		return v.Num().Int64(), nil
	}
	lf := lform{z: make([]int64, nZ), u: make([]int64, nU)}
	var err error
	for f := range nU {
		if free != nil && free[f] {
			if lf.u[f], err = conv(r[f]); err != nil {
				return lf, err
			}
		}
	}
	for d := range nZ {
		v, err := conv(r[nU+d])
		if err != nil {
			return lf, err
		}
		lf.z[d] = v
	}
	if lf.c, err = conv(r[nU+nZ]); err != nil {
		return lf, err
	}
	return lf, nil
}
