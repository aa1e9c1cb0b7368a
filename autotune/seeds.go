package autotune

import (
	"cmp"
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
// an inner tile of one or four vectors (64 bytes each) and a middle tile
// that makes 4 vectors in all; the spatial axis before it gets an inner
// tile of up to 8 rows (unrolled) and a middle tile of 16; reduction axes
// an inner tile of up to 256; the loops run S0 R0 S1 R1 S2 with the
// accumulator after S1, so it holds one register tile, and the outer
// spatial tiles run in parallel. The variants change the row tile (1, 4, 6
// or 8), the vectors per row, the accumulator position and the unroll. The
// largest, 8 rows of 4 vectors (32 accumulators, AVX-512's register
// count), is the usual winner for a product with long axes: d_H[b, k] +=
// d_UH[b, j] * U[j, k] of the MI-LSTM gradient (64 x 1024 x 1024) runs
// 0.36 ms with it against 1.0 ms with 4 rows of one vector.
func (sp *Space) Seeds() [][]int {
	out := [][]int{sp.Default()}
	for _, v := range []struct {
		rows, vecs  int64
		acc, unroll int
	}{{4, 1, 1, 2}, {6, 1, 1, 2}, {4, 1, 0, 2}, {4, 1, 1, 3}, {1, 1, 1, 0}, {8, 1, 1, 3}, {8, 4, 1, 3}, {4, 4, 1, 2}} {
		g := sp.Default()
		for _, ss := range sp.stmts {
			ss.heuristic(sp.spec, g, v.rows, v.vecs, v.acc, v.unroll)
		}
		if !slices.ContainsFunc(out, func(o []int) bool { return slices.Equal(o, g) }) {
			out = append(out, g)
		}
	}
	// The group seeds: every fused group as one nest, near its default
	// tiling, with other lane chunks and reduction tiles.
	for _, v := range []struct {
		vecs, red int64
		template  int
	}{{4, 256, 0}, {1, 256, 0}, {4, 16, 1}, {16, 256, 3}} {
		g := sp.Default()
		if sp.groupSeed(g, v.vecs, v.red, v.template) && !slices.ContainsFunc(out, func(o []int) bool { return slices.Equal(o, g) }) {
			out = append(out, g)
		}
	}
	// The lane seeds: each builder writes its genes for the statements it
	// suits; a seed that none suits is not added.
	builders := []func(ss *stmtSpace, g []int) bool{
		func(ss *stmtSpace, g []int) bool { return ss.reductionLanes(g) },
		func(ss *stmtSpace, g []int) bool { return ss.registerLanes(sp.spec, g) },
		func(ss *stmtSpace, g []int) bool { return ss.packedLanes(sp.spec, g) },
	}
	for _, build := range builders {
		g := sp.Default()
		suits := false
		for i := range sp.stmts {
			suits = build(&sp.stmts[i], g) || suits
		}
		if suits {
			out = append(out, g)
		}
	}
	return out
}

// packedLanes writes into g a schedule whose lanes run over a spatial axis
// that no access is contiguous in, made contiguous by a shared pack of the
// one read that uses it (loops.Pack at 0), or, when that read is not
// packable (it is guarded, say) or there are several, by relayouts of the
// tensors that use it (loops.Relayout). For capsule conv,
// C[b, k, p, q, i, j] += A[b, c, p*2 + r, q*2 + s, i, t] * B[k, c, r, s, t, j],
// whose contiguous axes (i, j, t) have 4 points each, the lanes go over k
// (32) with B copied once into [c, r, s, t, j, k] order, and the 4 x 4 (i, j)
// matrix is a register tile of 16 x 2 vectors: b p q | c r s t | i j k. Its
// input gradient, a guarded gather, gets lanes over c with B relaid with c
// innermost. The axis must have half a vector's to four vectors' worth of
// points, not be the last, and be read by some access; the register tile
// is the innermost spatial axes other than it, whole, up to 16 points; the
// remaining axes run outside, in parallel.
func (ss *stmtSpace) packedLanes(spec *ir.Spec, g []int) bool {
	st := ss.st
	n := len(st.Spatial)
	if ss.scatter || n < 2 {
		return false
	}
	v := int64(loops.VectorBytes / max(spec.DType.Size(), 1))
	var cands []int
	for a := range n - 1 {
		if e := st.Spatial[a].Extent; 2*e >= v && e <= 4*v {
			cands = append(cands, a)
		}
	}
	slices.SortStableFunc(cands, func(a, b int) int { return cmp.Compare(st.Spatial[b].Extent, st.Spatial[a].Extent) })
	// The reads of the lane axis: one packable read is packed, else the
	// tensors are relaid; the largest axis that either suits is taken.
	reads := loops.PackableReads(st)
	lane, read, relayout := -1, -1, false
	for _, a := range cands {
		name := st.Spatial[a].Name
		r, one := -1, true
		ir.Walk(st.Stmt.RHS, func(e ir.Expr) bool {
			acc, isRead := e.(*ir.Access)
			if !isRead || !loops.Uses(acc, name) {
				return one
			}
			i := slices.Index(reads, ir.ExprString(acc))
			one = i >= 0 && (r < 0 || r == i)
			r = i
			return one
		})
		if one && r >= 0 {
			lane, read = a, r
			break
		}
		if len(laneRelayouts(spec, st, name)) > 0 {
			lane, relayout = a, true
			break
		}
	}
	if lane < 0 {
		return false
	}
	genes := g[ss.off+numFixedGenes:]
	var outer, tile []int
	room := int64(16)
	for a := n - 1; a >= 0; a-- {
		if a == lane {
			continue
		}
		if e := st.Spatial[a].Extent; len(outer) == 0 && e <= room {
			room /= e
			tile = append([]int{a}, tile...)
			genes[a] = closest(ss.splits[a], []int64{1, e})
			continue
		}
		outer = append([]int{a}, outer...)
	}
	genes[lane] = closest(ss.splits[lane], []int64{1, st.Spatial[lane].Extent})
	m := len(st.Reduction)
	copy(genes[n+m:], lehmerCode(append(append(outer, tile...), lane)))
	ss.laneGenes(g, 0, min(len(outer), 3))
	f := g[ss.off:]
	if len(tile) > 0 {
		// Unroll the outer axis of a two-axis tile (GCC then unrolls the
		// inner one completely), else the one axis.
		f[geneUnroll] = closestUnroll(st.Spatial[tile[0]].Extent, len(tile)+1)
	}
	if relayout {
		f[genePack] = 0
		f[geneRelayout] = 1
		return true
	}
	f[genePack] = read + 1
	f[genePackAt] = packAtGroups // shared
	return true
}

// closestUnroll is the unroll gene of the loop at depth (2: the
// second-innermost) with the largest factor not above f; 0 (no unroll)
// when there is none.
func closestUnroll(f int64, depth int) int {
	best := 0
	for i, u := range unrolls {
		if !u.tile && u.depth == depth && int64(u.factor) <= f && u.factor > unrolls[best].factor {
			best = i
		}
	}
	return best
}

// registerLanes writes into g a variant of reductionLanes for the same
// statements that keeps a register tile of up to 16 spatial points inside
// the outer tiles of the reductions, with the last reduction axis cut into
// vectors of 64 bytes (with a remainder when they do not divide it)
// reduced in lanes innermost (the last template). From the last spatial
// axis outwards, the tile takes each axis whole while it fits, else the
// largest divisor of its extent within the room left, at most 8; the
// outer tile loops run in parallel up to the first axis taken whole. So
// each vector of a read is loaded once for every point of the tile that
// shares it:
//
//   - d_W[c, r, s] += d_Y[n, c, p, q] * X[n, c, p + r, q + s] runs
//     c | n p q.t0 | r s | q.t1: every vector of d_Y serves all 9 points
//     of (r, s), whose 9 partial vectors stay in registers;
//   - WX[b, j] += W[j, k] * X[b, k] (both reads contiguous in k, the
//     reduction) runs b.t0 j.t0 | k.t0 | b.t2 j.t2 | k.t1 with a 2 x 8
//     tile: 10 vector loads for 16 products, against 2 for 1 without it.
func (ss *stmtSpace) registerLanes(spec *ir.Spec, g []int) bool {
	if !ss.lanesFit() {
		return false
	}
	st := ss.st
	n, m := len(st.Spatial), len(st.Reduction)
	genes := g[ss.off+numFixedGenes:]
	room := int64(16)
	tile := make([]int64, n)
	for a := n - 1; a >= 0; a-- {
		e := st.Spatial[a].Extent
		tile[a] = e
		if e > room {
			tile[a] = largestDivisor(e, min(room, 8))
		}
		room /= tile[a]
		genes[a] = closest(ss.splits[a], []int64{1, tile[a]})
	}
	// Order: the axes cut by the tile first, the one with the largest
	// reads per tile outermost; then the axes taken whole, in statement
	// order. The outer tile loops of the cut axes (up to 2) run in
	// parallel. With a outside b, the reads that mention b stream once per
	// tile of a, and those that mention only a stay in cache while b's
	// tiles pass: a goes outside when tiles(a) * reads(b) < tiles(b) *
	// reads(a). A grouped 1x1 convolution's weight gradient GW[o, c] +=
	// T[n, o, h, w] * X[n, o/20*80 + c, h, w] (60 x 80, tiles of 2 x 8)
	// reads more per tile of c (X, 3.0M elements, 10 tiles) than of o (T
	// and X, 3.8M, 30 tiles): c outside ran 1.6 ms, o outside (the larger
	// reads, the rule before) 2.3 ms, re-reading X for every tile of o.
	order := make([]int, n)
	for a := range order {
		order[a] = a
	}
	cut := func(a int) bool { return tile[a] < st.Spatial[a].Extent }
	tiles := func(a int) int64 { return st.Spatial[a].Extent / tile[a] }
	foot := make([]int64, n)
	for a := range foot {
		foot[a] = readFootprint(spec, st, st.Spatial[a].Name)
	}
	slices.SortStableFunc(order, func(a, b int) int {
		if cut(a) != cut(b) {
			if cut(a) {
				return -1
			}
			return 1
		}
		if cut(a) {
			return cmp.Compare(foot[b]*tiles(a), foot[a]*tiles(b))
		}
		return 0
	})
	copy(genes[n+m:], lehmerCode(order))
	parallel := 0
	for parallel < min(2, n) && cut(order[parallel]) {
		parallel++
	}
	v := int64(loops.VectorBytes / max(spec.DType.Size(), 1))
	genes[n+m-1] = closest(ss.splits[n+m-1], []int64{min(st.Reduction[m-1].Extent, v)})
	ss.laneGenes(g, 4, parallel)
	g[ss.off+geneUnroll] = tileUnrollGene // the tile's accumulators in registers
	return true
}

// readFootprint is the number of elements of the tensors that st reads
// with an index mentioning the variable v, each tensor counted once.
func readFootprint(spec *ir.Spec, st *ir.BoundStmt, v string) int64 {
	seen := map[string]bool{}
	var n int64
	ir.Walk(st.Stmt.RHS, func(e ir.Expr) bool {
		a, ok := e.(*ir.Access)
		if !ok || seen[a.Tensor] {
			return true
		}
		for _, ix := range a.Indices {
			if loops.Uses(ix, v) {
				seen[a.Tensor] = true
				if t := spec.Tensor(a.Tensor); t != nil {
					n += t.Elems()
				}
				break
			}
		}
		return true
	})
	return n
}

// largestDivisor is the largest divisor of e that is at most limit (1 when
// limit < 2).
func largestDivisor(e, limit int64) int64 {
	for d := min(e, limit); d > 1; d-- {
		if e%d == 0 {
			return d
		}
	}
	return 1
}

// lanesFit reports whether the statement suits the lane-reduction seeds:
// a gathering reduction with spatial axes and a last reduction axis of at
// least 8.
func (ss *stmtSpace) lanesFit() bool {
	st := ss.st
	m := len(st.Reduction)
	return !ss.scatter && ss.red && len(st.Spatial) > 0 && m > 0 && st.Reduction[m-1].Extent >= 8
}

// laneGenes sets the statement's fixed genes for a lane seed (reduction,
// register or packed lanes): tiled with the given template, lanes
// innermost, the accumulator after the outer spatial tiles, parallel
// outer loops, no unrolling.
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

// registerTiled is the genome of the register-tiled heuristic (8 rows of
// 4 vectors, the largest seed) for every reduction statement of its own
// (not in a fused group, whose schedule is the group's), the default for
// the others.
func (sp *Space) registerTiled() []int {
	g := sp.Default()
	for i, ss := range sp.stmts {
		if sp.spec.Stmts[i].Stmt.Reduce != ir.Assign && !grouped(sp.spec, i) {
			ss.registerTile(sp.spec, g)
		}
	}
	return g
}

// registerTile writes the statement's genes of the largest register tile,
// 8 rows of 4 vectors (heuristic), into g, with the read that every row of
// the tile shares (rowSharedRead: B[k, j] of C[i, j] += A[i, k] * B[k, j])
// packed before the middle spatial tile loops: copied once per outer tile
// into a buffer whose rows (one per reduction step) lie next to each
// other, and read from there by every row tile. Read in place, B's rows
// lie 4 KB apart in a 1024-wide matrix: the panel of 256 rows maps to a
// few of L1's sets and streams from L2 for every row tile. float32 GEMM
// 1024³: 202-207 GFLOP/s packed against 174-180 (torch.matmul 240-270;
// 2-core Xeon). Decode drops the pack where its buffer does not fit
// (loops.MaxLocalElems).
func (ss *stmtSpace) registerTile(spec *ir.Spec, g []int) {
	lane, row := ss.heuristic(spec, g, 8, 4, 1, 3)
	if row == "" {
		return
	}
	if r := rowSharedRead(ss.st, lane, row); r >= 0 && r < maxPackReads {
		f := g[ss.off:]
		f[genePack], f[genePackAt] = r+1, 1
	}
}

// rowSharedRead is the position among loops.PackableReads(st) of the
// first read indexed by the lane axis and not by the row axis, or -1.
func rowSharedRead(st *ir.BoundStmt, lane, row string) int {
	reads := loops.PackableReads(st)
	found := -1
	ir.Walk(st.Stmt.RHS, func(e ir.Expr) bool {
		if _, ok := e.(*ir.Where); ok {
			return false // PackableReads skips guarded reads
		}
		a, ok := e.(*ir.Access)
		if !ok {
			return true
		}
		if i := slices.Index(reads, ir.ExprString(a)); i >= 0 && found < 0 && loops.Uses(a, lane) && !loops.Uses(a, row) {
			found = i
		}
		return false
	})
	return found
}

// grouped reports whether statement i of spec belongs to a fused group
// (whose schedule is the group's).
func grouped(spec *ir.Spec, i int) bool {
	return spec.Stmts[i].Joined || i+1 < len(spec.Stmts) && spec.Stmts[i+1].Joined
}

// heuristic writes the register-tiled genes of the statement into g and
// returns its lane and row axes ("" where it writes none).
func (ss *stmtSpace) heuristic(spec *ir.Spec, g []int, rows, vecs int64, acc, unroll int) (laneAxis, rowAxis string) {
	st := ss.st
	n := len(st.Spatial)
	if ss.scatter || n == 0 {
		return "", ""
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
	pick(lane, []int64{4 / vecs, vecs * v})
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
	rowAxis = ""
	if row >= 0 {
		rowAxis = st.Spatial[row].Name
	}
	return st.Spatial[lane].Name, rowAxis
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
