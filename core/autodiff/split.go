package autodiff

import (
	"maps"
	"slices"

	"github.com/neoflow/neoflow/core/ir"
)

// Mixed-radix splitting. A row c·H(u) + L(u) = z of the index system whose
// low part L stays within one period of c over the unknowns' ranges
// (floor(min L / c) == floor(max L / c) = m) is equivalent, on those
// ranges, to the two rows
//
//	H(u) + m = z / c        L(u) - c·m = z % c
//
// because z = c·(H + m) + (L - c·m) with 0 <= L - c·m < c determines both
// parts. The right-hand sides z / c and z % c become new symbols of the
// system (zsym), printed as such. This solves depth2space-style indices
// (c*4 + (h%2)*2 + w%2) and non-overlapping windows (2*p + r with r < 2)
// exactly, with no free variable left to loop over. The split system's
// solutions are always solutions of the original row (z = c·(z/c) + z%c),
// so nothing spurious is admitted.

// zsym is a right-hand-side symbol of the system: an index of the gradient
// tensor, or z / c or z % c of another symbol.
type zsym struct {
	dim    int // for an index of the gradient tensor; -1 otherwise
	parent int
	op     ir.BinOp // ir.Div or ir.Mod
	c      int64
	lo, hi int64
}

// expr prints symbol i given the names of the gradient tensor's indices.
func zexpr(zs []zsym, i int, zn []string) ir.Expr {
	z := zs[i]
	if z.dim >= 0 {
		return idx(zn[z.dim])
	}
	return bin(z.op, zexpr(zs, z.parent, zn), ilit(z.c))
}

// splitRows applies mixed-radix splitting to the rows that equal a single
// symbol, repeatedly, trying the largest modulus first. It returns the new
// rows and symbols.
func splitRows(ls *linsys, eqs []spEq, zs []zsym) ([]spEq, []zsym) {
	var out []spEq
	work := slices.Clone(eqs)
	for len(work) > 0 {
		e := work[0]
		work = work[1:]
		parts, nzs, ok := splitRow(ls, e, zs)
		if !ok {
			out = append(out, e)
			continue
		}
		zs = nzs
		work = append(parts, work...)
	}
	return out, zs
}

func splitRow(ls *linsys, e spEq, zs []zsym) ([]spEq, []zsym, bool) {
	if len(e.z) != 1 {
		return nil, nil, false
	}
	var sym int
	for d, v := range e.z {
		if v != 1 {
			return nil, nil, false
		}
		sym = d
	}
	var cands []int64
	for _, a := range e.a {
		if a < 0 {
			a = -a
		}
		if a > 1 && !slices.Contains(cands, a) {
			cands = append(cands, a)
		}
	}
	slices.Sort(cands)
	slices.Reverse(cands)
	c0 := -e.c // Σ a·u + c0 = z
	for _, c := range cands {
		high, low := map[int]int64{}, map[int]int64{}
		for k, a := range e.a {
			if a == 0 {
				continue
			}
			if a%c == 0 {
				high[k] = a / c
			} else {
				low[k] = a
			}
		}
		if len(high) == 0 || len(low) == 0 {
			continue
		}
		lo, hi, err := ls.interval(aform{c: c0, u: low})
		if err != nil || ir.FloorDiv(lo, c) != ir.FloorDiv(hi, c) {
			continue
		}
		m := ir.FloorDiv(lo, c)
		cm, err := mulChk(c, m)
		if err != nil {
			return nil, nil, false
		}
		z := zs[sym]
		q := zsym{dim: -1, parent: sym, op: ir.Div, c: c, lo: ir.FloorDiv(z.lo, c), hi: ir.FloorDiv(z.hi, c)}
		r := zsym{dim: -1, parent: sym, op: ir.Mod, c: c, lo: 0, hi: c - 1}
		if ir.FloorDiv(z.lo, c) == ir.FloorDiv(z.hi, c) {
			r.lo, r.hi = ir.FloorMod(z.lo, c), ir.FloorMod(z.hi, c)
		}
		nzs := append(slices.Clone(zs), q, r)
		qi, ri := len(nzs)-2, len(nzs)-1
		// H + m = q  =>  Σ_high (a/c)·u = q - m
		hrow := spEq{a: high, z: map[int]int64{qi: 1}, c: -m}
		// L - c·m = r  =>  Σ_low a·u = r + c·m - c0
		lc, err := addChk(cm, -c0)
		if err != nil {
			return nil, nil, false
		}
		lrow := spEq{a: maps.Clone(low), z: map[int]int64{ri: 1}, c: lc}
		return []spEq{hrow, lrow}, nzs, true
	}
	return nil, nil, false
}
