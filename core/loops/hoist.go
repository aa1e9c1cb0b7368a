package loops

import (
	"slices"

	"github.com/neoflow/neoflow/core/ir"
)

// HoistGuards moves the conditions of guarded combining stores out of the
// loops they do not depend on, so that a guard which fails skips a whole
// inner loop nest instead of adding the identity at every point. It
// rewrites body in place; the pipeline's hoist-guards pass (HoistFunc) runs
// it on every CPU nest.
//
// A store qualifies when it combines (+=, *=, max=, min=) a value of the
// form where(C, B, e) with e the identity of its operator (0 for +=, 1
// for *=, -inf for max=, +inf for min=); nested where(C, where(C', B, e),
// e) joins C and C'. Skipping such a store changes nothing: a sum started
// at +0 is never -0, so adding a zero of either sign is a no-op, and the
// others are exact by definition of the identity. Each conjunct of C that
// reads no tensor (pure index arithmetic, which the C code evaluates
// unconditionally anyway) is placed as an If as far out as it can go:
// just inside the innermost loop whose variable it mentions, but never
// above the chain of single-child loops that ends at the store (the loops
// whose every iteration does nothing but that store), never inside a
// collapsed parallel group, and never across a lane loop: a conjunct
// mentioning a lane loop's variable stays in the where, so the lane loop
// still vectorizes. The conjuncts that stay keep their order in C.
func HoistGuards(body []Node) []Node { return hoistIn(body, 0) }

// hoistIn rewrites body; collapsed > 0 means body is inside a collapsed
// parallel group that has that many loop levels still to come, so no If
// may be placed here.
func hoistIn(body []Node, collapsed int) []Node {
	for i, n := range body {
		if c, ok := chainOf(n); ok {
			if out, changed := c.hoist(collapsed); changed {
				body[i] = out
				continue
			}
		}
		switch n := n.(type) {
		case *Loop:
			if n.Vector {
				continue // a lane loop keeps its guards in the where
			}
			inner := max(collapsed-1, 0)
			if n.Parallel && n.Collapse > 1 {
				inner = n.Collapse - 1
			}
			n.Body = hoistIn(n.Body, inner)
		case *Block:
			n.Body = hoistIn(n.Body, collapsed)
		case *If:
			n.Body = hoistIn(n.Body, collapsed)
		}
	}
	return body
}

// chain is a run of loops, each the only child of the one before, ending
// at a store.
type chain struct {
	loops []*Loop
	store *Store
}

func chainOf(n Node) (chain, bool) {
	var c chain
	for {
		switch x := n.(type) {
		case *Store:
			c.store = x
			return c, true
		case *Loop:
			if len(x.Body) != 1 {
				return c, false
			}
			c.loops = append(c.loops, x)
			n = x.Body[0]
		default:
			return c, false
		}
	}
}

// hoist rewrites the chain; it returns the node that replaces its top and
// whether anything moved. The first collapsed positions are inside a
// collapsed parallel group that starts above the chain.
func (c chain) hoist(collapsed int) (Node, bool) {
	s := c.store
	if s.Op == ir.Assign {
		return nil, false
	}
	conds, body, ok := guarded(s.Value, s.Op)
	if !ok {
		return nil, false
	}
	// legal[p]: an If may wrap the node at chain position p (0: the top
	// loop, or the store when there is none; p: the body of loop p-1).
	// lane[p]: the loop at position p is a lane loop or inside one.
	n := len(c.loops)
	legal := make([]bool, n+1)
	for p := range legal {
		legal[p] = p >= collapsed
	}
	depth := map[string]int{}
	blocked := n + 1 // positions from here on are inside a lane loop
	for k, lp := range c.loops {
		depth[lp.Var] = k
		if lp.Parallel && lp.Collapse > 1 {
			for p := k + 1; p < k+lp.Collapse && p <= n; p++ {
				legal[p] = false
			}
		}
		if lp.Vector && blocked > n {
			blocked = k + 1
		}
	}
	at := map[int][]ir.Expr{}
	var kept []ir.Expr
	for _, cond := range conds {
		p, ok := position(cond, depth)
		for ok && p <= n && !legal[p] {
			p++
		}
		if !ok || p >= blocked || p > n {
			kept = append(kept, cond)
			continue
		}
		at[p] = append(at[p], cond)
	}
	if len(at) == 0 {
		return nil, false
	}
	if len(kept) > 0 {
		s.Value = &ir.Where{Cond: ir.AndAll(kept), Then: body, Else: &ir.FloatLit{Value: Identity(s.Op)}}
	} else {
		s.Value = body
	}
	// Wrap innermost first, so that the loop bodies are still the chain.
	ps := make([]int, 0, len(at))
	for p := range at {
		ps = append(ps, p)
	}
	slices.Sort(ps)
	var top Node = s
	if n > 0 {
		top = c.loops[0]
	}
	for i := len(ps) - 1; i >= 0; i-- {
		p := ps[i]
		if p == 0 {
			top = &If{Cond: ir.AndAll(at[p]), Body: []Node{top}}
			continue
		}
		lp := c.loops[p-1]
		lp.Body = []Node{&If{Cond: ir.AndAll(at[p]), Body: lp.Body}}
	}
	return top, true
}

// guarded splits v = where(C, B, e), e the identity of op, into the
// conjuncts of C (nested wheres joined) and B.
func guarded(v ir.Expr, op ir.ReduceOp) ([]ir.Expr, ir.Expr, bool) {
	var conds []ir.Expr
	for {
		w, ok := v.(*ir.Where)
		if !ok || !isIdentity(w.Else, op) {
			break
		}
		conds = append(conds, ir.Conjuncts(w.Cond)...)
		v = w.Then
	}
	return conds, v, len(conds) > 0
}

func isIdentity(e ir.Expr, op ir.ReduceOp) bool {
	var v float64
	switch e := e.(type) {
	case *ir.FloatLit:
		v = e.Value
	case *ir.IntLit:
		v = float64(e.Value)
	default:
		return false
	}
	return v == Identity(op)
}

// position is the chain position a condition can move to: one past the
// deepest chain loop it mentions, 0 for none. It fails for a condition
// that reads a tensor (a where may guard that read by an earlier
// conjunct, and a read may fault).
func position(cond ir.Expr, depth map[string]int) (int, bool) {
	p, ok := 0, true
	ir.Walk(cond, func(e ir.Expr) bool {
		switch e := e.(type) {
		case *ir.Access:
			ok = false
		case *ir.Index:
			if d, in := depth[e.Name]; in {
				p = max(p, d+1)
			}
		}
		return true
	})
	return p, ok
}
