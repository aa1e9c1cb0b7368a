package autodiff

import (
	"slices"
	"strings"

	"github.com/neoflow/neoflow/core/bounds"
	"github.com/neoflow/neoflow/core/ir"
)

// Guard simplification. After substitution, a forward guard often becomes
// decidable from the ranges alone: the padding guard p + r - 1 >= 0 of a
// convolution reads x2 - r + 1 + r - 1 >= 0 in the gradient, which holds
// for every x2 in [0, H). simplifyGuards drops index comparisons that hold
// everywhere and resolves a where whose condition fails everywhere.
//
// This never weakens sema's bounds proof: a comparison is decided with
// the prover sema proves accesses with (core/bounds), on the variables'
// full ranges, so a dropped comparison F holds there by the same interval
// evaluation, and every fact it contributed already follows from the
// intervals (interval evaluation of a linear form is superadditive in its
// lower bound: lo(l) >= lo(l - F) + lo(F)).

// decide returns +1 when the index comparison c holds for every value of
// its variables, -1 when it never does, 0 otherwise or when c is not an
// index comparison (bounds.Scope.Decide over the variables' full ranges).
func decide(c ir.Expr, ranges map[string]int64) int {
	return bounds.ForExtents(ranges).Decide(c)
}

// simplifyGuards drops the conjuncts of where conditions that always hold
// and resolves a where whose condition has a conjunct that never holds.
func simplifyGuards(e ir.Expr, ranges map[string]int64) ir.Expr {
	return ir.Rewrite(e, func(n ir.Expr) ir.Expr {
		w, ok := n.(*ir.Where)
		if !ok {
			return nil
		}
		var keep []ir.Expr
		for _, c := range ir.Conjuncts(w.Cond) {
			switch decide(c, ranges) {
			case 1:
				continue
			case -1:
				return w.Else
			}
			keep = append(keep, c)
		}
		if len(keep) == 0 {
			return w.Then
		}
		if len(keep) == len(ir.Conjuncts(w.Cond)) {
			return nil
		}
		return where(ir.AndAll(keep), w.Then, w.Else)
	})
}

// canonIndex rewrites an index subexpression whose terms cancel or merge
// (x2 - r + 1 + r - 1, the substituted padding guard) into the canonical
// form of linearExpr: variables in the given order, then other atoms
// (constants by name, opaque terms) by their text, then the constant. An
// expression with nothing to merge keeps its form. The rewrite is exact,
// so sema sees the same linear forms; the gather's own guards are already
// canonical with the same order, so identical terms still print alike.
func canonIndex(e ir.Expr, order []string) ir.Expr {
	rank := map[string]int{}
	for i, v := range order {
		rank[v] = i
	}
	kinds := ir.KindMemo{} // KindOf at every node of a long chain is quadratic
	return ir.Rewrite(e, func(n ir.Expr) ir.Expr {
		if kinds.Of(n) != ir.KindIndex {
			return nil
		}
		switch x := n.(type) {
		case *ir.Unary:
			if x.Op != ir.Neg {
				return nil
			}
		case *ir.Binary:
			if x.Op != ir.Add && x.Op != ir.Sub && x.Op != ir.Mul {
				return nil
			}
		default:
			return nil
		}
		coef, atoms := map[string]int64{}, map[string]ir.Expr{}
		leaves := 0
		c, ok := canonLin(n, coef, atoms, 1, &leaves)
		if !ok {
			return nil
		}
		var keys []string
		for k, v := range coef {
			if v != 0 {
				keys = append(keys, k)
			}
		}
		size := len(keys)
		if c != 0 {
			size++
		}
		if size >= leaves {
			return nil
		}
		slices.SortFunc(keys, func(a, b string) int {
			ra, oka := rank[a]
			rb, okb := rank[b]
			switch {
			case oka && okb:
				return ra - rb
			case oka:
				return -1
			case okb:
				return 1
			}
			return strings.Compare(a, b)
		})
		var terms []term
		for _, k := range keys {
			terms = append(terms, term{atoms[k], coef[k]})
		}
		return linearExpr(terms, c)
	})
}

// canonLin is linAtoms that keeps named constants as atoms (so they print
// by name) and counts the occurrences of atoms and non-zero literals.
func canonLin(e ir.Expr, coef map[string]int64, atoms map[string]ir.Expr, k int64, leaves *int) (int64, bool) {
	switch x := e.(type) {
	case *ir.IntLit:
		if x.Value != 0 {
			*leaves++
		}
		v, err := mulChk(k, x.Value)
		return v, err == nil
	case *ir.Unary:
		if x.Op == ir.Neg {
			return canonLin(x.X, coef, atoms, -k, leaves)
		}
	case *ir.Binary:
		switch x.Op {
		case ir.Add, ir.Sub:
			c1, ok1 := canonLin(x.X, coef, atoms, k, leaves)
			k2 := k
			if x.Op == ir.Sub {
				k2 = -k
			}
			c2, ok2 := canonLin(x.Y, coef, atoms, k2, leaves)
			c, err := addChk(c1, c2)
			return c, ok1 && ok2 && err == nil
		case ir.Mul:
			for _, p := range [][2]ir.Expr{{x.X, x.Y}, {x.Y, x.X}} {
				if l, ok := p[0].(*ir.IntLit); ok {
					kk, err := mulChk(k, l.Value)
					if err != nil {
						return 0, false
					}
					return canonLin(p[1], coef, atoms, kk, leaves)
				}
			}
		}
	}
	key := ir.ExprString(e)
	if x, ok := e.(*ir.Index); ok {
		key = x.Name
	}
	v, err := addChk(coef[key], k)
	if err != nil {
		return 0, false
	}
	coef[key] = v
	atoms[key] = e
	*leaves++
	return 0, true
}
