package autodiff

import (
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/pkg/errors"
)

// Fourier–Motzkin elimination over the integers, for the ranges of the
// new reduction axes of a Smith-normal-form inversion (snf_invert.go).
//
// A system of inequalities Σ a_v·x_v + c >= 0 is projected onto one
// variable by eliminating the others: every pair of an inequality with a
// positive and one with a negative coefficient on x combines into one
// without x. The projection of the real polyhedron contains every integer
// point of the system's projection, so the bounds read off at the end are
// sound (and may be loose). Two integer refinements keep them tighter and
// the numbers small: an inequality is divided by the gcd g of its
// coefficients with its constant rounded down (Σ (a/g)·x + floor(c/g) >= 0
// has the same integer solutions), and of inequalities with the same
// coefficients only the strongest is kept.
//
// Relaxation is always sound: dropping an inequality only enlarges the
// set. So a combination that would overflow int64 is dropped, and when a
// step would create more than fmMaxPairs inequalities, a variable with
// known bounds lo <= x <= hi is eliminated by substituting the bound that
// the inequality allows (x <= hi in a·x + ... >= 0 with a > 0), and any
// other variable by dropping the inequalities that mention it.

// ineq is Σ a[v]·x_v + c >= 0.
type ineq struct {
	a []int64
	c int64
}

const fmMaxPairs = 4096

// errEmpty reports a system with no integer solution: the index system has
// no solution with every unknown in range, so the gather is zero.
var errEmpty = errors.New("the index system has no solution in range")

func (q ineq) key() string {
	var b strings.Builder
	for _, v := range q.a {
		b.WriteString(strconv.FormatInt(v, 10))
		b.WriteByte(',')
	}
	return b.String()
}

// normalize divides by the gcd of the coefficients, rounding the constant
// down. It reports false for an inequality without variables that holds
// (nothing to keep); an infeasible one is kept as 0 >= c < 0.
func (q ineq) normalize() (ineq, bool) {
	var g int64
	for _, v := range q.a {
		g = gcd64(g, abs64(v))
	}
	if g == 0 {
		return q, q.c < 0
	}
	if g == 1 {
		return q, true
	}
	r := ineq{a: make([]int64, len(q.a)), c: floorDiv64(q.c, g)}
	for i, v := range q.a {
		r.a[i] = v / g
	}
	return r, true
}

func gcd64(a, b int64) int64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

func floorDiv64(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

func ceilDiv64(a, b int64) int64 { return -floorDiv64(-a, b) }

// fmSystem is a set of inequalities over nv variables, deduplicated, with
// optional known bounds per variable (used for relaxation only; the
// bounds must also be present as inequalities to be used exactly).
type fmSystem struct {
	nv    int
	cons  map[string]ineq
	bound map[int][2]int64
}

func newFM(nv int) *fmSystem {
	return &fmSystem{nv: nv, cons: map[string]ineq{}, bound: map[int][2]int64{}}
}

// add inserts Σ a·x + c >= 0; it reports an infeasible system.
func (s *fmSystem) add(q ineq) error {
	q, keep := q.normalize()
	if !keep {
		return nil
	}
	k := q.key()
	if old, ok := s.cons[k]; ok && old.c <= q.c {
		return nil
	}
	s.cons[k] = q
	if q.c < 0 && isZeroVec(q.a) {
		return errEmpty
	}
	return nil
}

func isZeroVec(a []int64) bool {
	for _, v := range a {
		if v != 0 {
			return false
		}
	}
	return true
}

// addBox adds lo <= x_v <= hi as inequalities and records the bounds.
func (s *fmSystem) addBox(v int, lo, hi int64) error {
	a := make([]int64, s.nv)
	a[v] = 1
	if err := s.add(ineq{a: a, c: -lo}); err != nil {
		return err
	}
	b := make([]int64, s.nv)
	b[v] = -1
	if err := s.add(ineq{a: b, c: hi}); err != nil {
		return err
	}
	s.bound[v] = [2]int64{lo, hi}
	return nil
}

// sorted lists the inequalities in a deterministic order.
func (s *fmSystem) sorted() []ineq {
	keys := make([]string, 0, len(s.cons))
	for k := range s.cons {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make([]ineq, len(keys))
	for i, k := range keys {
		out[i] = s.cons[k]
	}
	return out
}

func (s *fmSystem) clone() *fmSystem {
	c := newFM(s.nv)
	for k, q := range s.cons {
		c.cons[k] = q
	}
	for v, b := range s.bound {
		c.bound[v] = b
	}
	return c
}

// substitute eliminates variable v exactly with the equality
// Σ e_w·x_w + c = 0 (e_v != 0): each inequality q becomes
// |e_v|·q - sign(e_v)·q_v·e, which has no x_v and the same solutions on
// the equality's hyperplane.
func (s *fmSystem) substitute(v int, e ineq) error {
	ev := e.a[v]
	if ev == 0 {
		return errors.Errorf("internal error: substituting a variable the equality lacks")
	}
	kp := abs64(ev)
	out := newFM(s.nv)
	for w, b := range s.bound {
		if w != v {
			out.bound[w] = b
		}
	}
	for _, q := range s.sorted() {
		if q.a[v] == 0 {
			if err := out.add(q); err != nil {
				return err
			}
			continue
		}
		k := -q.a[v]
		if ev < 0 {
			k = q.a[v]
		}
		r := ineq{a: make([]int64, s.nv)}
		var err error
		for w := range s.nv {
			x, err1 := mulChk(kp, q.a[w])
			if err1 != nil {
				err = err1
				break
			}
			if r.a[w], err = axpyChk(x, k, e.a[w]); err != nil {
				break
			}
		}
		if err == nil {
			var x int64
			if x, err = mulChk(kp, q.c); err == nil {
				r.c, err = axpyChk(x, k, e.c)
			}
		}
		if err != nil {
			continue // dropping an inequality is a sound relaxation
		}
		r.a[v] = 0
		if err := out.add(r); err != nil {
			return err
		}
	}
	*s = *out
	return nil
}

// eliminate projects variable v out.
func (s *fmSystem) eliminate(v int) error {
	var pos, neg []ineq
	out := newFM(s.nv)
	for w, b := range s.bound {
		if w != v {
			out.bound[w] = b
		}
	}
	for _, q := range s.sorted() {
		switch {
		case q.a[v] > 0:
			pos = append(pos, q)
		case q.a[v] < 0:
			neg = append(neg, q)
		default:
			if err := out.add(q); err != nil {
				return err
			}
		}
	}
	if len(pos)*len(neg) <= fmMaxPairs {
		for _, p := range pos {
			for _, n := range neg {
				// (-a_n)·p + a_p·n: the coefficient of v cancels.
				if r, ok := combine(p, -n.a[v], n, p.a[v]); ok {
					if err := out.add(r); err != nil {
						return err
					}
				}
			}
		}
	} else if b, ok := s.bound[v]; ok {
		// Relaxation: substitute the bound each inequality allows.
		for _, q := range append(pos, neg...) {
			x := b[1]
			if q.a[v] < 0 {
				x = b[0]
			}
			c, err := axpyChk(q.c, q.a[v], x)
			if err != nil {
				continue
			}
			r := ineq{a: slices.Clone(q.a), c: c}
			r.a[v] = 0
			if err := out.add(r); err != nil {
				return err
			}
		}
	}
	*s = *out
	return nil
}

// combine is kp·p + kn·n (kp, kn > 0); false on overflow.
func combine(p ineq, kp int64, n ineq, kn int64) (ineq, bool) {
	r := ineq{a: make([]int64, len(p.a))}
	for i := range p.a {
		x, err := mulChk(kp, p.a[i])
		if err != nil {
			return r, false
		}
		if r.a[i], err = axpyChk(x, kn, n.a[i]); err != nil {
			return r, false
		}
	}
	x, err := mulChk(kp, p.c)
	if err != nil {
		return r, false
	}
	if r.c, err = axpyChk(x, kn, n.c); err != nil {
		return r, false
	}
	return r, true
}

// eliminateAll projects out the variables in vs, cheapest first (the
// fewest new pairs).
func (s *fmSystem) eliminateAll(vs []int) error {
	left := slices.Clone(vs)
	for len(left) > 0 {
		best, bestCost := 0, math.MaxInt
		for i, v := range left {
			np, nn := 0, 0
			for _, q := range s.cons {
				switch {
				case q.a[v] > 0:
					np++
				case q.a[v] < 0:
					nn++
				}
			}
			if c := np * nn; c < bestCost {
				best, bestCost = i, c
			}
		}
		if err := s.eliminate(left[best]); err != nil {
			return err
		}
		left = slices.Delete(left, best, best+1)
	}
	return nil
}

// bounds reads the constant bounds of variable v from a system in which
// every inequality mentions v alone (or nothing).
func (s *fmSystem) bounds(v int) (lo, hi int64, err error) {
	lo, hi = math.MinInt64, math.MaxInt64
	for _, q := range s.cons {
		for w, a := range q.a {
			if w != v && a != 0 {
				return 0, 0, errors.Errorf("internal error: variable %d left in the projection", w)
			}
		}
		switch a := q.a[v]; {
		case a > 0: // v >= ceil(-c/a)
			if q.c == math.MinInt64 {
				return 0, 0, errOverflow
			}
			lo = max(lo, ceilDiv64(-q.c, a))
		case a < 0: // v <= floor(c/-a)
			hi = min(hi, floorDiv64(q.c, -a))
		}
	}
	if lo == math.MinInt64 || hi == math.MaxInt64 {
		return 0, 0, errors.Errorf("the range of a free variable is unbounded")
	}
	if lo > hi {
		return 0, 0, errEmpty
	}
	return lo, hi, nil
}

// fmRanges returns constant bounds for each variable in keep, projecting
// the system onto it (eliminating every other variable).
func fmRanges(s *fmSystem, keep []int) ([][2]int64, error) {
	var others []int
	for v := range s.nv {
		if !slices.Contains(keep, v) {
			others = append(others, v)
		}
	}
	base := s.clone()
	if err := base.eliminateAll(others); err != nil {
		return nil, err
	}
	out := make([][2]int64, len(keep))
	for i, v := range keep {
		p := base.clone()
		var rest []int
		for _, w := range keep {
			if w != v {
				rest = append(rest, w)
			}
		}
		if err := p.eliminateAll(rest); err != nil {
			return nil, err
		}
		lo, hi, err := p.bounds(v)
		if err != nil {
			return nil, err
		}
		out[i] = [2]int64{lo, hi}
	}
	return out, nil
}
