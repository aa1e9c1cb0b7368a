package autotune

import (
	"slices"

	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/loops"
)

// Seeds are the genomes the search starts from: the default schedules
// first, then register-tiled variants built by the heuristic below, so
// that a small trial budget already measures the usual winners.
//
// The heuristic tiles every statement alike: the lane axis (loops.LaneAxis
// when it is spatial, else the innermost spatial axis) goes innermost with
// an inner tile of one vector (64 bytes) and a middle tile of 4 vectors;
// the spatial axis before it gets an inner tile of up to 6 rows (unrolled)
// and a middle tile of 16; reduction axes an inner tile of up to 256; the
// loops run S0 R0 S1 R1 S2 with the accumulator after S1, so it holds one
// register tile, and the outer spatial tiles run in parallel. The variants
// change the row tile (4 or 6), the accumulator position and the unroll.
func (sp *Space) Seeds() [][]int {
	out := [][]int{sp.Default()}
	for _, v := range []struct {
		rows        int64
		acc, unroll int
	}{{4, 1, 2}, {6, 1, 2}, {4, 0, 2}, {4, 1, 3}, {1, 1, 0}} {
		g := sp.Default()
		for _, ss := range sp.stmts {
			ss.heuristic(sp.spec, g, v.rows, v.acc, v.unroll)
		}
		if !slices.ContainsFunc(out, func(o []int) bool { return slices.Equal(o, g) }) {
			out = append(out, g)
		}
	}
	g := sp.Default()
	lanes := false
	for _, ss := range sp.stmts {
		lanes = ss.reductionLanes(g) || lanes
	}
	if lanes {
		out = append(out, g)
	}
	g = sp.Default()
	lanes = false
	for _, ss := range sp.stmts {
		lanes = ss.registerLanes(sp.spec, g) || lanes
	}
	if lanes {
		out = append(out, g)
	}
	return out
}

// registerLanes writes into g a variant of reductionLanes for the same
// statements that keeps a register tile: the last spatial axes, up to 16
// points, stay whole in the inner spatial tile, inside the outer tiles of
// the reductions, and the last reduction axis is cut into vectors of 64
// bytes (with a remainder when they do not divide it) reduced in lanes
// innermost (the last template). For d_W[c, r, s] += d_Y[n, c, p, q] *
// X[n, c, p + r, q + s] the loops are c | n p q.t0 | r s | q.t1: every
// vector of d_Y is read once for all 9 points of (r, s), whose 9 partial
// vectors stay in registers.
func (ss *stmtSpace) registerLanes(spec *ir.Spec, g []int) bool {
	if !ss.lanesFit() {
		return false
	}
	st := ss.st
	n, m := len(st.Spatial), len(st.Reduction)
	genes := g[ss.off+numFixedGenes:]
	tile, outer := int64(1), n
	for a := n - 1; a > 0 && tile*st.Spatial[a].Extent <= 16; a-- {
		tile *= st.Spatial[a].Extent
		genes[a] = closest(ss.splits[a], []int64{1, st.Spatial[a].Extent})
		outer = a
	}
	v := int64(loops.VectorBytes / max(spec.DType.Size(), 1))
	genes[n+m-1] = closest(ss.splits[n+m-1], []int64{min(st.Reduction[m-1].Extent, v)})
	ss.laneGenes(g, 4, min(2, outer))
	return true
}

// lanesFit reports whether the statement suits the lane-reduction seeds:
// a gathering reduction with spatial axes and a last reduction axis of at
// least 8.
func (ss *stmtSpace) lanesFit() bool {
	st := ss.st
	m := len(st.Reduction)
	return !ss.scatter && ss.red && len(st.Spatial) > 0 && m > 0 && st.Reduction[m-1].Extent >= 8
}

// laneGenes sets the statement's fixed genes for a lane-reduction seed:
// tiled with the given template, lanes innermost, the accumulator after
// the outer spatial tiles, parallel outer loops, no unrolling.
func (ss *stmtSpace) laneGenes(g []int, template, parallel int) {
	f := g[ss.off:]
	f[geneMode] = 1
	f[geneTemplate] = template
	f[geneAcc] = 0
	f[geneParallel] = parallel
	f[geneVector] = 1
	f[geneUnroll] = 0
}

// reductionLanes writes into g a schedule that reduces in lanes over the
// statement's last reduction axis (the innermost one in every template),
// when that axis is long enough: a weight gradient such as depthwise
// conv's d_W[c, r, s] += d_Y[n, c, p, q] * X[n, c, p + r, q + s] has
// short spatial axes and its contiguous axis, q, among the reductions.
// The spatial axes stay whole, the outer ones in parallel, and the
// accumulator holds one partial sum per lane of the spatial point. g is
// the default genome, whose split genes (choice 0: no split) and order
// genes (0: statement order) stay as they are.
func (ss *stmtSpace) reductionLanes(g []int) bool {
	if !ss.lanesFit() {
		return false
	}
	st := ss.st
	n, m := len(st.Spatial), len(st.Reduction)
	genes := g[ss.off+numFixedGenes:]
	genes[n+m-1] = closest(ss.splits[n+m-1], []int64{min(st.Reduction[m-1].Extent, 64)})
	ss.laneGenes(g, 3, min(2, n))
	return true
}

// heuristic writes the register-tiled genes of the statement into g.
func (ss *stmtSpace) heuristic(spec *ir.Spec, g []int, rows int64, acc, unroll int) {
	st := ss.st
	n := len(st.Spatial)
	if ss.scatter || n == 0 {
		return
	}
	v := int64(loops.VectorBytes / max(spec.DType.Size(), 1))
	lane := n - 1
	if ax, ok := loops.LaneAxis(spec, st, v); ok {
		for i, s := range st.Spatial {
			if s.Name == ax.Name {
				lane = i
			}
		}
	}
	genes := g[ss.off+numFixedGenes:]
	pick := func(a int, want []int64) {
		genes[a] = closest(ss.splits[a], want)
	}
	for a := range n {
		pick(a, []int64{1, 1})
	}
	pick(lane, []int64{4, v})
	// The row axis: the spatial axis before the lane axis in the order
	// below (the last other one), tiled into registers.
	row := -1
	for i := n - 1; i >= 0; i-- {
		if i != lane {
			row = i
			break
		}
	}
	if row >= 0 {
		pick(row, []int64{16, rows})
	}
	for r := range len(st.Reduction) {
		pick(n+r, []int64{256})
	}
	// Order: the other axes in statement order, then the row axis, then
	// the lane axis last.
	var order []int
	for i := range n {
		if i != lane && i != row {
			order = append(order, i)
		}
	}
	if row >= 0 {
		order = append(order, row)
	}
	order = append(order, lane)
	copy(genes[n+len(st.Reduction):], lehmerCode(order))
	f := g[ss.off:]
	f[geneMode] = 1
	f[geneTemplate] = 0
	f[geneAcc] = acc
	f[geneParallel] = min(2, n)
	f[geneVector] = 1
	f[geneUnroll] = unroll
}

// closest is the index of the choice nearest to want: each factor compared
// on a log scale, inner factors weighing most.
func closest(choices [][]int64, want []int64) int {
	best, bestD := 0, -1.0
	for i, c := range choices {
		d := 0.0
		for j := range c {
			x, y := float64(c[j]), float64(want[j])
			r := max(x/y, y/x)
			if x > y {
				r *= 1.5 // prefer tiles no larger than asked
			}
			d += r * float64(j+1)
		}
		if bestD < 0 || d < bestD {
			best, bestD = i, d
		}
	}
	return best
}

// lehmerCode is the inverse of lehmer.
func lehmerCode(perm []int) []int {
	rest := make([]int, len(perm))
	for i := range rest {
		rest[i] = i
	}
	out := make([]int, len(perm))
	for i, p := range perm {
		j := slices.Index(rest, p)
		out[i] = j
		rest = slices.Delete(rest, j, j+1)
	}
	return out
}
