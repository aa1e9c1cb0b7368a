package loops

import (
	"fmt"
	"slices"

	"github.com/pkg/errors"

	"github.com/neoflow/neoflow/core/ir"
)

// Lane remainders of the tiled lowering (Tiling.Splits): where they may
// lie, the copy of the body that runs them, and their own accumulator.

// peelRemainder finds the loop over o, the outer loop of a lane remainder
// split (Tiling.Splits), in body and puts after it a Block running its body
// once more with o fixed to its extent and every loop over lane cut to the
// remainder: the lane loop, and a pack's copy loop over the same tile.
// With toRem, the copy's stores into the accumulator (accName) go to the
// remainder's own (remName) instead.
func peelRemainder(body []Node, o, lane tileLoop, toRem bool) []Node {
	return peelAfter(body, o.name, func(n *Loop) *Block {
		env := map[string]ir.Expr{o.name: Lit(o.extent)}
		lo := o.extent * o.stride
		copied := cloneNodes(n.Body, env, lane.name, func(l *Loop) { l.Extent = o.rem })
		if toRem {
			renameStores(copied, accName, remName)
		}
		return &Block{Comment: fmt.Sprintf("remainder: %s in [%d, %d)", o.axis, lo, lo+o.rem), Body: copied}
	})
}

// peelSized finds the outer loop o of an axis split over a size
// (Split.Size) in body and puts after it a Block running its body once
// more with o fixed to size / by and the axis's last loop (named last) cut
// to size % by (Loop.Rem): the remainder, present at every value of the
// size.
func peelSized(body []Node, o tileLoop, last string) []Node {
	return peelAfter(body, o.name, func(n *Loop) *Block {
		base := &ir.Binary{Op: ir.Div, X: Var(o.size), Y: Lit(o.by)}
		cut := func(l *Loop) {
			l.Extent, l.Size, l.By, l.Rem, l.Unroll = o.rem, o.size, o.by, true, 0
		}
		copied := cloneNodes(n.Body, map[string]ir.Expr{o.name: base}, last, cut)
		return &Block{Comment: fmt.Sprintf("remainder: %s from %s / %d * %d", o.axis, o.size[1:], o.by, o.by), Body: copied}
	})
}

// peelAfter finds the loop over variable name in body, at any depth, and
// puts the block that remainder makes of it right after it.
func peelAfter(body []Node, name string, remainder func(*Loop) *Block) []Node {
	out := make([]Node, 0, len(body)+1)
	for _, n := range body {
		switch n := n.(type) {
		case *Loop:
			if n.Var == name {
				out = append(out, n, remainder(n))
				continue
			}
			n.Body = peelAfter(n.Body, name, remainder)
		case *Block:
			n.Body = peelAfter(n.Body, name, remainder)
		case *If:
			n.Body = peelAfter(n.Body, name, remainder)
		}
		out = append(out, n)
	}
	return out
}

// cloneNodes copies nodes with env substituted into every expression and
// cut applied to every loop over variable cutVar.
func cloneNodes(nodes []Node, env map[string]ir.Expr, cutVar string, cut func(*Loop)) []Node {
	out := make([]Node, 0, len(nodes))
	for _, n := range nodes {
		switch n := n.(type) {
		case *Loop:
			c := *n
			if c.Var == cutVar {
				cut(&c)
			}
			c.Body = cloneNodes(n.Body, env, cutVar, cut)
			out = append(out, &c)
		case *Block:
			out = append(out, &Block{Comment: n.Comment, Body: cloneNodes(n.Body, env, cutVar, cut)})
		case *Local:
			c := *n
			out = append(out, &c)
		case *Store:
			out = append(out, &Store{Dst: Subst(n.Dst, env).(*ir.Access), Op: n.Op, Value: Subst(n.Value, env)})
		case *If:
			out = append(out, &If{Cond: Subst(n.Cond, env), Body: cloneNodes(n.Body, env, cutVar, cut)})
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

// checkRemainder checks the placement of a lane remainder (Splits).
func (t *Tiling) checkRemainder(st *ir.BoundStmt, ord []tileLoop) error {
	lanes, sized := 0, 0
	for i, o := range ord {
		switch {
		case o.sizedOuter():
			sized++
			if err := t.checkSizedAt(st, ord, i); err != nil {
				return err
			}
		case o.rem > 0:
			lanes++
			if err := t.checkRemainderAt(st, ord, i); err != nil {
				return err
			}
		}
	}
	if lanes > 1 || sized > 1 {
		return errors.New("more than one axis with a lane remainder, or split over a size")
	}
	return nil
}

// checkSizedAt checks the placement of the split of an axis over a size
// (Split.Size), whose outer loop is ord[i].
func (t *Tiling) checkSizedAt(st *ir.BoundStmt, ord []tileLoop, i int) error {
	o, lane := ord[i], ord[len(ord)-1]
	switch {
	case !o.spatial:
		return errors.Errorf("axis %s runs to a size: only a spatial axis is split over a size", o.axis)
	case i < t.Parallel:
		return errors.Errorf("axis %s: the outer loop of a split over a size runs in parallel", o.axis)
	case st.Stmt.Reduce != ir.Assign && i >= t.AccAt:
		return errors.Errorf("axis %s: the outer loop of a split over a size lies inside the accumulator", o.axis)
	case t.Vector && lane.axis == o.axis:
		return errors.Errorf("axis %s: the lane loop of a split over a size", o.axis)
	}
	return nil
}

func (t *Tiling) checkRemainderAt(st *ir.BoundStmt, ord []tileLoop, i int) error {
	o, lane := ord[i], ord[len(ord)-1]
	if !t.Vector || lane.axis != o.axis || lane.name == o.name {
		return errors.Errorf("axis %s: a remainder (%d) needs its last tile loop innermost and a lane loop", o.axis, o.rem)
	}
	if i < t.Parallel {
		return errors.Errorf("axis %s: the outer loop of a remainder split runs in parallel", o.axis)
	}
	if st.Stmt.Reduce != ir.Assign {
		if o.spatial && i >= t.AccAt {
			return errors.Errorf("axis %s: the outer loop of a spatial remainder split lies inside the accumulator", o.axis)
		}
		if !o.spatial && i < t.AccAt {
			return errors.Errorf("axis %s: the outer loop of a reduction remainder split lies outside the accumulator", o.axis)
		}
	}
	return nil
}

// remainderLoop is the position of the loop with a lane remainder.
func remainderLoop(ord []tileLoop) (int, bool) {
	for i, l := range ord {
		if l.rem > 0 && !l.sizedOuter() {
			return i, true
		}
	}
	return 0, false
}

// sizedLoops are the outer loop of the axis split over a size
// (Split.Size) and its last level's name; ok is false without one.
func sizedLoops(ord []tileLoop) (outer tileLoop, last string, ok bool) {
	for _, l := range ord {
		if l.sizedOuter() {
			outer, ok = l, true
		}
	}
	for _, l := range ord {
		if ok && l.size == outer.size && l.axis == outer.axis && !l.sizedOuter() {
			last = l.name
		}
	}
	return outer, last, ok
}

// remainderLanes is the lane count of a reduction lane loop's remainder
// (Tiling.Splits) under t, resolved to ord, 0 when there is none. Its lanes
// fold into an accumulator of their own (remName, laid out as the main
// one), combined after the main lanes: sharing the main one, the remainder's
// narrower vectors made GCC keep the whole register tile in memory, each
// fold a load and a store of it. A grouped 1x1 convolution's weight
// gradient, GW[o, c] += T[n, o, h, w] * X[n, o/20*80 + c, h, w] (lanes 16
// and 12 over w = 28, a 2 x 8 tile), took 2.4 ms so, 1.75 ms apart (2-core
// Xeon). Where the two would not fit in MaxLocalElems, the remainder
// shares the main one.
func remainderLanes(st *ir.BoundStmt, t *Tiling, ord []tileLoop) int64 {
	lane := ord[len(ord)-1]
	if st.Stmt.Reduce == ir.Assign || !t.Vector || lane.spatial || lane.extent <= 1 || t.AccAt >= len(ord) ||
		2*accLen(ord[t.AccAt:])*lane.extent > MaxLocalElems {
		return 0
	}
	for _, l := range ord {
		if l.rem > 0 && l.axis == lane.axis {
			return l.rem
		}
	}
	return 0
}
