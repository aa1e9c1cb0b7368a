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
		l := bounds.LinearizeNamed(n)
		ts := l.Terms()
		if len(ts) == 1 && ts[0].Atom == n {
			return nil // n itself is an atom
		}
		size := len(ts)
		if l.Const() != 0 {
			size++
		}
		if size >= leaves(n) {
			return nil
		}
		key := func(t bounds.Term) string {
			if x, ok := t.Atom.(*ir.Index); ok {
				return x.Name
			}
			return ir.ExprString(t.Atom)
		}
		slices.SortStableFunc(ts, func(a, b bounds.Term) int {
			ra, oka := rank[key(a)]
			rb, okb := rank[key(b)]
			switch {
			case oka && okb:
				return ra - rb
			case oka:
				return -1
			case okb:
				return 1
			}
			return strings.Compare(key(a), key(b))
		})
		terms := make([]term, len(ts))
		for i, t := range ts {
			terms[i] = term{t.Atom, t.Coef}
		}
		return linearExpr(terms, l.Const())
	})
}

// leaves counts the terms e is written with as a sum: its atoms (each
// occurrence) and its nonzero literals, a literal factor of a product
// not counted.
func leaves(e ir.Expr) int {
	switch x := e.(type) {
	case *ir.IntLit:
		if x.Value == 0 {
			return 0
		}
	case *ir.Unary:
		if x.Op == ir.Neg {
			return leaves(x.X)
		}
	case *ir.Binary:
		switch x.Op {
		case ir.Add, ir.Sub:
			return leaves(x.X) + leaves(x.Y)
		case ir.Mul:
			if _, ok := x.X.(*ir.IntLit); ok {
				return leaves(x.Y)
			}
			if _, ok := x.Y.(*ir.IntLit); ok {
				return leaves(x.X)
			}
		}
	}
	return 1
}
