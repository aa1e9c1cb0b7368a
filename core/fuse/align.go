package fuse

import (
	"maps"
	"slices"

	"github.com/neoflow/neoflow/core/ir"
)

// alignments lists candidate renamings of gb's axes to ga's, each a
// bijection between axes of equal extents, from the evidence that the
// two groups index something alike, most telling first: a tensor both
// read at plain axes (d_G[b,g] in d_W's and in d_X's gradient), a read
// in gb of ga's output at plain axes, the same tensor written by both,
// or left-hand sides of the same shape. Axes the evidence leaves open
// pair by name, then by their extent when exactly one axis of each side
// is left with it.
//
// readsA and readsB are plainReads of ga and gb.
func alignments(ga, gb []*ir.BoundStmt, readsA, readsB []*ir.Access) []map[string]string {
	extA, extB := extents(ga[0]), extents(gb[0])
	var out []map[string]string
	seen := map[string]bool{}
	add := func(pairs [][2]string) {
		m, ok := complete(pairs, extA, extB)
		if !ok {
			return
		}
		key := ""
		for _, k := range slices.Sorted(maps.Keys(m)) {
			key += k + ">" + m[k] + ","
		}
		if !seen[key] {
			seen[key] = true
			out = append(out, m)
		}
	}
	byTensor := map[string][]*ir.Access{}
	for _, rb := range readsB {
		byTensor[rb.Tensor] = append(byTensor[rb.Tensor], rb)
	}
	for _, ra := range readsA {
		for _, rb := range byTensor[ra.Tensor] {
			if len(ra.Indices) == len(rb.Indices) {
				add(zipIndices(rb.Indices, ra.Indices))
			}
		}
	}
	for _, p := range ga {
		for _, rb := range byTensor[p.Stmt.Tensor] {
			if rb.Tensor == p.Stmt.Tensor && len(rb.Indices) == len(p.Spatial) {
				add(zipVars(rb.Indices, p.Spatial))
			}
		}
	}
	for _, p := range ga {
		for _, q := range gb {
			if len(p.Spatial) == len(q.Spatial) && (p.Stmt.Tensor == q.Stmt.Tensor || slices.Equal(extentsOf(p.Spatial), extentsOf(q.Spatial))) {
				pairs := make([][2]string, len(q.Spatial))
				for d := range q.Spatial {
					pairs[d] = [2]string{q.Spatial[d].Name, p.Spatial[d].Name}
				}
				add(pairs)
			}
		}
	}
	return out
}

// complete extends pairs (gb axis, ga axis) to a bijection of equal
// extents; ok is false when they contradict each other or cannot be
// completed.
func complete(pairs [][2]string, extA, extB map[string]int64) (map[string]string, bool) {
	if len(extA) != len(extB) {
		return nil, false
	}
	m, used := map[string]string{}, map[string]bool{}
	for _, p := range pairs {
		from, to := p[0], p[1]
		if prev, ok := m[from]; ok {
			if prev != to {
				return nil, false
			}
			continue
		}
		if used[to] || extA[to] != extB[from] || extB[from] == 0 {
			return nil, false
		}
		m[from], used[to] = to, true
	}
	for _, from := range slices.Sorted(maps.Keys(extB)) {
		if _, ok := m[from]; !ok && !used[from] && extA[from] == extB[from] {
			m[from], used[from] = from, true
		}
	}
	for _, from := range slices.Sorted(maps.Keys(extB)) {
		if _, ok := m[from]; ok {
			continue
		}
		var cands []string
		for to, e := range extA {
			if !used[to] && e == extB[from] {
				cands = append(cands, to)
			}
		}
		var same []string
		for f, e := range extB {
			if _, ok := m[f]; !ok && e == extB[from] {
				same = append(same, f)
			}
		}
		if len(cands) != 1 || len(same) != 1 {
			return nil, false
		}
		m[from], used[cands[0]] = cands[0], true
	}
	return m, true
}

// plainReads lists the reads in sts whose indices are all plain axes,
// each tensor read at the same axes once, in order of first read.
func plainReads(sts []*ir.BoundStmt) []*ir.Access {
	var out []*ir.Access
	seen := map[string]bool{}
	for _, st := range sts {
		ir.Walk(st.Stmt.RHS, func(e ir.Expr) bool {
			a, ok := e.(*ir.Access)
			if !ok {
				return true
			}
			key := a.Tensor
			for _, x := range a.Indices {
				ix, ok := x.(*ir.Index)
				if !ok {
					return true
				}
				key += "," + ix.Name
			}
			if !seen[key] {
				seen[key] = true
				out = append(out, a)
			}
			return true
		})
	}
	return out
}

func zipIndices(from, to []ir.Expr) [][2]string {
	out := make([][2]string, len(from))
	for d := range from {
		out[d] = [2]string{from[d].(*ir.Index).Name, to[d].(*ir.Index).Name}
	}
	return out
}

func zipVars(from []ir.Expr, to []ir.Var) [][2]string {
	out := make([][2]string, len(from))
	for d := range from {
		out[d] = [2]string{from[d].(*ir.Index).Name, to[d].Name}
	}
	return out
}

// renameVars is st with its axes renamed by m (simultaneously).
func renameVars(st *ir.BoundStmt, m map[string]string) *ir.BoundStmt {
	sub := map[string]ir.Expr{}
	for from, to := range m {
		if from != to {
			sub[from] = &ir.Index{Name: to}
		}
	}
	if len(sub) == 0 {
		return st
	}
	s := *st.Stmt
	s.RHS = ir.SubstIndex(st.Stmt.RHS, sub)
	s.Indices = make([]*ir.Index, len(st.Stmt.Indices))
	for d, ix := range st.Stmt.Indices {
		c := *ix
		if to, ok := m[ix.Name]; ok {
			c.Name = to
		}
		s.Indices[d] = &c
	}
	out := *st
	out.Stmt = &s
	rename := func(vs []ir.Var) []ir.Var {
		r := slices.Clone(vs)
		for i := range r {
			if to, ok := m[r[i].Name]; ok {
				r[i].Name = to
			}
		}
		return r
	}
	out.Spatial, out.Reduction = rename(st.Spatial), rename(st.Reduction)
	return &out
}

func sortedKeys(m map[string]bool) []string { return slices.Sorted(maps.Keys(m)) }
