package autotune

import (
	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/loops"
)

// FirstMinPoints is the points below which a statement keeps its default
// schedule in a first build (FirstSchedules).
const FirstMinPoints = 1 << 20

// FirstSchedules is the CPU schedules of a kernel built without a record
// where nothing picks its schedules soon (NEOFLOW_TUNE=off, and background,
// whose worker takes a core from the training; the runtime decides,
// torchbridge/tune.go): each statement's default
// (loops.DefaultSchedule), except for a reduction of its own (not in a
// fused group) with at least FirstMinPoints points and an untiled default
// in lanes, which takes a register tile instead:
//
//   - where the default reduces in lanes over the last reduction axis
//     (both reads contiguous there), the register-lane tile
//     (registerLanes): up to 16 output points whose partial vectors stay
//     in registers, so that each vector loaded serves several of them,
//     where the default reduces one point at a time in one vector chain.
//     UH[b, g] += U[g, j] * H[b, j] of the MI-LSTM cell (16 x 4096 x
//     1024): 1.4 ms against the default's 3.3 ms (torch.matmul 1.2 ms);
//   - where its lanes run over a spatial axis, the register-tiled
//     heuristic (registerTile: 8 rows of 4 vectors, the read the rows
//     share packed). The cell's input gradient d_H[b, j] += d_UH[b, g] *
//     U[g, j]: 1.7 ms against the default's 26 ms, which re-reads U for
//     every row b (before the pack).
//
// Each is the usual winner of the background pick (torchbridge/picks.go)
// for its kind, and the other kind's tile loses there by 10x or more
// (2-core Xeon). nil when every statement keeps its default.
func FirstSchedules(spec *ir.Spec) []loops.Schedule {
	sp := NewSpace(spec)
	g := sp.Default()
	changed := false
	for i := range sp.stmts {
		ss := &sp.stmts[i]
		st := spec.Stmts[i]
		if grouped(spec, i) || ss.scatter || !ss.red || ss.grp != nil || st.Points() < FirstMinPoints {
			continue
		}
		def := loops.DefaultSchedule(spec, i)
		if def.Tiling != nil || def.Group != nil || def.Scatter || def.VectorWidth <= 1 {
			continue
		}
		m := len(st.Reduction)
		switch {
		case m > 0 && def.VectorAxis == st.Reduction[m-1].Name:
			changed = ss.registerLanes(spec, g) || changed
		case !isRedLoop(st, def.VectorAxis):
			ss.registerTile(spec, g)
			changed = true
		}
	}
	if !changed {
		return nil
	}
	return sp.Decode(g)
}
