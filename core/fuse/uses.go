package fuse

import (
	"maps"
	"slices"

	"github.com/neoflow/neoflow/core/ir"
)

// uses indexes a statement list: which statements write each tensor,
// which read it and how often, and which compare it with == or !=. A pass
// looks these up instead of walking every right-hand side for every
// question, and updates the index for the one statement it changed, so
// that its work grows with the program, not with its square.
type uses struct {
	stmts []*ir.BoundStmt
	// counts[i][t] is reads(stmts[i]'s right-hand side, t).
	counts []map[string]int
	// compares[i] holds the tensors statement i compares exactly.
	compares []map[string]bool
	readers  map[string]map[int]bool
	writers  map[string][]int
	compared map[string]int
}

// newUses indexes stmts. The index keeps the slice: set replaces its
// elements.
func newUses(stmts []*ir.BoundStmt) *uses {
	u := &uses{stmts: stmts, counts: make([]map[string]int, len(stmts)), compares: make([]map[string]bool, len(stmts)),
		readers: map[string]map[int]bool{}, writers: map[string][]int{}, compared: map[string]int{}}
	for i, st := range stmts {
		u.writers[st.Stmt.Tensor] = append(u.writers[st.Stmt.Tensor], i)
		u.add(i)
	}
	return u
}

// add enters statement i's reads and comparisons.
func (u *uses) add(i int) {
	rhs := u.stmts[i].Stmt.RHS
	u.counts[i] = readCounts(rhs)
	for t := range u.counts[i] {
		if u.readers[t] == nil {
			u.readers[t] = map[int]bool{}
		}
		u.readers[t][i] = true
	}
	u.compares[i] = comparedTensors(rhs)
	for t := range u.compares[i] {
		u.compared[t]++
	}
}

// remove takes statement i's reads and comparisons out.
func (u *uses) remove(i int) {
	for t := range u.counts[i] {
		delete(u.readers[t], i)
	}
	for t := range u.compares[i] {
		u.compared[t]--
	}
}

// set replaces statement i by st, which writes the same tensor, and
// returns the tensors whose reads changed (those i read before or reads
// now).
func (u *uses) set(i int, st *ir.BoundStmt) []string {
	before := u.counts[i]
	u.remove(i)
	u.stmts[i] = st
	u.add(i)
	changed := slices.Collect(maps.Keys(before))
	for t := range u.counts[i] {
		if _, ok := before[t]; !ok {
			changed = append(changed, t)
		}
	}
	return changed
}

// readersOf lists the statements that read name, in order.
func (u *uses) readersOf(name string) []int {
	return slices.Sorted(maps.Keys(u.readers[name]))
}

// reads is reads(stmts[i]'s right-hand side, name).
func (u *uses) reads(i int, name string) int { return u.counts[i][name] }

// writersOf lists the statements that write name, in order.
func (u *uses) writersOf(name string) []int { return u.writers[name] }

// comparedExactly reports whether a statement compares a read of name
// with == or != (see comparedExactly).
func (u *uses) comparedExactly(name string) bool { return u.compared[name] > 0 }

// readCounts is reads(e, t) for every tensor t that e reads, in one walk.
func readCounts(e ir.Expr) map[string]int {
	m := map[string]int{}
	addReads(e, m)
	return m
}

// addReads adds e's reads into m: a where's branches count as the one that
// reads more (reads).
func addReads(e ir.Expr, m map[string]int) {
	switch x := e.(type) {
	case *ir.Access:
		m[x.Tensor]++
		for _, i := range x.Indices {
			addReads(i, m)
		}
	case *ir.Unary:
		addReads(x.X, m)
	case *ir.Binary:
		addReads(x.X, m)
		addReads(x.Y, m)
	case *ir.Call:
		for _, a := range x.Args {
			addReads(a, m)
		}
	case *ir.Where:
		addReads(x.Cond, m)
		t, f := readCounts(x.Then), readCounts(x.Else)
		for n, c := range f {
			t[n] = max(t[n], c)
		}
		for n, c := range t {
			m[n] += c
		}
	}
}

// comparedTensors lists the tensors e compares exactly (ComparesExactly).
func comparedTensors(e ir.Expr) map[string]bool {
	var out map[string]bool
	ir.Walk(e, func(x ir.Expr) bool {
		b, ok := x.(*ir.Binary)
		if !ok || b.Op != ir.Eq && b.Op != ir.Ne {
			return true
		}
		for _, side := range []ir.Expr{b.X, b.Y} {
			ir.Walk(side, func(y ir.Expr) bool {
				if a, ok := y.(*ir.Access); ok {
					if out == nil {
						out = map[string]bool{}
					}
					out[a.Tensor] = true
				}
				return true
			})
		}
		return false
	})
	return out
}
