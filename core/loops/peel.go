package loops

import (
	"fmt"
	"slices"

	"github.com/neoflow/neoflow/core/ir"
)

// peelRemainder finds the loop over o, the outer loop of a lane remainder
// split (Tiling.Splits), in body and puts after it a Block running its body
// once more with o fixed to its extent and every loop over lane cut to the
// remainder: the lane loop, and a pack's copy loop over the same tile.
// With toRem, the copy's stores into the accumulator (accName) go to the
// remainder's own (remName) instead.
func peelRemainder(body []Node, o, lane tileLoop, toRem bool) []Node {
	out := make([]Node, 0, len(body)+1)
	for _, n := range body {
		switch n := n.(type) {
		case *Loop:
			if n.Var == o.name {
				env := map[string]ir.Expr{o.name: Lit(o.extent)}
				lo := o.extent * o.stride
				copied := cloneNodes(n.Body, env, lane.name, o.rem)
				if toRem {
					renameStores(copied, accName, remName)
				}
				out = append(out, n, &Block{
					Comment: fmt.Sprintf("remainder: %s in [%d, %d)", o.axis, lo, lo+o.rem),
					Body:    copied,
				})
				continue
			}
			n.Body = peelRemainder(n.Body, o, lane, toRem)
		case *Block:
			n.Body = peelRemainder(n.Body, o, lane, toRem)
		case *If:
			n.Body = peelRemainder(n.Body, o, lane, toRem)
		}
		out = append(out, n)
	}
	return out
}

// cloneNodes copies nodes with env substituted into every expression and
// every loop over variable cut running cutTo times.
func cloneNodes(nodes []Node, env map[string]ir.Expr, cut string, cutTo int64) []Node {
	out := make([]Node, 0, len(nodes))
	for _, n := range nodes {
		switch n := n.(type) {
		case *Loop:
			c := *n
			if c.Var == cut {
				c.Extent = cutTo
			}
			c.Body = cloneNodes(n.Body, env, cut, cutTo)
			out = append(out, &c)
		case *Block:
			out = append(out, &Block{Comment: n.Comment, Body: cloneNodes(n.Body, env, cut, cutTo)})
		case *Local:
			c := *n
			out = append(out, &c)
		case *Store:
			out = append(out, &Store{Dst: Subst(n.Dst, env).(*ir.Access), Op: n.Op, Value: Subst(n.Value, env)})
		case *If:
			out = append(out, &If{Cond: Subst(n.Cond, env), Body: cloneNodes(n.Body, env, cut, cutTo)})
		case *Prefetch:
			out = append(out, &Prefetch{Addr: Subst(n.Addr, env).(*ir.Access), Bytes: n.Bytes})
		}
	}
	return slices.Clip(out)
}

// renameStores makes every store into local from in nodes (cloned, so
// not shared) a store into local to.
func renameStores(nodes []Node, from, to string) {
	for _, n := range nodes {
		switch n := n.(type) {
		case *Loop:
			renameStores(n.Body, from, to)
		case *Block:
			renameStores(n.Body, from, to)
		case *If:
			renameStores(n.Body, from, to)
		case *Store:
			if n.Dst.Tensor == from {
				d := *n.Dst
				d.Tensor = to
				n.Dst = &d
			}
		}
	}
}
