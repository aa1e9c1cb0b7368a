package loops

import "github.com/neoflow/neoflow/core/ir"

// VersionLanes gives a lane loop whose stores hold guards on the lane
// variable a second, unguarded copy for the iterations where every guard
// holds on all lanes. It rewrites body in place; the pipeline's
// version-lanes pass (VersionFunc) runs it on every CPU nest, after
// hoist-guards.
//
// A where(C, T, E) qualifies when C reads no tensor, mentions the lane
// variable and is a conjunction of comparisons (<, <=, >, >=, ==) of
// index expressions affine in it (a constant coefficient). Each such
// comparison holds on the whole lane range when it holds at both ends, so
// when C holds for the first and the last lane the where is T on every
// lane:
//
//	if (C[l=0] && C[l=V-1]) { lane loop with each qualifying where replaced by T }
//	if (!(C[l=0] && C[l=V-1])) { the lane loop as it was }
//
// The copy reads exactly what the guarded loop reads where its guards
// hold, and gives the same values; it spares the masked loads and blends
// of a guarded lane loop (kernels/cgen) on the interior of a padded
// convolution's gradient, where the guards fail only near the borders.
// Only lane loops whose body is stores are versioned, and never a parallel
// one.
func VersionLanes(body []Node) []Node {
	for i, n := range body {
		switch n := n.(type) {
		case *Loop:
			if n.Vector && !n.Parallel {
				if v, ok := versionLane(n); ok {
					body[i] = v
				}
				continue
			}
			n.Body = VersionLanes(n.Body)
		case *Block:
			n.Body = VersionLanes(n.Body)
		case *If:
			n.Body = VersionLanes(n.Body)
		}
	}
	return body
}

// versionLane is the versioned form of lane loop l, as a Block holding
// the two Ifs; ok is false when no store of l has a qualifying where.
func versionLane(l *Loop) (Node, bool) {
	var conds []ir.Expr
	plain := make([]Node, len(l.Body))
	for i, n := range l.Body {
		s, ok := n.(*Store)
		if !ok {
			return nil, false
		}
		v := stripLaneGuards(s.Value, l.Var, &conds)
		plain[i] = &Store{Dst: s.Dst, Op: s.Op, Value: v}
	}
	if len(conds) == 0 {
		return nil, false
	}
	var ends []ir.Expr
	for _, c := range conds {
		for _, at := range []int64{0, l.Extent - 1} {
			ends = append(ends, Subst(c, map[string]ir.Expr{l.Var: Lit(at)}))
		}
	}
	cond := ir.AndAll(ends)
	fast := *l
	fast.Body = plain
	return &Block{Comment: "lanes versioned on their guards", Body: []Node{
		&If{Cond: cond, Body: []Node{&fast}},
		&If{Cond: &ir.Unary{Op: ir.Not, X: cond}, Body: []Node{l}},
	}}, true
}

// stripLaneGuards is e with every qualifying where (VersionLanes) replaced
// by its then-branch; it appends their conditions to conds.
func stripLaneGuards(e ir.Expr, lane string, conds *[]ir.Expr) ir.Expr {
	switch e := e.(type) {
	case *ir.Where:
		if laneConvex(e.Cond, lane) {
			*conds = append(*conds, e.Cond)
			return stripLaneGuards(e.Then, lane, conds)
		}
		return &ir.Where{Pos: e.Pos, Cond: e.Cond, Then: stripLaneGuards(e.Then, lane, conds), Else: stripLaneGuards(e.Else, lane, conds)}
	case *ir.Unary:
		return &ir.Unary{Pos: e.Pos, Op: e.Op, X: stripLaneGuards(e.X, lane, conds)}
	case *ir.Binary:
		return &ir.Binary{Pos: e.Pos, Op: e.Op, X: stripLaneGuards(e.X, lane, conds), Y: stripLaneGuards(e.Y, lane, conds)}
	case *ir.Call:
		out := &ir.Call{Pos: e.Pos, Fn: e.Fn, Args: make([]ir.Expr, len(e.Args))}
		for i, a := range e.Args {
			out.Args[i] = stripLaneGuards(a, lane, conds)
		}
		return out
	}
	return e
}

// laneConvex reports whether c qualifies as a lane guard: it mentions the
// lane, reads no tensor, and each conjunct compares expressions affine in
// the lane, so it holds on a range of lanes when it holds at both ends.
func laneConvex(c ir.Expr, lane string) bool {
	if !Uses(c, lane) || readsTensor(c, "") {
		return false
	}
	for _, x := range ir.Conjuncts(c) {
		b, ok := x.(*ir.Binary)
		if !ok {
			return false
		}
		switch b.Op {
		case ir.Lt, ir.Le, ir.Gt, ir.Ge, ir.Eq:
		default:
			return false
		}
		if _, ok := Coefficient(b.X, lane); !ok {
			return false
		}
		if _, ok := Coefficient(b.Y, lane); !ok {
			return false
		}
	}
	return true
}
