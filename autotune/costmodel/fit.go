package costmodel

import (
	"math"

	"github.com/pkg/errors"

	"gonum.org/v1/gonum/mat"
)

// constantTol: a column whose std is at most constantTol·max(1, |mean|) is
// treated as constant.
const constantTol = 1e-12

// Fit refits the model on every accepted observation. With fewer than 2
// observations it leaves the model unfitted (Predict returns zeros) and
// returns nil. On error the previous fit is kept.
func (m *Ridge) Fit() error {
	m.dirty = false
	n := len(m.y)
	if n < 2 {
		return nil
	}
	d := len(m.x[0])
	mean, scale := standardize(m.x)

	// Z = [1 | standardized features], n × (d+1).
	z := mat.NewDense(n, d+1, nil)
	for i, row := range m.x {
		z.Set(i, 0, 1)
		for j, v := range row {
			z.Set(i, j+1, (v-mean[j])*scale[j])
		}
	}
	// A = ZᵀZ + λ·diag(0, 1, …, 1): the intercept is not penalized.
	var a mat.SymDense
	a.SymOuterK(1, z.T())
	for j := 1; j <= d; j++ {
		a.SetSym(j, j, a.At(j, j)+m.lambda)
	}
	var rhs, sol mat.VecDense
	rhs.MulVec(z.T(), mat.NewVecDense(n, m.y))

	if err := solve(&a, &rhs, &sol); err != nil {
		return err
	}
	w := make([]float64, d)
	for j := range w {
		w[j] = sol.AtVec(j + 1)
	}
	if !finite(w) || !finite([]float64{sol.AtVec(0)}) {
		return errors.New("costmodel: ridge solution is not finite")
	}
	m.fitted, m.mean, m.scale, m.w, m.intercept = true, mean, scale, w, sol.AtVec(0)
	return nil
}

// solve solves a·x = b by Cholesky, falling back to a general solve when
// the factorization fails. A mat.Condition error (ill-conditioned but
// solved) is not an error.
func solve(a *mat.SymDense, b, x *mat.VecDense) error {
	var ch mat.Cholesky
	var err error
	if ch.Factorize(a) {
		err = ch.SolveVecTo(x, b)
	} else {
		err = x.SolveVec(a, b)
	}
	var cond mat.Condition
	if err != nil && !errors.As(err, &cond) {
		return errors.Wrap(err, "costmodel: ridge solve")
	}
	return nil
}

// standardize returns each column's mean and 1/std (population std), with
// scale 0 for a constant column so that it contributes nothing.
func standardize(x [][]float64) (mean, scale []float64) {
	n, d := float64(len(x)), len(x[0])
	mean = make([]float64, d)
	scale = make([]float64, d)
	for _, row := range x {
		for j, v := range row {
			mean[j] += v
		}
	}
	for j := range mean {
		mean[j] /= n
	}
	for _, row := range x {
		for j, v := range row {
			dv := v - mean[j]
			scale[j] += dv * dv
		}
	}
	for j := range scale {
		std := math.Sqrt(scale[j] / n)
		scale[j] = 0
		if std > constantTol*max(1, math.Abs(mean[j])) {
			scale[j] = 1 / std
		}
	}
	return mean, scale
}
