package autodiff

import (
	"errors"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

// bigMul is a·b exactly.
func bigMul(a, b imat, n int) [][]*big.Int {
	out := make([][]*big.Int, len(a))
	for i := range a {
		out[i] = make([]*big.Int, n)
		for j := range n {
			s := new(big.Int)
			for k := range b {
				s.Add(s, new(big.Int).Mul(big.NewInt(a[i][k]), big.NewInt(b[k][j])))
			}
			out[i][j] = s
		}
	}
	return out
}

// ratRankDet is the rank of a over the rationals and, when a is square,
// its determinant.
func ratRankDet(a imat, m, n int) (int, *big.Rat) {
	w := make([][]*big.Rat, m)
	for i := range m {
		w[i] = make([]*big.Rat, n)
		for j := range n {
			w[i][j] = new(big.Rat).SetInt64(a[i][j])
		}
	}
	det := big.NewRat(1, 1)
	rank := 0
	for c := 0; c < n && rank < m; c++ {
		p := -1
		for i := rank; i < m; i++ {
			if w[i][c].Sign() != 0 {
				p = i
				break
			}
		}
		if p < 0 {
			det.SetInt64(0)
			continue
		}
		if p != rank {
			w[p], w[rank] = w[rank], w[p]
			det.Neg(det)
		}
		det.Mul(det, w[rank][c])
		for i := rank + 1; i < m; i++ {
			f := new(big.Rat).Quo(w[i][c], w[rank][c])
			for j := c; j < n; j++ {
				w[i][j].Sub(w[i][j], new(big.Rat).Mul(f, w[rank][j]))
			}
		}
		rank++
	}
	if rank < m || rank < n {
		det.SetInt64(0)
	}
	return rank, det
}

// checkSNF verifies S = U·M·V, |det U| = |det V| = 1, S diagonal with a
// positive divisibility chain on the first rank entries and zero after,
// and rank = the rational rank of M.
func checkSNF(t *testing.T, M imat, m, n int) {
	t.Helper()
	U, S, V, rank, err := smithNormalForm(M, m, n)
	if err != nil {
		t.Fatalf("%v: %v", M, err)
	}
	if len(U) != m || len(V) != n || len(S) != m {
		t.Fatalf("%v: shapes U %d, S %d, V %d", M, len(U), len(S), len(V))
	}
	um := bigMul(U, M, n)
	umv := make([][]*big.Int, m)
	for i := range m {
		umv[i] = make([]*big.Int, n)
		for j := range n {
			s := new(big.Int)
			for k := range n {
				s.Add(s, new(big.Int).Mul(um[i][k], big.NewInt(V[k][j])))
			}
			umv[i][j] = s
			if s.Cmp(big.NewInt(S[i][j])) != 0 {
				t.Fatalf("%v: (U·M·V)[%d][%d] = %v, S = %v", M, i, j, s, S)
			}
		}
	}
	for _, x := range []struct {
		name string
		a    imat
	}{{"U", U}, {"V", V}} {
		if _, d := ratRankDet(x.a, len(x.a), len(x.a)); d.Cmp(big.NewRat(1, 1)) != 0 && d.Cmp(big.NewRat(-1, 1)) != 0 {
			t.Fatalf("%v: det %s = %v, want ±1", M, x.name, d)
		}
	}
	want, _ := ratRankDet(M, m, n)
	if rank != want {
		t.Fatalf("%v: rank %d, want %d", M, rank, want)
	}
	for i := range m {
		for j := range n {
			switch {
			case i != j || i >= rank:
				if S[i][j] != 0 {
					t.Fatalf("%v: S[%d][%d] = %d, want 0 (rank %d): %v", M, i, j, S[i][j], rank, S)
				}
			case S[i][i] <= 0:
				t.Fatalf("%v: S[%d][%d] = %d, want > 0", M, i, i, S[i][i])
			case i > 0 && S[i][i]%S[i-1][i-1] != 0:
				t.Fatalf("%v: S_%d = %d is not a multiple of S_%d = %d", M, i, S[i][i], i-1, S[i-1][i-1])
			}
		}
	}
}

func TestSmithNormalFormRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for range 3000 {
		m, n := 1+r.IntN(5), 1+r.IntN(5)
		M := newIMat(m, n)
		for i := range m {
			for j := range n {
				if r.IntN(4) > 0 {
					M[i][j] = int64(r.IntN(19)) - 9
				}
			}
		}
		// Rank-deficient: sometimes a row is a combination of two others.
		if m >= 3 && r.IntN(3) == 0 {
			a, b := int64(r.IntN(5)-2), int64(r.IntN(5)-2)
			for j := range n {
				M[m-1][j] = a*M[0][j] + b*M[1][j]
			}
		}
		checkSNF(t, M, m, n)
	}
}

func TestSmithNormalFormCases(t *testing.T) {
	for _, c := range []struct {
		name string
		M    imat
		diag []int64
	}{
		{"zero_2x3", imat{{0, 0, 0}, {0, 0, 0}}, nil},
		{"zero_1x1", imat{{0}}, nil},
		{"1x1", imat{{-6}}, []int64{6}},
		{"1x1_unit", imat{{1}}, []int64{1}},
		{"row", imat{{2, 3}}, []int64{1}},
		{"row_common_factor", imat{{4, 6, 10}}, []int64{2}},
		{"column", imat{{4}, {6}}, []int64{2}},
		{"rank_deficient", imat{{1, 2, 3}, {2, 4, 6}, {1, 1, 1}}, []int64{1, 1}},
		{"rank_one_square", imat{{2, 4}, {3, 6}}, []int64{1}},
		{"diag_not_chain", imat{{2, 0}, {0, 3}}, []int64{1, 6}},
		{"classic", imat{{2, 4, 4}, {-6, 6, 12}, {10, -4, -16}}, []int64{2, 6, 12}},
		{"rotation", imat{{1, 1}, {1, -1}}, []int64{1, 2}},
		{"even_3x3", imat{{2, 2, 4}, {2, 4, 2}, {4, 2, 2}}, []int64{2, 2, 8}},
		{"strided_pair", imat{{2, 4, 0}, {3, 0, 5}}, []int64{1, 2}},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, n := len(c.M), len(c.M[0])
			checkSNF(t, c.M, m, n)
			_, S, _, rank, _ := smithNormalForm(c.M, m, n)
			if rank != len(c.diag) {
				t.Fatalf("rank %d, want %d (S = %v)", rank, len(c.diag), S)
			}
			for i, d := range c.diag {
				if S[i][i] != d {
					t.Fatalf("S = %v, want diagonal %v", S, c.diag)
				}
			}
		})
	}
	// Empty shapes.
	if _, _, _, rank, err := smithNormalForm(newIMat(2, 0), 2, 0); err != nil || rank != 0 {
		t.Errorf("2x0: rank %d, %v", rank, err)
	}
	if _, _, _, rank, err := smithNormalForm(imat{}, 0, 0); err != nil || rank != 0 {
		t.Errorf("0x0: rank %d, %v", rank, err)
	}
}

// TestSmithNormalFormOverflow: entries near the int64 limit either give a
// verified result or errOverflow, never a wrapped one.
func TestSmithNormalFormOverflow(t *testing.T) {
	big := int64(1) << 62
	for _, M := range []imat{
		{{big, 3}, {5, big - 1}},
		{{math.MaxInt64, math.MaxInt64 - 1}, {math.MaxInt64 - 2, 7}},
		{{math.MinInt64, 1}},
	} {
		_, _, _, _, err := smithNormalForm(M, len(M), len(M[0]))
		if err != nil {
			if !errors.Is(err, errOverflow) {
				t.Errorf("%v: %v", M, err)
			}
			continue
		}
		checkSNF(t, M, len(M), len(M[0]))
	}
}

// TestSolveSNF checks the parametrization against brute force: for random
// small systems M·u = z + c, every integer u in a box solving it for some
// z in a box has y = V⁻¹·u with y_i = p_i(z) / d_i exactly (i < rank) and
// p_i(z) = 0 for the other rows; and conversely every y built that way
// from free values gives a solution.
func TestSolveSNF(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	for range 300 {
		m, n := 1+r.IntN(3), 1+r.IntN(3)
		var eqs []spEq
		for i := range m {
			e := spEq{a: map[int]int64{}, z: map[int]int64{i: 1}, c: int64(r.IntN(5) - 2)}
			for k := range n {
				if v := int64(r.IntN(9) - 4); v != 0 {
					e.a[k] = v
				}
			}
			eqs = append(eqs, e)
		}
		sol, err := solveSNF(eqs, n, m)
		if err != nil {
			t.Fatal(err)
		}
		nc := len(sol.cols)
		if id, err := sol.v.mul(sol.vinv); err != nil || !isIdentity(id) {
			t.Fatalf("V·V⁻¹ = %v (%v)", id, err)
		}
		// Forward: every u in [-3, 3]^n maps to z; check the solution.
		u := make([]int64, n)
		var walk func(k int)
		walk = func(k int) {
			if k < n {
				for v := int64(-3); v <= 3; v++ {
					u[k] = v
					walk(k + 1)
				}
				return
			}
			z := make([]int64, m)
			for i, e := range eqs {
				s := -e.c
				for j, a := range e.a {
					s += a * u[j]
				}
				z[i] = s
			}
			uc := make([]int64, nc)
			for ci, k := range sol.cols {
				uc[ci] = u[k]
			}
			for i, p := range sol.p {
				pv := p.c
				for d, v := range p.z {
					pv += v * z[d]
				}
				var y int64
				for ci := range nc {
					if i < nc {
						y += sol.vinv[i][ci] * uc[ci]
					}
				}
				switch {
				case i < sol.rank:
					if pv%sol.d[i] != 0 || pv/sol.d[i] != y {
						t.Fatalf("eqs %v: u %v z %v: p_%d = %d, d = %d, y = %d", eqs, u, z, i, pv, sol.d[i], y)
					}
				case pv != 0:
					t.Fatalf("eqs %v: u %v z %v: p_%d = %d, want 0", eqs, u, z, i, pv)
				}
			}
		}
		walk(0)
		// Backward: free values give solutions.
		for range 20 {
			z := make([]int64, m)
			for i := range z {
				z[i] = int64(r.IntN(21) - 10)
			}
			y := make([]int64, nc)
			ok := true
			for i, p := range sol.p {
				pv := p.c
				for d, v := range p.z {
					pv += v * z[d]
				}
				if i < sol.rank {
					if pv%sol.d[i] != 0 {
						ok = false
					} else {
						y[i] = pv / sol.d[i]
					}
				} else if pv != 0 {
					ok = false
				}
			}
			if !ok {
				continue
			}
			for j := sol.rank; j < nc; j++ {
				y[j] = int64(r.IntN(11) - 5)
			}
			uu := make([]int64, n)
			for ci, k := range sol.cols {
				for j := range nc {
					uu[k] += sol.v[ci][j] * y[j]
				}
			}
			for i, e := range eqs {
				s := -e.c
				for j, a := range e.a {
					s += a * uu[j]
				}
				if s != z[i] {
					t.Fatalf("eqs %v: z %v y %v gives u %v, row %d = %d", eqs, z, y, uu, i, s)
				}
			}
		}
	}
}

func isIdentity(a imat) bool {
	for i := range a {
		for j := range a[i] {
			if (i == j && a[i][j] != 1) || (i != j && a[i][j] != 0) {
				return false
			}
		}
	}
	return true
}

// TestFMRanges checks Fourier–Motzkin bounds: a known projection, and
// soundness on random systems against brute-force enumeration.
func TestFMRanges(t *testing.T) {
	// 0 <= z <= 13, 0 <= -z + 3t <= 3, 0 <= z - 2t <= 2: t in [0, 5].
	s := newFM(2)
	if err := s.addBox(0, 0, 13); err != nil {
		t.Fatal(err)
	}
	for _, q := range []ineq{{[]int64{-1, 3}, 0}, {[]int64{1, -3}, 3}, {[]int64{1, -2}, 0}, {[]int64{-1, 2}, 2}} {
		if err := s.add(q); err != nil {
			t.Fatal(err)
		}
	}
	rng, err := fmRanges(s, []int{1})
	if err != nil || rng[0] != [2]int64{0, 5} {
		t.Fatalf("range %v (%v), want [0, 5]", rng, err)
	}
	// Unbounded.
	s = newFM(2)
	_ = s.addBox(0, 0, 3)
	_ = s.add(ineq{[]int64{-1, 1}, 0}) // t >= z
	if _, err := fmRanges(s, []int{1}); err == nil {
		t.Fatalf("unbounded range accepted")
	}
	// Infeasible.
	s = newFM(1)
	_ = s.addBox(0, 0, 3)
	if err := s.add(ineq{[]int64{1}, -5}); err != nil {
		t.Fatal(err)
	}
	if _, err := fmRanges(s, []int{0}); err == nil {
		t.Fatalf("empty range accepted")
	}

	r := rand.New(rand.NewPCG(31, 32))
	for range 300 {
		nv := 2 + r.IntN(3)
		s := newFM(nv)
		for v := range nv {
			_ = s.addBox(v, int64(-r.IntN(4)), int64(r.IntN(4)))
		}
		var cons []ineq
		for range 1 + r.IntN(4) {
			q := ineq{a: make([]int64, nv), c: int64(r.IntN(9) - 2)}
			for v := range nv {
				q.a[v] = int64(r.IntN(7) - 3)
			}
			cons = append(cons, q)
			if err := s.add(q); err != nil {
				break
			}
		}
		keep := []int{nv - 1}
		if nv > 2 && r.IntN(2) == 0 {
			keep = append(keep, nv-2)
		}
		rng, err := fmRanges(s, keep)
		// Brute force over the boxes.
		x := make([]int64, nv)
		feasible := false
		var walk func(v int)
		walk = func(v int) {
			if v < nv {
				b := s.bound[v]
				for x[v] = b[0]; x[v] <= b[1]; x[v]++ {
					walk(v + 1)
				}
				return
			}
			for _, q := range cons {
				sum := q.c
				for w, a := range q.a {
					sum += a * x[w]
				}
				if sum < 0 {
					return
				}
			}
			feasible = true
			if err != nil {
				return
			}
			for i, k := range keep {
				if x[k] < rng[i][0] || x[k] > rng[i][1] {
					t.Fatalf("point %v outside the range %v of x%d (constraints %v)", x, rng[i], k, cons)
				}
			}
		}
		walk(0)
		if err != nil && feasible {
			t.Fatalf("feasible system rejected: %v (constraints %v)", err, cons)
		}
	}
}
