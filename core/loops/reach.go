package loops

import (
	"maps"

	"github.com/pkg/errors"

	"github.com/neoflow/neoflow/core/ir"
)

// checkReach verifies that no access of nest can leave its buffer, with
// guards ignored. The pipeline's check-bounds pass (CheckFunc) runs it on
// every nest, last:
//
//   - every access of a Local, read or written, wherever it stands:
//     lane code may load a local array unmasked (GCC does, under a where
//     or an If alike), so its index must lie in [0, Len) at every point
//     of the enclosing loops, guard or no guard;
//   - every access of a tensor outside any where and If, in each
//     dimension: sema proved the statement's reads in bounds, and this
//     holds the tiling and the copies to the same.
//
// Ranges are those of interval arithmetic over the enclosing loops (see
// indexSpan), which may be wider than the truth but never narrower; an
// index it cannot bound fails the check. A failure is an error of the
// lowering, not of the schedule's author: the tuner records the
// configuration as failed, and no kernel that might read outside a buffer
// is built.
func checkReach(spec *ir.Spec, nest *Nest) error {
	c := &reach{spec: spec, sizes: map[string]ir.Expr{}}
	for name, v := range nest.SizeValues {
		c.sizes[name] = Lit(v)
	}
	return c.nodes(nest.Body, map[string]int64{}, map[string]int64{}, false)
}

// reach checks one nest; sizes maps the size variables its body names to
// their values (Nest.SizeValues).
type reach struct {
	spec  *ir.Spec
	sizes map[string]ir.Expr
}

// nodes checks body; ext holds the extents of the loops in scope, locals
// the lengths of the Locals declared so far, guarded whether an If
// encloses body.
func (c *reach) nodes(body []Node, ext, locals map[string]int64, guarded bool) error {
	locals = maps.Clone(locals) // a Local is visible in the rest of its body only
	for _, n := range body {
		switch n := n.(type) {
		case *Loop:
			if n.Extent < 1 {
				continue // never runs
			}
			in := maps.Clone(ext)
			in[n.Var] = n.Extent
			if err := c.nodes(n.Body, in, locals, guarded); err != nil {
				return err
			}
		case *Block:
			if err := c.nodes(n.Body, ext, locals, guarded); err != nil {
				return err
			}
		case *Local:
			locals[n.Name] = n.Len
		case *Store:
			if err := c.access(n.Dst, ext, locals, guarded); err != nil {
				return err
			}
			if err := c.expr(n.Value, ext, locals, guarded); err != nil {
				return err
			}
		case *Prefetch:
			// The address needs no bound; the reads in its indices do.
			for _, x := range n.Addr.Indices {
				if err := c.expr(x, ext, locals, guarded); err != nil {
					return err
				}
			}
		case *BlockCombine:
			if err := c.access(n.Dst, ext, locals, guarded); err != nil {
				return err
			}
			if err := c.access(n.Value, ext, locals, guarded); err != nil {
				return err
			}
			if _, ok := locals[n.Scratch]; !ok {
				return errors.Errorf("%s is used before its declaration", n.Scratch)
			}
			if err := c.nodes(n.Then, ext, locals, guarded); err != nil {
				return err
			}
		case *If:
			if err := c.expr(n.Cond, ext, locals, guarded); err != nil {
				return err
			}
			if err := c.nodes(n.Body, ext, locals, true); err != nil {
				return err
			}
		}
	}
	return nil
}

// expr checks every access in e; the branches of a where are guarded,
// and so is the right operand of && and ||, which short-circuit.
func (c *reach) expr(e ir.Expr, ext, locals map[string]int64, guarded bool) error {
	switch e := e.(type) {
	case *ir.Access:
		return c.access(e, ext, locals, guarded)
	case *ir.Unary:
		return c.expr(e.X, ext, locals, guarded)
	case *ir.Binary:
		if err := c.expr(e.X, ext, locals, guarded); err != nil {
			return err
		}
		return c.expr(e.Y, ext, locals, guarded || e.Op == ir.And || e.Op == ir.Or)
	case *ir.Call:
		for _, a := range e.Args {
			if err := c.expr(a, ext, locals, guarded); err != nil {
				return err
			}
		}
	case *ir.Where:
		if err := c.expr(e.Cond, ext, locals, guarded); err != nil {
			return err
		}
		if err := c.expr(e.Then, ext, locals, true); err != nil {
			return err
		}
		return c.expr(e.Else, ext, locals, true)
	}
	return nil
}

func (c *reach) access(a *ir.Access, ext, locals map[string]int64, guarded bool) error {
	if len(c.sizes) > 0 {
		a = Subst(a, c.sizes).(*ir.Access)
	}
	for _, x := range a.Indices {
		if err := c.expr(x, ext, locals, guarded); err != nil {
			return err
		}
	}
	if IsLocal(a.Tensor) {
		n, ok := locals[a.Tensor]
		if !ok {
			return errors.Errorf("%s is used before its declaration", a.Tensor)
		}
		switch len(a.Indices) {
		case 0:
			return nil
		case 1:
			return within(a, 0, a.Indices[0], n, ext)
		}
		return errors.Errorf("%s has %d indices, want one", ir.ExprString(a), len(a.Indices))
	}
	if guarded {
		return nil // cgen masks a guarded tensor load
	}
	t := c.spec.Tensor(a.Tensor)
	if t == nil || len(t.Shape) != len(a.Indices) {
		return errors.Errorf("%s does not match a tensor of the spec", ir.ExprString(a))
	}
	for d, x := range a.Indices {
		if ix, ok := x.(*ir.Access); ok && ix.Indirect {
			// Checked before the launch against the index tensor's Limit.
			if it := c.spec.Tensor(ix.Tensor); it == nil || it.Limit < 1 || it.Limit > t.Shape[d] {
				return errors.Errorf("%s: index %d reads index tensor %s, whose checked limit does not keep it within [0, %d)", ir.ExprString(a), d, ix.Tensor, t.Shape[d])
			}
			continue
		}
		if err := within(a, d, x, t.Shape[d], ext); err != nil {
			return err
		}
	}
	return nil
}

// within checks that index d of a, x, lies in [0, n) at every point.
func within(a *ir.Access, d int, x ir.Expr, n int64, ext map[string]int64) error {
	if !IndexWithin(x, n, ext) {
		return errors.Errorf("%s: index %d may lie outside [0, %d)", ir.ExprString(a), d, n)
	}
	return nil
}
