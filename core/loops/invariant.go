package loops

import (
	"fmt"
	"strings"

	"github.com/neoflow/neoflow/core/ir"
)

// HoistInvariants is the "hoist-invariants" pass: in every CPU nest, a
// math call whose value a serial or lane loop does not change is computed
// once before the loop, into a scalar Local, and read from it inside:
//
//	for j.o < 62                              %inv0[] = log(S[a])
//	  vector for j.l < 16                     for j.o < 62
//	    T[a, j] = X[a, j] - log(S[a])   ->      vector for j.l < 16
//	                                              T[a, j] = X[a, j] - %inv0[]
//
// C compilers do this themselves only when they can prove the call's
// argument unchanged by the loop's stores, which a store into another
// tensor of the same kernel (a fused nest, FuseNests) or a barrier to
// vectorization stops: GCC then left the lane loop above scalar, one
// logf per element.
//
// A candidate is a maximal subexpression of a store's value that holds a
// call (ir.Call), uses no variable of the loop or of a loop inside it,
// reads no Local, and reads no tensor that a store inside the loop
// writes. Subexpressions under a where's branches or the right side of
// && and ||, and the bodies of Ifs, are not candidates: a guard may be
// what keeps their reads in bounds.
// In a fused nest (FuseNests: Members), a read of a tensor is a candidate
// too: GCC 12 left the lane loop of Y[n, k] = ... Mu[n] ... R[n] scalar
// ("latch block not empty") when Mu and R were stored earlier in the same
// iteration of the nest's parallel loop, one erff per element (a layer
// norm and GELU, 512x256: 1.06 ms against 0.14 unfused).
// It is placed just before the outermost loop it is invariant in, never
// outside a parallel loop or between collapsed loops; the loop runs at
// least once (extents are at least 1), so the call is evaluated no more
// often than before. The value is bit for bit the same.
func HoistInvariants(fn *Func) *Func {
	for _, n := range fn.Nests {
		if n.cpuLoops() {
			h := &hoister{reads: len(n.Members) > 1}
			n.Body = h.body(n.Body)
		}
	}
	return fn
}

// hoister numbers the scalars it makes; reads says that tensor reads are
// candidates too (a fused nest).
type hoister struct {
	next  int
	reads bool
}

// body hoists out of the loops in nodes, innermost first, and returns
// nodes with each loop preceded by what was hoisted out of it.
func (h *hoister) body(nodes []Node) []Node {
	out := make([]Node, 0, len(nodes))
	for _, n := range nodes {
		switch n := n.(type) {
		case *Loop:
			out = append(out, h.loop(n)...)
		case *Block:
			n.Body = h.body(n.Body)
			out = append(out, n)
		default:
			out = append(out, n) // an If's body stays as it is (see HoistInvariants)
		}
	}
	return out
}

// loop hoists out of l's inner loops, then out of l itself: the hoisted
// scalars (Local and Store pairs) that l's body starts with and that do
// not depend on l move before it, with the new ones l's stores give.
func (h *hoister) loop(l *Loop) []Node {
	if l.Parallel || l.Bind != BindNone {
		in := innermost(l, l.Collapse) // nothing goes between collapsed loops
		in.Body = h.body(in.Body)
		return []Node{l}
	}
	l.Body = h.body(l.Body)
	if l.Extent < 1 || l.By > 0 {
		// A loop to part of a size (a lane split's) may run no time at
		// some sizes: what it reads is read only when it runs.
		return []Node{l}
	}
	inner := loopVarsIn([]Node{l})
	written := map[string]bool{}
	for name, u := range uses(l.Body) {
		if u.writes {
			written[name] = true
		}
	}
	var before []Node
	body := l.Body[:0:0]
	for i := 0; i < len(l.Body); i++ {
		if loc, st, ok := hoisted(l.Body, i); ok && invariant(st.Value, inner, written, true) {
			before = append(before, loc, st)
			i++
			continue
		}
		body = append(body, l.Body[i])
	}
	l.Body = body
	h.stores(l.Body, inner, written, &before)
	return append(before, l)
}

// stores replaces, in the stores of nodes (not inside Ifs), each
// candidate of HoistInvariants by a new scalar, appended to *before.
func (h *hoister) stores(nodes []Node, inner, written map[string]bool, before *[]Node) {
	for _, n := range nodes {
		switch n := n.(type) {
		case *Loop:
			h.stores(n.Body, inner, written, before)
		case *Block:
			h.stores(n.Body, inner, written, before)
		case *Store:
			n.Value = h.replace(n.Value, inner, written, before)
		}
	}
}

func (h *hoister) replace(e ir.Expr, inner, written map[string]bool, before *[]Node) ir.Expr {
	if w, ok := e.(*ir.Where); ok { // only the condition is evaluated at every point
		c := *w
		c.Cond = h.replace(w.Cond, inner, written, before)
		return &c
	}
	if h.candidate(e) && invariant(e, inner, written, !h.reads) {
		name := fmt.Sprintf("%sinv%d", LocalPrefix, h.next)
		h.next++
		*before = append(*before, &Local{Name: name, Len: 1}, &Store{Dst: &ir.Access{Tensor: name}, Op: ir.Assign, Value: e})
		return &ir.Access{Tensor: name}
	}
	switch x := e.(type) {
	case *ir.Unary:
		c := *x
		c.X = h.replace(x.X, inner, written, before)
		return &c
	case *ir.Binary:
		c := *x
		c.X = h.replace(x.X, inner, written, before)
		if x.Op != ir.And && x.Op != ir.Or { // && and || evaluate their right side only when needed
			c.Y = h.replace(x.Y, inner, written, before)
		}
		return &c
	case *ir.Call:
		c := *x
		c.Args = make([]ir.Expr, len(x.Args))
		for i, a := range x.Args {
			c.Args[i] = h.replace(a, inner, written, before)
		}
		return &c
	}
	return e // a read (its indices are index arithmetic), a literal or a variable
}

// candidate reports whether e is a call, or with h.reads a tensor read.
func (h *hoister) candidate(e ir.Expr) bool {
	switch e := e.(type) {
	case *ir.Call:
		return true
	case *ir.Access:
		return h.reads && !IsLocal(e.Tensor)
	}
	return false
}

// invariant reports whether e holds none of: a variable of inner, a read
// of a Local, a read of a tensor in written; and, with needCall, a
// value-kind call.
func invariant(e ir.Expr, inner, written map[string]bool, needCall bool) bool {
	ok, call := true, false
	ir.Walk(e, func(x ir.Expr) bool {
		switch x := x.(type) {
		case *ir.Index:
			ok = ok && !inner[x.Name]
		case *ir.Access:
			ok = ok && !IsLocal(x.Tensor) && !written[x.Tensor]
		case *ir.Call:
			call = true
		}
		return ok
	})
	return ok && (call || !needCall)
}

// hoisted reports whether nodes[i] and nodes[i+1] are a scalar that an
// inner loop's hoisting made: its Local and the Store that sets it.
func hoisted(nodes []Node, i int) (*Local, *Store, bool) {
	if i+1 >= len(nodes) {
		return nil, nil, false
	}
	loc, ok := nodes[i].(*Local)
	if !ok || !strings.HasPrefix(loc.Name, LocalPrefix+"inv") {
		return nil, nil, false
	}
	st, ok := nodes[i+1].(*Store)
	if !ok || st.Dst.Tensor != loc.Name {
		return nil, nil, false
	}
	return loc, st, true
}

// innermost is the k-th of the perfectly nested loops that start at l.
func innermost(l *Loop, k int) *Loop {
	for ; k > 1; k-- {
		l = l.Body[0].(*Loop)
	}
	return l
}
