package autodiff

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/neoflow/neoflow/core/ir"
)

// nameSet is a set of taken names that hands out fresh ones.
type nameSet map[string]bool

// fresh returns base if it is free, else base_1, base_2, ...; the result is
// marked taken.
func (s nameSet) fresh(base string) string {
	if !s[base] {
		s[base] = true
		return base
	}
	for i := 1; ; i++ {
		n := fmt.Sprintf("%s_%d", base, i)
		if !s[n] {
			s[n] = true
			return n
		}
	}
}

func (s nameSet) clone() nameSet { return maps.Clone(s) }

// gstmt is a statement of the gradient op with the extent of every index
// variable it uses, and a note for Explain.
type gstmt struct {
	s    *ir.Stmt
	ext  map[string]int64
	note string
}

// vars lists the statement's index variables: the left-hand side, then
// the rest in order of first use.
func (g *gstmt) vars() []string {
	var out []string
	seen := map[string]bool{}
	for _, x := range g.s.Indices {
		seen[x.Name] = true
		out = append(out, x.Name)
	}
	for _, v := range varsOf(g.s.RHS) {
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}

// renameVar renames index variable old to nw throughout the statement.
func (g *gstmt) renameVar(old, nw string) {
	ixs := make([]*ir.Index, len(g.s.Indices))
	for i, x := range g.s.Indices {
		if x.Name == old {
			x = idx(nw)
		}
		ixs[i] = x
	}
	s := *g.s
	s.Indices = ixs
	s.RHS = ir.SubstIndex(s.RHS, map[string]ir.Expr{old: idx(nw)})
	g.s = &s
	if e, ok := g.ext[old]; ok {
		delete(g.ext, old)
		g.ext[nw] = e
	}
}

// directVars maps each variable sema infers from a plain-variable index in
// an access that no enclosing where condition mentions (core/sema, range
// inference, step 2) to the sizes of those dimensions (-1 where unknown).
// Every other variable, and one whose extent is smaller than such a
// dimension, gets its extent from Sizes.
func directVars(s *ir.Stmt, shapes map[string][]int64) map[string][]int64 {
	out := map[string][]int64{}
	var rec func(e ir.Expr, guarded map[string]bool)
	rec = func(e ir.Expr, guarded map[string]bool) {
		switch x := e.(type) {
		case *ir.Access:
			for d, ix := range x.Indices {
				if v, ok := ix.(*ir.Index); ok && !guarded[v.Name] {
					size := int64(-1) // unknown
					if sh := shapes[x.Tensor]; d < len(sh) {
						size = sh[d]
					}
					out[v.Name] = append(out[v.Name], size)
				}
			}
			return
		case *ir.Where:
			rec(x.Cond, guarded)
			inner := maps.Clone(guarded)
			if inner == nil {
				inner = map[string]bool{}
			}
			for _, v := range varsOf(x.Cond) {
				inner[v] = true
			}
			rec(x.Then, inner)
			rec(x.Else, inner)
			return
		}
		ir.Walk(e, func(c ir.Expr) bool {
			if c == e {
				return true
			}
			rec(c, guarded)
			return false
		})
	}
	rec(s.RHS, nil)
	return out
}

// resolveSizes computes the Sizes of the gradient op. sema applies a size
// by name to every statement, so a name in Sizes must have one extent
// wherever it is used: a variable that some statement cannot infer keeps
// its name where its extent is the one recorded, and is renamed (to a
// fresh name, with its own size if needed) in statements where its extent
// differs.
func resolveSizes(stmts []*gstmt, taken nameSet, shapes map[string][]int64) map[string]int64 {
	type use struct {
		g    *gstmt
		ext  int64
		need bool
	}
	uses := map[string][]use{}
	for _, g := range stmts {
		direct := directVars(g.s, shapes)
		for _, v := range g.vars() {
			taken[v] = true
			// sema infers v only from dimensions of exactly its extent; a
			// smaller extent (a prefix read) must be given as a size
			inferable := len(direct[v]) > 0
			for _, size := range direct[v] {
				inferable = inferable && size == g.ext[v]
			}
			uses[v] = append(uses[v], use{g, g.ext[v], !inferable})
		}
	}
	sizes := map[string]int64{}
	for _, v := range slices.Sorted(maps.Keys(uses)) {
		us := uses[v]
		keep := int64(-1)
		for _, u := range us {
			if u.need {
				keep = u.ext
				break
			}
		}
		if keep < 0 {
			continue
		}
		sizes[v] = keep
		renamed := map[int64]string{}
		for _, u := range us {
			if u.ext == keep {
				continue
			}
			nv, ok := renamed[u.ext]
			if !ok {
				nv = taken.fresh(v)
				renamed[u.ext] = nv
			}
			u.g.renameVar(v, nv)
			if u.need {
				sizes[nv] = u.ext
			}
		}
	}
	return sizes
}

// dimHint proposes a name for dimension d of forward tensor t: the
// left-hand-side variable of its writer, else a plain variable indexing
// that dimension somewhere in the forward op, else the lowercased tensor
// name and the dimension ("x2").
func (b *builder) dimHint(t string, d int) string {
	if b.hints == nil {
		b.hints = dimHints(b.fwd)
	}
	if h, ok := b.hints[dimKey{t, d}]; ok {
		return h
	}
	return fmt.Sprintf("%s%d", strings.ToLower(t), d)
}

// dimKey is a dimension of a tensor.
type dimKey struct {
	t string
	d int
}

// dimHints finds, in one pass over the forward op, the name dimHint gives
// each dimension: the writer's left-hand side index, else the first plain
// index in a read.
func dimHints(fwd *ir.Op) map[dimKey]string {
	hints := map[dimKey]string{}
	for _, s := range fwd.Stmts {
		for d, x := range s.Indices {
			if _, ok := hints[dimKey{s.Tensor, d}]; !ok {
				hints[dimKey{s.Tensor, d}] = x.Name
			}
		}
	}
	reads := map[dimKey]string{}
	for _, s := range fwd.Stmts {
		for _, a := range accessesOf(s.RHS) {
			for d, ix := range a.Indices {
				k := dimKey{a.Tensor, d}
				if _, ok := reads[k]; ok {
					continue
				}
				if v, ok := ix.(*ir.Index); ok {
					reads[k] = v.Name
				}
			}
		}
	}
	for k, v := range reads {
		if _, ok := hints[k]; !ok {
			hints[k] = v
		}
	}
	return hints
}

// dimNames returns distinct names for the dimensions of forward tensor t.
func (b *builder) dimNames(t string, rank int) []string {
	taken := nameSet{}
	for c := range b.consts {
		taken[c] = true
	}
	out := make([]string, rank)
	for d := range out {
		out[d] = taken.fresh(b.dimHint(t, d))
	}
	return out
}
