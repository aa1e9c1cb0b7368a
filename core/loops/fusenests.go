package loops

import (
	"maps"
	"slices"
	"strings"

	"github.com/neoflow/neoflow/core/ir"
)

// FuseNests is the "fuse-nests" pass: consecutive CPU nests whose outer
// loops agree run in one nest, each member's body in its own scope inside
// the shared outer loops:
//
//	parallel for a < 64 { M[a] max= ... }        parallel for a < 64 {
//	parallel for a < 64 { S[a] += exp(.. M[a]) }   { M[a] max= ... }
//	parallel for g < 64 { T[g, j] = .. S[g] .. }   { S[a] += exp(.. M[a]) }
//	                                                 { T[a, j] = .. S[a] .. }
//	                                               }
//
// A softmax or a layer norm then makes one pass of parallel work per row,
// with the row in cache, instead of one parallel region per statement.
// Fusion at the loop level complements core/fuse's groups, which run
// statements point by point over the same axes: a member here keeps its
// own inner loops (its reduction, its lanes), so a reduction's result
// feeds the next statement's loops over the same row.
//
// Two nests fuse when both are untiled or tiled CPU nests (cpuLoops)
// whose body is one loop, and the first d loops of each (d the Collapse
// of a parallel outer loop, else 1; perfectly nested) have the same
// extents, none is a lane loop, and the outer loops agree on Parallel and
// Collapse: a serial loop may carry a reduction from one iteration to the
// next, which a parallel one would race on. The second nest's outer
// variables are renamed to the first's; none of its inner loops may
// already use those names. Dependences stay within an iteration: for
// every tensor that one nest writes and the other reads or writes, every
// access of it in both nests indexes some dimensions by exactly the outer
// variables (the same dimensions in every access) and no other dimension
// by them, so iteration o of the second nest touches only the slice
// iteration o of the first wrote, and no other iteration touches it.
func FuseNests(fn *Func) *Func {
	var out []*Nest
	for _, n := range fn.Nests {
		if k := len(out); k > 0 {
			if m := fuseNests(out[k-1], n); m != nil {
				out[k-1] = m
				continue
			}
		}
		out = append(out, n)
	}
	fn.Nests = out
	return fn
}

// fuseNests is a and b as one nest, or nil when they cannot fuse.
func fuseNests(a, b *Nest) *Nest {
	la, lb := outerLoops(a), outerLoops(b)
	if la == nil || lb == nil || len(la) != len(lb) || la[0].Parallel != lb[0].Parallel {
		return nil
	}
	outer := make([]string, len(la))
	env := map[string]ir.Expr{}
	for k := range la {
		if la[k].Extent != lb[k].Extent {
			return nil
		}
		outer[k] = la[k].Var
		env[lb[k].Var] = Var(la[k].Var)
	}
	innerA, innerB := la[len(la)-1].Body, lb[len(lb)-1].Body
	if !plainCPU(innerA) || !plainCPU(innerB) || usesLoopVar(innerB, outer) {
		return nil
	}
	innerB = cloneNodes(innerB, env, "", nil)
	if !rowLocal(innerA, innerB, outer) {
		return nil
	}
	loops := make([]*Loop, len(la))
	for k, l := range la {
		c := *l
		loops[k] = &c
		if k > 0 {
			loops[k-1].Body = []Node{loops[k]}
		}
	}
	loops[len(loops)-1].Body = append(scoped(a, innerA), scoped(b, innerB)...)
	n := &Nest{Index: a.Index, Stmt: a.Stmt, Members: append(nestMembers(a), nestMembers(b)...), Schedule: a.Schedule, Body: []Node{loops[0]}}
	if a.SizeValues != nil || b.SizeValues != nil {
		n.SizeValues = map[string]int64{}
		maps.Copy(n.SizeValues, a.SizeValues)
		maps.Copy(n.SizeValues, b.SizeValues)
	}
	return n
}

// outerLoops lists the loops of n that fusion shares: the collapsed
// parallel loops, or the outermost loop; nil when n is not a CPU nest
// with one loop as its body.
func outerLoops(n *Nest) []*Loop {
	if !n.cpuLoops() || len(n.Body) != 1 {
		return nil
	}
	l, ok := n.Body[0].(*Loop)
	if !ok {
		return nil
	}
	d := 1
	if l.Parallel {
		d = max(l.Collapse, 1)
	}
	out := []*Loop{l}
	for len(out) < d {
		if len(l.Body) != 1 {
			return nil
		}
		if l, ok = l.Body[0].(*Loop); !ok {
			return nil
		}
		out = append(out, l)
	}
	for _, l := range out {
		if l.Vector || l.Bind != BindNone {
			return nil
		}
	}
	return out
}

// fusedScope marks the Blocks that hold the members' bodies in a fused
// nest, so that fusing it again does not wrap them twice.
const fusedScope = "fused: "

// scoped is n's inner body as Blocks of the fused nest: as they are when
// n is a fused nest already, else in one Block.
func scoped(n *Nest, inner []Node) []Node {
	if len(inner) > 0 {
		if b, ok := inner[0].(*Block); ok && strings.HasPrefix(b.Comment, fusedScope) {
			return inner
		}
	}
	return []Node{&Block{Comment: fusedScope + n.Stmt.Stmt.Tensor, Body: inner}}
}

func nestMembers(n *Nest) []int {
	if n.Members != nil {
		return n.Members
	}
	return []int{n.Index}
}

// plainCPU reports whether nodes hold only what cloneNodes copies whole:
// no GPU barriers or combines, no atomic or vector stores.
func plainCPU(nodes []Node) bool {
	for _, n := range nodes {
		switch n := n.(type) {
		case *Loop:
			if n.Bind != BindNone || !plainCPU(n.Body) {
				return false
			}
		case *Block:
			if !plainCPU(n.Body) {
				return false
			}
		case *If:
			if !plainCPU(n.Body) {
				return false
			}
		case *Store:
			if n.Atomic || n.Vec > 1 {
				return false
			}
		case *Local, *Prefetch:
		default:
			return false
		}
	}
	return true
}

// usesLoopVar reports whether a loop in nodes runs over one of names.
func usesLoopVar(nodes []Node, names []string) bool {
	vars := loopVarsIn(nodes)
	return slices.ContainsFunc(names, func(n string) bool { return vars[n] })
}

// loopVarsIn is the set of the variables of the loops in nodes.
func loopVarsIn(nodes []Node) map[string]bool {
	vars := map[string]bool{}
	var walk func([]Node)
	walk = func(nodes []Node) {
		for _, n := range nodes {
			switch n := n.(type) {
			case *Loop:
				vars[n.Var] = true
				walk(n.Body)
			case *Block:
				walk(n.Body)
			case *If:
				walk(n.Body)
			}
		}
	}
	walk(nodes)
	return vars
}

// tensorUse is how a body accesses one tensor: whether it writes it, and
// every access (stores and reads).
type tensorUse struct {
	writes bool
	access []*ir.Access
}

// uses is the tensor accesses of nodes (Locals excluded), by tensor.
func uses(nodes []Node) map[string]*tensorUse {
	u := map[string]*tensorUse{}
	addUses(nodes, u)
	return u
}

// addUses adds the tensor accesses of nodes to u.
func addUses(nodes []Node, u map[string]*tensorUse) {
	note := func(a *ir.Access, write bool) {
		if IsLocal(a.Tensor) {
			return
		}
		t := u[a.Tensor]
		if t == nil {
			t = &tensorUse{}
			u[a.Tensor] = t
		}
		t.writes = t.writes || write
		t.access = append(t.access, a)
	}
	reads := func(e ir.Expr) {
		ir.Walk(e, func(x ir.Expr) bool {
			if a, ok := x.(*ir.Access); ok {
				note(a, false)
			}
			return true
		})
	}
	for _, n := range nodes {
		switch n := n.(type) {
		case *Loop:
			addUses(n.Body, u)
		case *Block:
			addUses(n.Body, u)
		case *If:
			reads(n.Cond)
			addUses(n.Body, u)
		case *Store:
			note(n.Dst, true)
			for _, x := range n.Dst.Indices {
				reads(x)
			}
			reads(n.Value)
		case *Prefetch:
			reads(n.Addr)
		}
	}
}

// rowLocal reports whether bodies a and b, run one after the other in
// each iteration of the outer loops over outer, compute what running all
// of a's iterations before b's does (FuseNests' condition).
func rowLocal(a, b []Node, outer []string) bool {
	ua, ub := uses(a), uses(b)
	for name, x := range ua {
		y := ub[name]
		if y == nil || !x.writes && !y.writes {
			continue
		}
		if !sliced(append(slices.Clone(x.access), y.access...), outer) {
			return false
		}
	}
	return true
}

// sliced reports whether every access indexes the same dimensions by
// exactly the outer variables, one each, and no other dimension by any of
// them.
func sliced(access []*ir.Access, outer []string) bool {
	var dims []int // dims[k]: the dimension outer[k] indexes
	for _, a := range access {
		at := make([]int, len(outer))
		for k := range at {
			at[k] = -1
		}
		for d, x := range a.Indices {
			if ix, ok := x.(*ir.Index); ok {
				if k := slices.Index(outer, ix.Name); k >= 0 && at[k] < 0 {
					at[k] = d
					continue
				}
			}
			for _, o := range outer {
				if Uses(x, o) {
					return false
				}
			}
		}
		if slices.Contains(at, -1) || dims != nil && !slices.Equal(at, dims) {
			return false
		}
		dims = at
	}
	return true
}
