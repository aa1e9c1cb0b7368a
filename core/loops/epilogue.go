package loops

import (
	"slices"

	"github.com/neoflow/neoflow/core/ir"
)

// Epilogue fusion: an '=' statement without reduction axes, joined to a
// reduction statement (ir.BoundStmt.Joined; core/fuse's fuse-group joins
// them) and over the reduction's spatial axes, runs inside the
// reduction's nest, right after each element of the reduction's output is
// complete and stored, and reads it there: MI-LSTM's P = WX * UH + Bias
// after UH's product, in UH's nest under UH's own schedule. The nest is
// the reduction's, lowered as it would be alone; the epilogue statements
// are stored after every store of a complete element (a local
// accumulator's result: the untiled lowering's, a reduction lane loop's
// combined lanes, a tiled accumulator's; on a GPU, a thread's register
// tile's or the default nest's, in the same thread, so the statement
// costs no launch of its own, or, under a block reduction, in the thread
// that stores the block's result). A schedule that combines partial
// results into the output has no such store: the members are then
// lowered one by one.

// EpilogueMembers reports whether members (a statement and the ones
// joined to it, in order) are a reduction writing its whole tensor
// followed by epilogue statements: '=' statements without reduction axes
// whose axes are the reduction's spatial axes (names and extents).
func EpilogueMembers(members []*ir.BoundStmt) bool {
	if len(members) < 2 {
		return false
	}
	r := members[0]
	if r.Stmt.Reduce == ir.Assign || r.Offset != nil {
		return false
	}
	for _, e := range members[1:] {
		if e.Stmt.Reduce != ir.Assign || len(e.Reduction) > 0 || !sameAxes(e.Spatial, r.Spatial) {
			return false
		}
	}
	return true
}

// sameAxes reports whether a and b name the same axes with the same
// extents, in any order.
func sameAxes(a, b []ir.Var) bool {
	if len(a) != len(b) {
		return false
	}
	for _, v := range a {
		if !slices.Contains(b, v) {
			return false
		}
	}
	return true
}

// attachEpilogue adds the epilogue statements eps to nest, the lowered
// reduction: after every store of a complete element of its output, each
// statement's store at that element. It reports false, changing nothing,
// when the nest is not one statement's CPU or GPU nest or stores anything
// into the output but complete elements (an identity fill, a partial
// result combined in, a packed copy, an atomic add).
func attachEpilogue(nest *Nest, eps []*ir.BoundStmt) bool {
	s := nest.Schedule
	if s.Group != nil || nest.Members != nil || s.Scatter || s.MMA != nil {
		return false
	}
	r := nest.Stmt
	if s.GPUReduce != nil {
		return attachAfterCombine(nest.Body, r, eps)
	}
	final, ok := 0, true
	walkStores(nest.Body, func(s *Store) {
		if s.Dst.Tensor != r.Stmt.Tensor {
			return
		}
		if _, lit := s.Value.(*ir.FloatLit); s.Op != ir.Assign || s.Vec > 1 || s.Atomic || lit || len(s.Dst.Indices) != len(r.Spatial) {
			ok = false
		}
		final++
	})
	if !ok || final == 0 {
		return false
	}
	nest.Body = withEpilogue(nest.Body, r, eps)
	return true
}

// attachAfterCombine adds eps to every BlockCombine in body that stores
// r's output, to run in the storing thread after its store; false when
// there is none.
func attachAfterCombine(body []Node, r *ir.BoundStmt, eps []*ir.BoundStmt) bool {
	found := false
	var walk func([]Node)
	walk = func(nodes []Node) {
		for _, n := range nodes {
			switch x := n.(type) {
			case *BlockCombine:
				if x.Dst.Tensor == r.Stmt.Tensor && len(x.Dst.Indices) == len(r.Spatial) {
					x.Then = epilogueStores(r, x.Dst, eps)
					found = true
				}
			case *Loop:
				walk(x.Body)
			case *Block:
				walk(x.Body)
			case *If:
				walk(x.Body)
			}
		}
	}
	walk(body)
	return found
}

// walkStores calls f on every Store in body.
func walkStores(body []Node, f func(*Store)) {
	for _, n := range body {
		switch x := n.(type) {
		case *Store:
			f(x)
		case *Loop:
			walkStores(x.Body, f)
		case *Block:
			walkStores(x.Body, f)
		case *If:
			walkStores(x.Body, f)
		}
	}
}

// withEpilogue is body with the epilogue statements' stores after every
// store into r's output, at the element it stores.
func withEpilogue(body []Node, r *ir.BoundStmt, eps []*ir.BoundStmt) []Node {
	out := make([]Node, 0, len(body))
	for _, n := range body {
		out = append(out, n)
		switch x := n.(type) {
		case *Store:
			if x.Dst.Tensor == r.Stmt.Tensor {
				out = append(out, epilogueStores(r, x.Dst, eps)...)
			}
		case *Loop:
			x.Body = withEpilogue(x.Body, r, eps)
		case *Block:
			x.Body = withEpilogue(x.Body, r, eps)
		case *If:
			x.Body = withEpilogue(x.Body, r, eps)
		}
	}
	return out
}

// epilogueStores is the stores of eps at the element dst of r's output.
func epilogueStores(r *ir.BoundStmt, dst *ir.Access, eps []*ir.BoundStmt) []Node {
	env := map[string]ir.Expr{}
	for d, ax := range r.Spatial {
		env[ax.Name] = dst.Indices[d]
	}
	out := make([]Node, len(eps))
	for k, e := range eps {
		out[k] = &Store{Dst: outAccess(e, env), Op: ir.Assign, Value: Subst(e.Stmt.RHS, env)}
	}
	return out
}

// EpilogueInLanes reports whether statement r's default schedule, alone,
// stores the elements of its output in lanes over a spatial axis, the
// last axis of r's output and of e's (an epilogue statement over r's
// spatial axes): the epilogue statement then runs in those lanes too, on
// contiguous elements. Under a lane reduction (the usual schedule of a
// product with short spatial axes) the output's elements are stored one
// at a time, and an epilogue there would run unvectorized, along the
// reduction's loop order.
func EpilogueInLanes(spec *ir.Spec, r, e *ir.BoundStmt) bool {
	if len(r.Spatial) == 0 || len(e.Spatial) == 0 {
		return false
	}
	s := defaultSchedule(spec, r)
	lane, red, ok := s.lane(r)
	return ok && !red && s.Tiling == nil && !s.Scatter &&
		lane.Name == r.Spatial[len(r.Spatial)-1].Name && lane.Name == e.Spatial[len(e.Spatial)-1].Name
}
