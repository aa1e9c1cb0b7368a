package cgen

import (
	"fmt"
	"strings"

	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/loops"
)

// Horizontal fusion. A fused group that loops.GPUSchedule lowers member
// by member (a weight's and an input's gradient, each under its own GPU
// tiling or block reduction) still runs as one kernel: the grid is the
// members' grids side by side, and each block runs the member its index
// falls in, under that member's tiling, as if launched alone. One launch
// instead of several, and the members' blocks share the GPU at once
// where each alone would leave it partly idle (an RNN cell's gradients at
// batch 16). The members' nests qualify when each is one block phase,
// all with the same block size, none reads what another writes (there is
// no barrier between blocks), and their shared arrays fit together.

// horizontalRun is how many nests from nests[k] on run as one kernel:
// nests[k] and the members of its fused group lowered after it that
// qualify (at least 1).
func horizontalRun(spec *ir.Spec, nests []*loops.Nest, phs [][]phase, k int) int {
	if !oneBlockPhase(phs[k]) {
		return 1
	}
	m := 1
	shared := sharedBytes(spec, phs[k][0])
	for j := k + 1; j < len(nests); j++ {
		n := nests[j]
		if n.Index >= len(spec.Stmts) || !spec.Stmts[n.Index].Joined || !oneBlockPhase(phs[j]) || phs[j][0].threads != phs[k][0].threads {
			break
		}
		shared += sharedBytes(spec, phs[j][0])
		if shared > loops.MaxSharedBytes || !independent(spec, nests[k:j+1]) {
			break
		}
		m++
	}
	return m
}

func oneBlockPhase(phs []phase) bool { return len(phs) == 1 && phs[0].blocks }

// sharedBytes is the shared memory a block phase declares (its arrays
// hold the compute type).
func sharedBytes(spec *ir.Spec, ph phase) int64 {
	var n int64
	for _, x := range ph.loops[len(ph.loops)-1].Body {
		if l, ok := x.(*loops.Local); ok && l.Shared {
			n += l.Len * int64(spec.DType.Compute().Size())
		}
	}
	return n
}

// independent reports whether no statement of the nests reads a tensor
// that a statement of another of them writes.
func independent(spec *ir.Spec, nests []*loops.Nest) bool {
	writes := make([]map[string]bool, len(nests))
	for i, n := range nests {
		writes[i] = map[string]bool{}
		for _, st := range nestStmts(spec, n) {
			writes[i][st.Stmt.Tensor] = true
		}
	}
	for i, n := range nests {
		for _, st := range nestStmts(spec, n) {
			clash := false
			ir.Walk(st.Stmt.RHS, func(e ir.Expr) bool {
				if a, ok := e.(*ir.Access); ok {
					for j := range nests {
						clash = clash || j != i && writes[j][a.Tensor]
					}
				}
				return true
			})
			if clash {
				return false
			}
		}
	}
	return true
}

// horizontal renders the block phases phs of nests as one __global__
// function: member i takes the grid's blocks [start_i, start_i + g_i),
// g_i = min(its iterations, MaxBlocks), striding over its iterations by
// g_i.
func (r *renderer) horizontal(nests []*loops.Nest, phs []phase, entry, sig string) (Launch, error) {
	l := Launch{Entry: entry, Nest: nests[0].Index, Threads: int(phs[0].threads)}
	var names []string
	for _, n := range nests {
		names = append(names, commentSafe(ir.StmtString(n.Stmt.Stmt)))
	}
	fmt.Fprintf(r.b, "\n// %s\nextern \"C\" __global__ void __launch_bounds__(%d) %s(%s)\n{\n", strings.Join(names, "\n// "), l.Threads, entry, sig)
	for i, ph := range phs {
		g := min(ph.iters, MaxBlocks)
		if i == 0 {
			r.line(1, "if (blockIdx.x < %d) {", l.Blocks+g)
		} else {
			r.line(1, "} else if (blockIdx.x < %d) {", l.Blocks+g)
		}
		r.line(2, "for (nf_i nf_blk = (nf_i)blockIdx.x - %d; nf_blk < %d; nf_blk += %d) {", l.Blocks, ph.iters, g)
		if err := r.flat(ph.loops, "nf_blk", 3); err != nil {
			return l, err
		}
		r.line(2, "}")
		l.Blocks += g
	}
	r.line(1, "}")
	r.b.WriteString("}\n")
	return l, nil
}
