package ir

import "slices"

// ScatterTarget reports whether left-hand side variable v of s is a
// scatter target, as the parser writes Y[Dst[e], f] += body: s sums
// where(v == Dst[e] && ..., body, 0) with v at left-hand side position d.
// via is the index tensor read that selects v.
func ScatterTarget(s *Stmt, v string) (d int, via *Access, ok bool) {
	w, isWhere := s.RHS.(*Where)
	if s.Reduce != Sum || !isWhere {
		return 0, nil, false
	}
	d = slices.IndexFunc(s.Indices, func(x *Index) bool { return x.Name == v })
	if d < 0 {
		return 0, nil, false
	}
	for _, c := range Conjuncts(w.Cond) {
		if b, isEq := c.(*Binary); isEq && b.Op == Eq {
			if x, isIx := b.X.(*Index); isIx && x.Name == v && IsIndirect(b.Y) {
				return d, b.Y.(*Access), true
			}
		}
	}
	return 0, nil, false
}
