package fuse

import (
	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/loops"
)

// nestAxes is the loops of a group's nest (one statement: its default
// nest; several: their fused nest, loops.DefaultGroupTiling).
func nestAxes(spec *ir.Spec, group []*ir.BoundStmt) []ir.Var {
	if len(group) == 1 {
		return loops.DefaultLoopAxes(spec, group[0])
	}
	if g := loops.DefaultGroupTiling(spec, group); g != nil {
		return loops.GroupLoopAxes(group, g)
	}
	return nil
}

// traffic estimates the bytes a group of statements, run by the loops
// axes (outermost first), reads from memory: each tensor read once per
// run of the nest, times the extent of every loop that does not index it
// and whose body touches more of it than m.CacheBytes (the tensor's rows
// are then fetched again on every iteration of that loop). The re-reads
// of a tensor that fits the last-level cache (a quarter of
// m.LLCBytes) come from there, the others from memory at
// m.RereadBytesPerSec: they count in bytes streamed in equal time. A
// tensor several members read counts once in a fused nest.
func traffic(decls map[string]*ir.TensorDecl, dt ir.DType, group []*ir.BoundStmt, axes []ir.Var, m Machine) int64 {
	return trafficOf(decls, dt, readAxes(group), axes, m)
}

// trafficOf is traffic for a group whose reads readAxes gave.
func trafficOf(decls map[string]*ir.TensorDecl, dt ir.DType, reads map[string]map[string]bool, axes []ir.Var, m Machine) int64 {
	size := int64(dt.Size())
	var total float64
	for name, idx := range reads {
		t := decls[name]
		if t == nil {
			continue
		}
		once := t.Elems() * size
		reread := m.BytesPerSec / m.RereadBytesPerSec
		if once <= m.LLCBytes/4 {
			reread = m.BytesPerSec / m.LLCBytesPerSec
		}
		bytes := float64(once)
		for d, l := range axes {
			if idx[l.Name] {
				continue
			}
			fp := size
			for _, in := range axes[d+1:] {
				if idx[in.Name] {
					fp *= in.Extent
				}
			}
			if min(fp, once) > m.CacheBytes {
				bytes += bytes * float64(l.Extent-1) * reread
			}
		}
		total += bytes
	}
	return int64(total)
}

// readAxes maps each tensor the statements read to the axes its indices
// use.

// renameAxes is a readAxes map with its axes renamed by m (from -> to).
func renameAxes(ra map[string]map[string]bool, m map[string]string) map[string]map[string]bool {
	out := make(map[string]map[string]bool, len(ra))
	for t, axes := range ra {
		out[t] = make(map[string]bool, len(axes))
		for x := range axes {
			if to, ok := m[x]; ok {
				x = to
			}
			out[t][x] = true
		}
	}
	return out
}

// mergeAxes is the union of two readAxes maps.
func mergeAxes(a, b map[string]map[string]bool) map[string]map[string]bool {
	out := make(map[string]map[string]bool, len(a)+len(b))
	for _, src := range []map[string]map[string]bool{a, b} {
		for t, axes := range src {
			if out[t] == nil {
				out[t] = map[string]bool{}
			}
			for x := range axes {
				out[t][x] = true
			}
		}
	}
	return out
}

func readAxes(sts []*ir.BoundStmt) map[string]map[string]bool {
	out := map[string]map[string]bool{}
	for _, st := range sts {
		ir.Walk(st.Stmt.RHS, func(e ir.Expr) bool {
			a, ok := e.(*ir.Access)
			if !ok {
				return true
			}
			if out[a.Tensor] == nil {
				out[a.Tensor] = map[string]bool{}
			}
			for _, x := range a.Indices {
				ir.Walk(x, func(y ir.Expr) bool {
					if ix, ok := y.(*ir.Index); ok {
						out[a.Tensor][ix.Name] = true
					}
					return true
				})
			}
			return true
		})
	}
	return out
}

// accumulatorOps is the arithmetic a fused nest adds for its reduction
// members (Cost's units): a member alone keeps its partial sums in
// registers, in a group each point loads and stores its accumulator
// element, perPoint units (Machine.AccumulatorOps) per point and
// reduction member.
func accumulatorOps(group []*ir.BoundStmt, perPoint int64) int64 {
	if len(group) < 2 {
		return 0
	}
	var n int64
	for _, st := range group {
		if st.Stmt.Reduce != ir.Assign {
			n += perPoint * st.Points()
		}
	}
	return n
}
