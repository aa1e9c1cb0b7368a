package autodiff

import "github.com/neoflow/neoflow/core/ir"

// Products. A chain of value products f1 * f2 * ... * fn (any association)
// is differentiated by its factors. When no two factors are equal, the
// binary rule of the table applies node by node (the partial of a is f·b,
// of b is f·a), and the partials share the path's factor f by pointer.
// When some factors repeat, equal factors are collected: with distinct
// factors g_1..g_m taken c_1..c_m times, the partial with respect to g_j
// (all its copies together) is
//
//	c_j · g_j^(c_j - 1) · Π_{i≠j} g_i^(c_i)
//
// where g^k is the plain product for k <= maxRepeat and pow(g, k)
// otherwise, and the products of the other factors are built from shared
// prefix and suffix products, so the m partials take O(m) new nodes. The
// derivative of X[i] * ... * X[i] (2,000 factors) is then
// 2000.0 * pow(X[i], 1999.0): a few nodes instead of 2,000 products of
// 1,999 factors.

// maxRepeat is the largest power written as a product of copies.
const maxRepeat = 4

// factors flattens the chain of value products rooted at e into its
// factors, left to right, and marks the chain's product nodes in seen.
func (d *differ) factors(e ir.Expr) []ir.Expr {
	var out []ir.Expr
	var rec func(ir.Expr)
	rec = func(e ir.Expr) {
		if x, ok := e.(*ir.Binary); ok && x.Op == ir.Mul && d.m.kinds.Of(x) == ir.KindValue {
			d.chained[x] = true
			rec(x.X)
			rec(x.Y)
			return
		}
		out = append(out, e)
	}
	rec(e)
	return out
}

// product differentiates the product chain e. It returns false, having
// done nothing, when no factor repeats: the caller applies the binary rule
// (and, the chain's nodes being marked, does not flatten its operands
// again).
func (d *differ) product(e *ir.Binary, gs []guard, f ir.Expr) (bool, error) {
	if d.chained[e] {
		return false, nil // an operand of a chain already found to have no repeats
	}
	fs := d.factors(e)
	type group struct {
		g ir.Expr
		n int
	}
	var groups []*group
	byID := map[int]*group{}
	for _, x := range fs {
		id := d.m.ids.id(x)
		if g, ok := byID[id]; ok {
			g.n++
			continue
		}
		byID[id] = &group{g: x, n: 1}
		groups = append(groups, byID[id])
	}
	if len(groups) == len(fs) {
		return false, nil
	}
	// pre[j] is the product of the groups before j, suf[j] of those from j on.
	pre := make([]ir.Expr, len(groups)+1)
	suf := make([]ir.Expr, len(groups)+1)
	for j, g := range groups {
		pre[j+1] = mul(pre[j], power(g.g, g.n))
	}
	for j := len(groups) - 1; j >= 0; j-- {
		suf[j] = mul(power(groups[j].g, groups[j].n), suf[j+1])
	}
	for j, g := range groups {
		if d.m.kinds.Of(g.g) != ir.KindValue {
			continue // an index factor has no derivative
		}
		var scale ir.Expr
		if g.n > 1 {
			scale = mul(flit(float64(g.n)), power(g.g, g.n-1))
		}
		if err := d.walk(g.g, gs, mul(f, mul(scale, mul(pre[j], suf[j+1])))); err != nil {
			return true, err
		}
	}
	return true, nil
}

// power is g^k: nil (1) for k = 0, k copies of g multiplied for
// k <= maxRepeat, else pow(g, k).
func power(g ir.Expr, k int) ir.Expr {
	if k > maxRepeat {
		return call(ir.FuncPow, g, flit(float64(k)))
	}
	var out ir.Expr
	for range k {
		out = mul(out, g)
	}
	return out
}
