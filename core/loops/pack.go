package loops

import (
	"fmt"
	"slices"

	"github.com/pkg/errors"

	"github.com/neoflow/neoflow/core/ir"
)

// Pack is the layout transformation of one read of a tiled statement
// (Tiling.Packs): before the loops at positions At and later run, the
// elements of the read that those loops touch are copied into a local
// buffer, laid out by the loops the read's indices depend on, in loop
// order. The innermost such loop is the buffer's innermost dimension, so
// when it is the lane loop the statement reads consecutive elements (the
// read's inner dimension packed into vectors of the lane loop's extent,
// which the split factors tune); a tile that the inner loops reread from
// strided addresses is read once and then from a compact buffer. The
// statement reads the copy in place of the tensor.
//
// A pack at position 0 of a nest with parallel loops is the shared form:
// it is filled once, before the parallel loops, by all threads (its
// outermost copy loop runs in parallel), and every thread reads the one
// copy. That is the layout transformation of a whole operand, e.g. a
// weight tensor transposed so that the lane axis is its inner dimension,
// with no copy per tile; its buffer lives on the launching thread's stack
// and may hold MaxSharedPackElems elements.
type Pack struct {
	// Read numbers the candidate reads of the statement, as PackableReads
	// lists them.
	Read int
	// At is a position in Tiling.Loops, less than len(Loops): 0, or at
	// least Tiling.Parallel.
	At int
}

// MaxSharedPackElems caps the buffer of a pack at position 0 (shared when
// the nest has parallel loops), on the launching thread's stack: 512 KiB of float32, 1 MiB of float64. The
// launching thread is the caller's (a Python thread: 8 MiB by default) or
// one the Go runtime created with the C library's default stack (the
// stack rlimit, 8 MiB by default, 2 MiB at least); OpenMP's worker
// threads only read the buffer.
const MaxSharedPackElems = 1 << 17

// PackableReads lists the reads of st that a Pack may copy, by their
// text: reads of a tensor other than st's own, outside every where (a
// guarded read may be out of bounds where its guard fails), with index
// expressions that read no tensor, that are not themselves indices
// (ir.Access.Indirect). Equal reads appear once; a Pack replaces every
// occurrence.
func PackableReads(st *ir.BoundStmt) []string {
	var out []string
	var walk func(e ir.Expr)
	walk = func(e ir.Expr) {
		switch e := e.(type) {
		case *ir.Where:
			return
		case *ir.Access:
			if e.Tensor != st.Stmt.Tensor && !e.Indirect && !slices.ContainsFunc(e.Indices, func(x ir.Expr) bool { return readsTensor(x, "") }) {
				if s := ir.ExprString(e); !slices.Contains(out, s) {
					out = append(out, s)
				}
			}
			return
		case *ir.Unary:
			walk(e.X)
		case *ir.Binary:
			walk(e.X)
			walk(e.Y)
		case *ir.Call:
			for _, a := range e.Args {
				walk(a)
			}
		}
	}
	walk(st.Stmt.RHS)
	return out
}

// packPlan is a checked Pack: the read, its buffer and the loops that
// index it.
type packPlan struct {
	local string
	read  string     // ir.ExprString of the read
	src   *ir.Access // the read in loop variables
	sub   string     // and its text
	at    int
	loops []tileLoop // the loops at or after at that the read depends on
	len   int64
	// shared: filled before the parallel loops, its outer copy loop
	// parallel.
	shared bool
}

// planPacks checks t.Packs against st and its ordered loops.
func planPacks(st *ir.BoundStmt, t *Tiling, ord []tileLoop, env map[string]ir.Expr) ([]packPlan, error) {
	reads := PackableReads(st)
	var out []packPlan
	for i, p := range t.Packs {
		if p.Read < 0 || p.Read >= len(reads) {
			return nil, errors.Errorf("pack of read %d: the statement has %d packable reads", p.Read, len(reads))
		}
		if (p.At != 0 && p.At < t.Parallel) || p.At < 0 || p.At >= len(ord) {
			return nil, errors.Errorf("pack of %s at %d: out of range (0 or [%d, %d))", reads[p.Read], p.At, t.Parallel, len(ord))
		}
		for _, q := range out {
			if q.read == reads[p.Read] {
				return nil, errors.Errorf("read %s packed twice", q.read)
			}
		}
		pl := packPlan{local: fmt.Sprintf("%spack%d", LocalPrefix, i), read: reads[p.Read], at: p.At, len: 1}
		pl.src = Subst(findRead(st.Stmt.RHS, pl.read), env).(*ir.Access)
		pl.sub = ir.ExprString(pl.src)
		used := map[string]bool{}
		for _, x := range pl.src.Indices {
			ir.Walk(x, func(e ir.Expr) bool {
				if ix, ok := e.(*ir.Index); ok {
					used[ix.Name] = true
				}
				return true
			})
		}
		for _, l := range ord[p.At:] {
			if used[l.name] && l.extent > 1 {
				pl.loops = append(pl.loops, l)
				pl.len *= l.extent
			}
		}
		if i, ok := remainderLoop(ord); ok && p.At <= i && slices.ContainsFunc(pl.loops, func(l tileLoop) bool { return l.axis == ord[i].axis }) {
			return nil, errors.Errorf("pack of %s at %d: reads axis %s, whose remainder is peeled inside the pack", pl.read, p.At, ord[i].axis)
		}
		limit := int64(MaxLocalElems)
		if p.At == 0 {
			limit = MaxSharedPackElems
			pl.shared = t.Parallel > 0
		}
		if pl.len > limit {
			return nil, errors.Errorf("pack of %s at %d: %d elements exceed %d", pl.read, p.At, pl.len, limit)
		}
		out = append(out, pl)
	}
	return out, nil
}

// findRead is the first read of e printed as text.
func findRead(e ir.Expr, text string) *ir.Access {
	var found *ir.Access
	ir.Walk(e, func(x ir.Expr) bool {
		if a, ok := x.(*ir.Access); ok && found == nil && ir.ExprString(a) == text {
			found = a
		}
		return true
	})
	return found
}

// index is the buffer element the current loop iteration reads.
func (p *packPlan) index() ir.Expr { return loopIndex(p.loops, 1) }

func (p *packPlan) access() *ir.Access {
	a := &ir.Access{Tensor: p.local}
	if p.len > 1 {
		a.Indices = []ir.Expr{p.index()}
	}
	return a
}

// emit appends the buffer and its copy loops to *body.
func (p *packPlan) emit(body *[]Node, t *tiler) {
	*body = append(*body, &Local{Name: p.local, Len: p.len, Copy: true})
	c := body
	for i, l := range p.loops {
		lp := &Loop{Var: l.name, Extent: l.extent, Vector: t.vector && i == len(p.loops)-1 && l.name == t.last}
		if p.shared && i == 0 {
			lp.Parallel, lp.Collapse = true, 1
		}
		*c = append(*c, lp)
		c = &lp.Body
	}
	*c = append(*c, &Store{Dst: p.access(), Op: ir.Assign, Value: p.src})
}

// usePacks replaces the packed reads in rhs (in loop variables) by their
// buffers.
func usePacks(rhs ir.Expr, plans []packPlan) ir.Expr {
	if len(plans) == 0 {
		return rhs
	}
	by := map[string]*packPlan{}
	for i := range plans {
		by[plans[i].sub] = &plans[i]
	}
	var rw func(e ir.Expr) ir.Expr
	rw = func(e ir.Expr) ir.Expr {
		switch e := e.(type) {
		case *ir.Access:
			if p, ok := by[ir.ExprString(e)]; ok {
				return p.access()
			}
			return e
		case *ir.Unary:
			return &ir.Unary{Pos: e.Pos, Op: e.Op, X: rw(e.X)}
		case *ir.Binary:
			return &ir.Binary{Pos: e.Pos, Op: e.Op, X: rw(e.X), Y: rw(e.Y)}
		case *ir.Call:
			out := &ir.Call{Pos: e.Pos, Fn: e.Fn, Args: make([]ir.Expr, len(e.Args))}
			for i, a := range e.Args {
				out.Args[i] = rw(a)
			}
			return out
		}
		return e // a where keeps its reads: none of them is packed
	}
	return rw(rhs)
}
