package autodiff

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/pkg/errors"

	"github.com/neoflow/neoflow/core/bounds"
	"github.com/neoflow/neoflow/core/ir"
)

// ukind classifies an unknown of an access's index system. The order is the
// preference for being solved for (dependent): spatial variables first,
// reduction variables last, so that reduction variables stay free and keep
// their plain ranges.
type ukind int

const (
	kSpatial ukind = iota // a left-hand-side variable of the statement
	kQuo                  // q of e = c*q + s, standing for e / c
	kRem                  // s of e = c*q + s, standing for e % c; 0 <= s < c
	kRed                  // a reduction variable of the statement
)

// unknown is a variable of the system with its range [lo, hi].
type unknown struct {
	name   string
	kind   ukind
	lo, hi int64
	order  int
}

// aform is a row of the index system: c + Σ u[k]·unknown_k over the
// system's unknowns (numbered, as the solvers take them). An index
// expression becomes one through its linear form (lin).
type aform struct {
	c int64
	u map[int]int64
}

// errNotAffine reports an index expression outside the quasi-affine class.
type errNotAffine struct {
	expr ir.Expr
	why  string
}

func (e *errNotAffine) Error() string {
	return fmt.Sprintf("index %s is not quasi-affine (%s)", ir.ExprString(e.expr), e.why)
}

var errOverflow = errors.Errorf("integer overflow in the index system")

func addChk(a, b int64) (int64, error) {
	s := a + b
	if (a > 0 && b > 0 && s < 0) || (a < 0 && b < 0 && s >= 0) {
		return 0, errOverflow
	}
	return s, nil
}

func mulChk(a, b int64) (int64, error) {
	if a == 0 || b == 0 {
		return 0, nil
	}
	p := a * b
	if p/b != a || (a == -1 && b == math.MinInt64) || (b == -1 && a == math.MinInt64) {
		return 0, errOverflow
	}
	return p, nil
}

// axpy is x + k·y.
func (x aform) axpy(k int64, y aform) (aform, error) {
	r := aform{u: maps.Clone(x.u)}
	if r.u == nil {
		r.u = map[int]int64{}
	}
	ky, err := mulChk(k, y.c)
	if err != nil {
		return r, err
	}
	if r.c, err = addChk(x.c, ky); err != nil {
		return r, err
	}
	for j, v := range y.u {
		kv, err := mulChk(k, v)
		if err != nil {
			return r, err
		}
		if r.u[j], err = addChk(r.u[j], kv); err != nil {
			return r, err
		}
		if r.u[j] == 0 {
			delete(r.u, j)
		}
	}
	return r, nil
}

func (x aform) isConst() bool { return len(x.u) == 0 }

func (x aform) key() string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(x.u)) {
		fmt.Fprintf(&b, "%d:%d,", k, x.u[k])
	}
	fmt.Fprintf(&b, "c%d", x.c)
	return b.String()
}

// spEq is a sparse equation Σ a[k]·u_k = Σ z[d]·z_d + c.
type spEq struct {
	a map[int]int64
	z map[int]int64
	c int64
}

// linsys turns the index expressions of one access into an affine integer
// system over the statement's variables and auxiliary quotients and
// remainders.
type linsys struct {
	us     []unknown
	byName map[string]int
	aux    map[string][2]int // e/c key -> (q, s)
	auxEq  []spEq            // e - c*q - s = 0
}

func newLinsys(bs *ir.BoundStmt) *linsys {
	ls := &linsys{byName: map[string]int{}, aux: map[string][2]int{}}
	for _, v := range bs.Spatial {
		ls.add(unknown{name: v.Name, kind: kSpatial, lo: 0, hi: v.Extent - 1})
		ls.byName[v.Name] = len(ls.us) - 1
	}
	for _, v := range bs.Reduction {
		ls.add(unknown{name: v.Name, kind: kRed, lo: 0, hi: v.Extent - 1})
		ls.byName[v.Name] = len(ls.us) - 1
	}
	return ls
}

func (ls *linsys) add(u unknown) int {
	u.order = len(ls.us)
	ls.us = append(ls.us, u)
	return u.order
}

// lin writes an index expression as an affine form over the system's
// unknowns: its linear form (bounds.Linearize) with each atom an unknown,
// introducing q and s for every e / c and e % c (shared between / and %
// of the same e and c).
func (ls *linsys) lin(e ir.Expr) (aform, error) {
	l := bounds.Linearize(e)
	r := aform{c: l.Const()}
	for _, t := range l.Terms() {
		u, err := ls.atom(t.Atom)
		if err != nil {
			return aform{}, err
		}
		if r, err = r.axpy(t.Coef, u); err != nil {
			return aform{}, err
		}
	}
	return r, nil
}

// atom is one atom of a linear form as an affine form: an index variable
// of the statement, or the quotient or remainder of an affine form by a
// positive constant.
func (ls *linsys) atom(e ir.Expr) (aform, error) {
	switch x := e.(type) {
	case *ir.Index:
		k, ok := ls.byName[x.Name]
		if !ok {
			return aform{}, &errNotAffine{e, "unknown variable " + x.Name}
		}
		return aform{u: map[int]int64{k: 1}}, nil
	case *ir.Binary:
		switch x.Op {
		case ir.Mul:
			return aform{}, &errNotAffine{e, "product of two variable terms"}
		case ir.Div, ir.Mod:
			b := bounds.Linearize(x.Y)
			if !b.IsConst() || b.Const() <= 0 {
				return aform{}, &errNotAffine{e, "division by a non-constant"}
			}
			a, err := ls.lin(x.X)
			if err != nil {
				return aform{}, err
			}
			q, s, err := ls.divmod(a, b.Const())
			if err != nil {
				return aform{}, err
			}
			if x.Op == ir.Mod {
				q = s
			}
			return aform{u: map[int]int64{q: 1}}, nil
		}
	case *ir.Call:
		return aform{}, &errNotAffine{e, x.Fn.String() + " in an index"}
	case *ir.Where:
		return aform{}, &errNotAffine{e, "where in an index"}
	}
	return aform{}, &errNotAffine{e, "unsupported index term"}
}

// divmod returns the unknowns q and s with a = c*q + s, 0 <= s < c.
func (ls *linsys) divmod(a aform, c int64) (int, int, error) {
	key := a.key() + "/" + fmt.Sprint(c)
	if qs, ok := ls.aux[key]; ok {
		return qs[0], qs[1], nil
	}
	lo, hi, err := ls.interval(a)
	if err != nil {
		return 0, 0, err
	}
	qn, sn := "q", "s"
	if len(a.u) == 1 && a.c == 0 {
		for k, v := range a.u {
			if v == 1 {
				qn = fmt.Sprintf("%s_div%d", ls.us[k].name, c)
				sn = fmt.Sprintf("%s_mod%d", ls.us[k].name, c)
			}
		}
	}
	q := ls.add(unknown{name: qn, kind: kQuo, lo: ir.FloorDiv(lo, c), hi: ir.FloorDiv(hi, c)})
	s := ls.add(unknown{name: sn, kind: kRem, lo: 0, hi: c - 1})
	eq := spEq{a: maps.Clone(a.u), c: -a.c}
	if eq.a == nil {
		eq.a = map[int]int64{}
	}
	eq.a[q] -= c
	eq.a[s] = -1
	ls.auxEq = append(ls.auxEq, eq)
	ls.aux[key] = [2]int{q, s}
	return q, s, nil
}

// interval bounds an affine form over the unknowns' ranges.
func (ls *linsys) interval(a aform) (int64, int64, error) {
	lo, hi := a.c, a.c
	for k, v := range a.u {
		l, err := mulChk(v, ls.us[k].lo)
		if err != nil {
			return 0, 0, err
		}
		h, err := mulChk(v, ls.us[k].hi)
		if err != nil {
			return 0, 0, err
		}
		if v < 0 {
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

// pivotOrder lists the unknowns in the order they are solved for: by kind
// (spatial, quotient, remainder, reduction), then larger ranges first (so
// the smaller ones stay free and the gather loops less), then by order.
func (ls *linsys) pivotOrder() []int {
	order := make([]int, len(ls.us))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		ua, ub := ls.us[a], ls.us[b]
		if ua.kind != ub.kind {
			return int(ua.kind) - int(ub.kind)
		}
		ea, eb := ua.hi-ua.lo, ub.hi-ub.lo
		switch {
		case ea > eb:
			return -1
		case ea < eb:
			return 1
		}
		return ua.order - ub.order
	})
	return order
}
