package autodiff

import (
	"math"
	"math/big"
	"slices"

	"github.com/pkg/errors"
)

// Smith normal form over int64. For an integer matrix M (m×n) it finds
// unimodular U (m×m) and V (n×n) with S = U·M·V diagonal, S_ii > 0 for
// i < rank, S_ii | S_(i+1)(i+1), and every other entry zero. All
// arithmetic is checked: a result that would leave int64 is errOverflow
// (MinInt64 counts as overflow, so every entry can be negated).

// imat is a dense integer matrix, row-major.
type imat [][]int64

func newIMat(m, n int) imat {
	a := make(imat, m)
	for i := range a {
		a[i] = make([]int64, n)
	}
	return a
}

func identity(n int) imat {
	a := newIMat(n, n)
	for i := range n {
		a[i][i] = 1
	}
	return a
}

func (a imat) clone() imat {
	b := make(imat, len(a))
	for i, r := range a {
		b[i] = append([]int64(nil), r...)
	}
	return b
}

// mul is a·b with checked arithmetic.
func (a imat) mul(b imat) (imat, error) {
	if len(a) == 0 {
		return imat{}, nil
	}
	n := 0
	if len(b) > 0 {
		n = len(b[0])
	}
	out := newIMat(len(a), n)
	for i := range a {
		for j := range n {
			var s int64
			for k := range b {
				p, err := mulChk(a[i][k], b[k][j])
				if err != nil {
					return nil, err
				}
				if s, err = addChk(s, p); err != nil {
					return nil, err
				}
			}
			out[i][j] = s
		}
	}
	return out, nil
}

// axpyChk is x + k·y, rejecting MinInt64 as well as overflow.
func axpyChk(x, k, y int64) (int64, error) {
	p, err := mulChk(k, y)
	if err != nil {
		return 0, err
	}
	s, err := addChk(x, p)
	if err != nil || s == math.MinInt64 {
		return 0, errOverflow
	}
	return s, nil
}

// rowAxpy adds k times row src to row dst.
func (a imat) rowAxpy(dst, src int, k int64) error {
	for j := range a[dst] {
		v, err := axpyChk(a[dst][j], k, a[src][j])
		if err != nil {
			return err
		}
		a[dst][j] = v
	}
	return nil
}

// colAxpy adds k times column src to column dst.
func (a imat) colAxpy(dst, src int, k int64) error {
	for i := range a {
		v, err := axpyChk(a[i][dst], k, a[i][src])
		if err != nil {
			return err
		}
		a[i][dst] = v
	}
	return nil
}

func (a imat) swapRows(i, j int) { a[i], a[j] = a[j], a[i] }

func (a imat) swapCols(i, j int) {
	for _, r := range a {
		r[i], r[j] = r[j], r[i]
	}
}

func (a imat) negRow(i int) {
	for j := range a[i] {
		a[i][j] = -a[i][j]
	}
}

func (a imat) negCol(j int) {
	for _, r := range a {
		r[j] = -r[j]
	}
}

func abs64(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

// smithNormalForm returns U, S, V and the rank, with S = U·M·V as above.
// M is m×n and is not modified. Row operations on S are applied to U and
// column operations to V, so the invariant S = U·M·V holds throughout.
func smithNormalForm(M imat, m, n int) (U, S, V imat, rank int, err error) {
	if len(M) != m {
		return nil, nil, nil, 0, errors.Errorf("smithNormalForm: %d rows, want %d", len(M), m)
	}
	for _, r := range M {
		if len(r) != n {
			return nil, nil, nil, 0, errors.Errorf("smithNormalForm: row of %d entries, want %d", len(r), n)
		}
		for _, v := range r {
			if v == math.MinInt64 {
				return nil, nil, nil, 0, errOverflow
			}
		}
	}
	S, U, V = M.clone(), identity(m), identity(n)
	rowOp := func(dst, src int, k int64) error {
		if err := S.rowAxpy(dst, src, k); err != nil {
			return err
		}
		return U.rowAxpy(dst, src, k)
	}
	colOp := func(dst, src int, k int64) error {
		if err := S.colAxpy(dst, src, k); err != nil {
			return err
		}
		return V.colAxpy(dst, src, k)
	}
	for k := range min(m, n) {
		for {
			// Pivot: the entry of least magnitude in S[k:, k:].
			pi, pj := -1, -1
			for i := k; i < m; i++ {
				for j := k; j < n; j++ {
					if S[i][j] != 0 && (pi < 0 || abs64(S[i][j]) < abs64(S[pi][pj])) {
						pi, pj = i, j
					}
				}
			}
			if pi < 0 {
				return U, S, V, k, nil
			}
			S.swapRows(k, pi)
			U.swapRows(k, pi)
			S.swapCols(k, pj)
			V.swapCols(k, pj)
			p := S[k][k]
			// Reduce column k and row k modulo the pivot. A remainder left
			// over is smaller than the pivot and becomes the next one.
			clean := true
			for i := k + 1; i < m; i++ {
				if q := S[i][k] / p; q != 0 {
					if err := rowOp(i, k, -q); err != nil {
						return nil, nil, nil, 0, err
					}
				}
				if S[i][k] != 0 {
					clean = false
				}
			}
			for j := k + 1; j < n; j++ {
				if q := S[k][j] / p; q != 0 {
					if err := colOp(j, k, -q); err != nil {
						return nil, nil, nil, 0, err
					}
				}
				if S[k][j] != 0 {
					clean = false
				}
			}
			if !clean {
				continue
			}
			// Divisibility: an entry the pivot does not divide is added
			// into row k; reducing row k then leaves a smaller remainder.
			bad := -1
			for i := k + 1; i < m && bad < 0; i++ {
				for j := k + 1; j < n; j++ {
					if S[i][j]%p != 0 {
						bad = i
						break
					}
				}
			}
			if bad < 0 {
				break
			}
			if err := rowOp(k, bad, 1); err != nil {
				return nil, nil, nil, 0, err
			}
		}
		if S[k][k] < 0 {
			S.negRow(k)
			U.negRow(k)
		}
	}
	return U, S, V, min(m, n), nil
}

// snfSolution describes every integer solution of the index system
// M·u = w(z) (w affine in the right-hand symbols z) through the Smith
// normal form S = U·M·V of the columns of the unknowns that appear in some
// row (cols; the others are unconstrained and stay free under their own
// names). With u = V·y the system reads S·y = U·w(z):
//
//   - for i < rank, y_i = p[i] / d[i], an integer exactly when
//     p[i] % d[i] == 0 (divisibility guard; none when d[i] == 1);
//   - for rank <= i < rows, p[i] == 0 (equality guard);
//   - y_j for j >= rank is free: a new reduction axis of the gather.
//
// p[i] = (U·w)_i is an affine form over z. Because U and V are unimodular,
// each integer solution u has exactly one y, so looping over the free y_j
// and keeping the points that pass the guards visits every solution once.
type snfSolution struct {
	cols []int   // unknowns of the system, by column
	v    imat    // len(cols) × len(cols): u_cols = v·y
	vinv imat    // v's inverse: y = vinv·u_cols
	rank int     // rank of M
	p    []lform // per row of the system: (U·w)_i over z (u unused)
	d    []int64 // S_ii for i < rank
}

// solveSNF computes the parametrization for the system eqs over nU
// unknowns and nZ right-hand symbols. For readability, the sign of each
// pair (row i of U, column i of V) with i < rank is chosen so that the
// first nonzero coefficient of p[i] is positive, and each free column of V
// has a positive first nonzero entry (S is unchanged by both).
func solveSNF(eqs []spEq, nU, nZ int) (*snfSolution, error) {
	var cols []int
	for k := range nU {
		for _, e := range eqs {
			if e.a[k] != 0 {
				cols = append(cols, k)
				break
			}
		}
	}
	m, n := len(eqs), len(cols)
	M := newIMat(m, n)
	for i, e := range eqs {
		for j, k := range cols {
			M[i][j] = e.a[k]
		}
	}
	U, S, V, rank, err := smithNormalForm(M, m, n)
	if err != nil {
		return nil, err
	}
	sol := &snfSolution{cols: cols, v: V, rank: rank}
	for i := range m {
		// (U·w)_i with w_r = Σ_d e_r.z[d]·z_d + e_r.c.
		lf := lform{z: make([]int64, nZ)}
		for r, e := range eqs {
			if U[i][r] == 0 {
				continue
			}
			for d, v := range e.z {
				if lf.z[d], err = axpyChk(lf.z[d], U[i][r], v); err != nil {
					return nil, err
				}
			}
			if lf.c, err = axpyChk(lf.c, U[i][r], e.c); err != nil {
				return nil, err
			}
		}
		if i < rank && firstNonzero(append(slices.Clone(lf.z), lf.c)) < 0 {
			for d := range lf.z {
				lf.z[d] = -lf.z[d]
			}
			lf.c = -lf.c
			V.negCol(i)
		}
		sol.p = append(sol.p, lf)
	}
	for i := range rank {
		sol.d = append(sol.d, S[i][i])
	}
	reduceColumns(V, rank)
	for j := rank; j < n; j++ {
		col := make([]int64, n)
		for k := range n {
			col[k] = V[k][j]
		}
		if firstNonzero(col) < 0 {
			V.negCol(j)
		}
	}
	if sol.vinv, err = V.inverse(); err != nil {
		return nil, err
	}
	return sol, nil
}

// reduceColumns size-reduces the columns of V against its free columns
// (j >= rank): col_i += k·col_j with k the rounded -<col_i, col_j> /
// <col_j, col_j>, repeated while the squared length of some column
// shrinks. This keeps S = U·M·V (a free column of S is zero, so adding it
// to any column changes nothing) and gives smaller coefficients, so
// simpler expressions and usually tighter ranges. It stops at the first
// overflow, leaving V valid.
func reduceColumns(V imat, rank int) {
	n := len(V)
	dot := func(a, b int) (int64, bool) {
		var s int64
		for k := range n {
			p, err := mulChk(V[k][a], V[k][b])
			if err != nil {
				return 0, false
			}
			if s, err = addChk(s, p); err != nil {
				return 0, false
			}
		}
		return s, true
	}
	for range 4 * n {
		changed := false
		for j := rank; j < n; j++ {
			jj, ok := dot(j, j)
			if !ok || jj == 0 {
				return
			}
			for i := range n {
				if i == j {
					continue
				}
				ij, ok := dot(i, j)
				if !ok || abs64(ij) > 1<<60 || jj > 1<<60 {
					return
				}
				// k = round(-ij / jj), the minimizer of |col_i + k·col_j|²
				// (ties toward no change, so that it terminates).
				k := floorDiv64(-2*ij+jj, 2*jj)
				if k == 0 {
					continue
				}
				W := V.clone()
				if err := W.colAxpy(i, j, k); err != nil {
					return
				}
				copy(V, W)
				changed = true
			}
		}
		if !changed {
			return
		}
	}
}

// firstNonzero is the sign of the first nonzero entry (0 when none).
func firstNonzero(xs []int64) int {
	for _, x := range xs {
		switch {
		case x > 0:
			return 1
		case x < 0:
			return -1
		}
	}
	return 0
}

// inverse is the inverse of a square integer matrix, which must be
// unimodular (its inverse integral) and fit int64.
func (a imat) inverse() (imat, error) {
	n := len(a)
	w := make([][]*big.Rat, n)
	for i := range n {
		w[i] = make([]*big.Rat, 2*n)
		for j := range 2 * n {
			w[i][j] = new(big.Rat)
		}
		for j := range n {
			w[i][j].SetInt64(a[i][j])
		}
		w[i][n+i].SetInt64(1)
	}
	for k := range n {
		p := -1
		for i := k; i < n; i++ {
			if w[i][k].Sign() != 0 {
				p = i
				break
			}
		}
		if p < 0 {
			return nil, errors.Errorf("singular matrix")
		}
		w[k], w[p] = w[p], w[k]
		inv := new(big.Rat).Inv(w[k][k])
		for j := range 2 * n {
			w[k][j].Mul(w[k][j], inv)
		}
		for i := range n {
			if i == k || w[i][k].Sign() == 0 {
				continue
			}
			f := new(big.Rat).Set(w[i][k])
			for j := range 2 * n {
				w[i][j].Sub(w[i][j], new(big.Rat).Mul(f, w[k][j]))
			}
		}
	}
	out := newIMat(n, n)
	for i := range n {
		for j := range n {
			x := w[i][n+j]
			if !x.IsInt() || !x.Num().IsInt64() {
				return nil, errOverflow
			}
			out[i][j] = x.Num().Int64()
		}
	}
	return out, nil
}
