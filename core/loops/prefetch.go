package loops

import (
	"slices"

	"github.com/neoflow/neoflow/core/ir"
)

// prefetchRows puts, at the top of the loop just outside the lane loop of a
// tiled nest (ord, its loops), a Prefetch of each row that a read through
// an index tensor gathers along the lane axis, for the index tensor's
// element ahead positions further on (in its row-major order, clamped to
// its last element):
//
//	O[b, d] += LUT[I[b, k], d]   (lanes over d, k outside them)
//	prefetch LUT[I[p / K % B, p % K], 0], p = min(b*K + k + ahead, B*K - 1)
//
// A gathered row sits anywhere in memory, so the hardware prefetchers
// cannot guess it; the loads of an iteration then find the row in cache.
// The prefetched element's index tensor read is in bounds by construction;
// the row's address needs no bound (a prefetch never faults).
func prefetchRows(spec *ir.Spec, nest *Nest, ahead int64, ord []tileLoop) {
	st := nest.Stmt
	lane, at := ord[len(ord)-1], ord[len(ord)-2]
	env := tileEnv(st, ord)
	var nodes []Node
	seen := map[string]bool{}
	ir.Walk(st.Stmt.RHS, func(e ir.Expr) bool {
		a, ok := e.(*ir.Access)
		if !ok || !gathersRow(a, lane.axis) {
			return true
		}
		t := spec.Tensor(a.Tensor)
		if t == nil {
			return true
		}
		addr := &ir.Access{Tensor: a.Tensor}
		for _, x := range a.Indices {
			switch ix := x.(type) {
			case *ir.Access:
				if ix.Indirect {
					x = aheadRead(spec, ix, ahead)
				}
			case *ir.Index:
				if ix.Name == lane.axis {
					x = Lit(0) // the row's start
				}
			}
			addr.Indices = append(addr.Indices, x)
		}
		addr = Subst(addr, env).(*ir.Access)
		if key := ir.ExprString(addr); !seen[key] {
			seen[key] = true
			nodes = append(nodes, &Prefetch{Addr: addr, Bytes: lane.extent * int64(spec.ElemType(t).Size())})
		}
		return true
	})
	if len(nodes) == 0 {
		return
	}
	var insert func(body []Node) bool
	insert = func(body []Node) bool {
		for _, n := range body {
			switch x := n.(type) {
			case *Loop:
				if x.Var == at.name {
					x.Body = append(slices.Clone(nodes), x.Body...)
					return true
				}
				if insert(x.Body) {
					return true
				}
			case *Block:
				if insert(x.Body) {
					return true
				}
			}
		}
		return false
	}
	insert(nest.Body)
}

// aheadRead is the read of index tensor x.Tensor ahead elements after x
// in row-major order, clamped to the last element: the coordinates of
// p = min(flatten(x) + ahead, N - 1). When x is read at an index that is
// itself read from an index tensor (I[J[k]]), the look-ahead goes to the
// innermost one, whose position follows the loops (I[J[min(k + ahead,
// N - 1)]]): a value read from J is no position to look ahead from.
func aheadRead(spec *ir.Spec, x *ir.Access, ahead int64) *ir.Access {
	for d, ix := range x.Indices {
		if inner, ok := ix.(*ir.Access); ok && inner.Indirect {
			out := *x
			out.Indices = slices.Clone(x.Indices)
			out.Indices[d] = aheadRead(spec, inner, ahead)
			return &out
		}
	}
	shape := spec.Tensor(x.Tensor).Shape
	n := int64(1)
	for _, d := range shape {
		n *= d
	}
	p := &ir.Call{Fn: ir.FuncMin, Args: []ir.Expr{Add(flatten(x.Indices, shape), Lit(ahead)), Lit(n - 1)}}
	return &ir.Access{Tensor: x.Tensor, Indices: unflatten(p, shape, true), Indirect: true}
}
