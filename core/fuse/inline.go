package fuse

import (
	"slices"

	"github.com/neoflow/neoflow/core/ir"
)

// Inline substitutes elementwise temporaries into their readers (recompute
// instead of store). A temporary qualifies when one whole statement
// writes it with '=' and no option keeps it; it is inlined when the
// reward is positive: the traffic of storing and reloading it saved,
// against the arithmetic its readers repeat (each reader evaluates its
// right-hand side once per read per point: d_E read once per point of
// the part of d_G that reads it repeats nothing; d_G read by a
// contraction over b would be recomputed for every b), plus its loop
// nest saved. Candidates go greedily, the best reward first; a
// temporary that stays stored is noted with the reward that refused it.
// Each read P[e...] becomes P's right-hand side with P's axes replaced
// by e...; the statement that wrote an inlined temporary is left for
// Prune.
func Inline(spec *ir.Spec, opts Options, notes *Notes) *ir.Spec {
	stmts := slices.Clone(spec.Stmts)
	u := newUses(stmts)
	// The rewards, kept until a statement they depend on changes: the
	// candidate's own, or one that reads it.
	rewards := make([]Reward, len(stmts))
	ok, fresh := make([]bool, len(stmts)), make([]bool, len(stmts))
	reward := func(i int) (Reward, bool) {
		if !fresh[i] {
			rewards[i], ok[i] = inlineReward(spec, u, i, opts)
			fresh[i] = true
		}
		return rewards[i], ok[i]
	}
	changed := false
	for {
		best, bestR := -1, Reward{}
		for i := range stmts {
			if r, ok := reward(i); ok && r.R > 0 && (best < 0 || r.R > bestR.R) {
				best, bestR = i, r
			}
		}
		if best < 0 {
			break
		}
		p := stmts[best]
		var users []string
		fresh[best] = false
		for _, r := range u.readersOf(p.Stmt.Tensor) {
			for _, t := range u.set(r, withRHS(stmts[r], inlineInto(stmts[r].Stmt.RHS, p))) {
				for _, w := range u.writersOf(t) {
					fresh[w] = false
				}
			}
			fresh[r] = false
			users = append(users, stmts[r].Stmt.Tensor)
		}
		notes.add("inline: %s (fan-in %s) into %v: %s", p.Stmt.Tensor, fanIn(p), users, bestR)
		changed = true
	}
	for i, st := range stmts {
		if r, ok := reward(i); ok {
			notes.add("store: %s stays a temporary, read by %d statements: inlining it has %s", st.Stmt.Tensor, len(u.readers[st.Stmt.Tensor]), r)
		}
	}
	if !changed {
		return spec
	}
	return spec.WithStmts(stmts)
}

// fanIn is the paper's class of a statement: "One" when it reads one
// tensor, "Many" when it reads several. One+One merges always win; a
// Many statement inlined into several readers usually recomputes.
func fanIn(st *ir.BoundStmt) string {
	if len(readCounts(st.Stmt.RHS)) <= 1 {
		return "One"
	}
	return "Many"
}

// inlineReward is the reward of inlining statement i into its readers,
// and whether it is a candidate at all.
func inlineReward(spec *ir.Spec, u *uses, i int, opts Options) (Reward, bool) {
	if !inlinable(spec, u, i, opts) {
		return Reward{}, false
	}
	p := u.stmts[i]
	var evals int64
	for _, r := range u.readersOf(p.Stmt.Tensor) {
		evals += u.stmts[r].Points() * int64(u.reads(r, p.Stmt.Tensor))
	}
	n, a := p.Points(), accesses(p.Stmt.RHS)
	size := int64(spec.DType.Size())
	// Saved: P's stores and its readers' loads of it; moved: P's own loads,
	// made evals times instead of n times.
	traffic := size * (n + evals + a*(n-evals))
	// The arithmetic repeated is P's less its loads (counted as traffic):
	// a copy repeats none.
	return opts.Machine.reward(traffic, (opts.Machine.Cost(p.Stmt.RHS)-a)*(n-evals), 1), true
}

// inlinable reports whether statement i writes a temporary that Inline
// may substitute into its readers. A temporary compared with == or !=
// (the gradient of min and max finds its argument by t == min(t)) stays
// stored: recomputed, its value may be rounded differently from the
// stored one it is compared with (an unrounded float32 sum in the
// interpreter, a multiply-add contracted in one place and not the
// other), and the comparison would fail. One whose value rounds nothing
// (roundsNothing) may be inlined all the same.
func inlinable(spec *ir.Spec, u *uses, i int, opts Options) bool {
	p := u.stmts[i]
	name := p.Stmt.Tensor
	if p.Stmt.Reduce != ir.Assign || p.Offset != nil || !isTemp(spec, name, opts) || len(u.writersOf(name)) != 1 {
		return false
	}
	return len(u.readers[name]) > 0 && u.reads(i, name) == 0 &&
		(!u.comparedExactly(name) || roundsNothing(p.Stmt.RHS))
}

// roundsNothing reports whether e computes its value without rounding:
// reads, constants, comparisons, && and ||, negation and wheres of those,
// such as a ReLU's mask where(X[i] <= 0, 1, 0). Recomputed anywhere, it
// gives the same bits, so a comparison of it with == or != holds where
// the stored one's did. (Index expressions inside reads and comparisons of
// loop variables are integers: exact.)
func roundsNothing(e ir.Expr) bool {
	exact := true
	ir.Walk(e, func(x ir.Expr) bool {
		switch x := x.(type) {
		case *ir.Access:
			return false // its indices are integers
		case *ir.Binary:
			if x.Op.IsCompare() {
				return !isIndexCompare(x) // a comparison of loop variables is integer arithmetic
			}
			exact = exact && x.Op.IsLogic()
		case *ir.Unary, *ir.Where, *ir.FloatLit, *ir.IntLit, *ir.Index:
		default:
			exact = false
		}
		return exact
	})
	return exact
}

// isIndexCompare reports whether comparison c reads no tensor: it compares
// loop variables and integers only.
func isIndexCompare(c *ir.Binary) bool {
	tensor := false
	ir.Walk(c, func(x ir.Expr) bool {
		_, ok := x.(*ir.Access)
		tensor = tensor || ok
		return !tensor
	})
	return !tensor
}

// ComparesExactly reports whether e compares a read of tensor name with
// == or != (see comparedExactly).
func ComparesExactly(e ir.Expr, name string) bool {
	found := false
	ir.Walk(e, func(x ir.Expr) bool {
		if b, ok := x.(*ir.Binary); ok && (b.Op == ir.Eq || b.Op == ir.Ne) && (reads(b.X, name) > 0 || reads(b.Y, name) > 0) {
			found = true
		}
		return !found
	})
	return found
}

// inlineInto replaces every read of p's tensor in e by p's right-hand
// side at the read's indices.
func inlineInto(e ir.Expr, p *ir.BoundStmt) ir.Expr {
	return ir.Rewrite(e, func(n ir.Expr) ir.Expr {
		a, ok := n.(*ir.Access)
		if !ok || a.Tensor != p.Stmt.Tensor {
			return nil
		}
		sub := map[string]ir.Expr{}
		for d, v := range p.Spatial {
			sub[v.Name] = a.Indices[d]
		}
		return ir.SubstIndex(p.Stmt.RHS, sub)
	})
}
