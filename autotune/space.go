package autotune

import (
	"slices"

	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/loops"
)

// Space is the schedule space of one specialized kernel, derived from its
// statements: a genome of integer genes, each with a cardinality, decodes
// to one schedule per statement. Every genome decodes to a schedule that
// lowers (Decode repairs combinations that would not), so every point is
// a correct kernel; genomes differ only in speed.
type Space struct {
	spec  *ir.Spec
	stmts []stmtSpace
	card  []int
}

// stmtSpace is the part of a genome that schedules one statement.
type stmtSpace struct {
	index int
	st    *ir.BoundStmt
	// off is the position of the statement's first gene.
	off int
	// scatter: the statement is lowered as a scatter; it has one gene
	// (cardinality 1) and keeps its default schedule.
	scatter bool
	// splits lists, per spatial axis then per reduction axis, the tile
	// factor choices of that axis.
	splits [][][]int64
	red    bool // a reduction statement
	// grp, when the statement leads a fused group with a default group
	// tiling, schedules the group as one nest: mode 2 (group.go).
	grp *groupSpace
}

// Gene layout of a statement, in order (n spatial axes, m reduction axes):
//
//	mode       0: the default schedule, 1: tiled (the genes below apply),
//	           2 (a fused group's lead): the group as one nest, tiled by
//	           the group's genes, which follow the statement's (group.go)
//	split[a]   n spatial genes: (f1, f2) with f1*f2 dividing the extent,
//	           giving three tile levels; m reduction genes: f dividing
//	           the extent, giving two. After the divisors come the lane
//	           widths that leave a remainder (laneRemainders): (1, V) or
//	           V, valid only for the lane axis (loops.Tiling.Splits);
//	           elsewhere the axis is not split
//	perm[i]    n genes of cardinality n-i: the Lehmer code of the order
//	           of the spatial axes inside every level (the last is the
//	           lane axis)
//	template   where the reduction tiles go (see templates)
//	acc        the local accumulator's position: after the outer spatial
//	           tiles, after the middle ones, or none (combine into the
//	           output)
//	parallel   how many outer spatial tile loops run in parallel, 0..n
//	vector     0: scalar innermost loop, 1: lane loop; when the innermost
//	           loop is a reduction tile (the last template), it reduces
//	           in lanes into the accumulator, or stays scalar when there
//	           is none
//	unroll     the unroll factor of the second-innermost loop, or of the
//	           third-innermost (unrolls), which unrolls a register tile
//	           of two spatial axes around a lane loop
//	pack       0: no packing, p: pack the p-th packable read
//	           (loops.PackableReads, the first maxPackReads)
//	packAt     where the pack goes: before the second, third or fourth
//	           group of the template (loops.Pack; moved inside the
//	           parallel loops, dropped when the buffer would be too big),
//	           or, the last choice, before every loop: the shared pack,
//	           filled once for all threads
//	relayout   0: none, 1: every tensor that some read indexes by the
//	           lane loop's axis in an outer dimension is copied with that
//	           dimension innermost (loops.Relayout), so the lanes read it
//	           contiguously, guarded reads included; dropped when the
//	           copies would be too big
const (
	geneMode = iota
	geneTemplate
	geneAcc
	geneParallel
	geneVector
	geneUnroll
	genePack
	genePackAt
	geneRelayout
	numFixedGenes
)

// unrolls lists the unroll choices: a factor and the loop it applies to,
// counted from the innermost (2: the second-innermost). The last, tile,
// unrolls both the second- and the third-innermost loop by tileUnroll
// (whole, when they are that short): a register tile of two spatial axes
// around a lane loop, whose accumulators only stay in registers when
// every loop of the tile is unrolled. UH[b, g] += U[g, j] * H[b, j]
// (16 x 4096 x 1024) with a 2 x 8 tile reducing in lanes over j runs
// 1.37 ms so, 2.37 ms with neither loop unrolled (torch.matmul 1.23 ms,
// 2-core Xeon). Appended last, so that earlier genomes keep their meaning.
var unrolls = []struct {
	factor, depth int
	tile          bool
}{{1, 2, false}, {2, 2, false}, {4, 2, false}, {8, 2, false}, {2, 3, false}, {4, 3, false}, {8, 3, false}, {tileUnroll, 3, true}}

// tileUnroll is the factor of the tile unroll choice.
const tileUnroll = 8

// tileUnrollGene is that choice's gene.
var tileUnrollGene = len(unrolls) - 1

// templates orders the tile groups: S0, S1, S2 are the outer, middle and
// inner tiles of the spatial axes; R0, R1 the outer and inner tiles of the
// reduction axes.
// The last puts a register tile of the inner spatial tiles inside the
// outer reduction tiles, with the inner reduction tile innermost: a
// lane-parallel reduction that reads each vector of the reduction once for
// the whole register tile (a weight gradient with short spatial axes).
var templates = [][]string{
	{"S0", "R0", "S1", "R1", "S2"},
	{"S0", "S1", "R0", "R1", "S2"},
	{"S0", "R0", "R1", "S1", "S2"},
	{"S0", "S1", "S2", "R0", "R1"},
	{"S0", "R0", "S1", "S2", "R1"},
}

// packAtGroups is the number of packAt choices that place the pack before
// a group of the template; the shared choice comes after them.
const packAtGroups = 3

// maxPackReads caps the reads a statement's pack gene chooses from.
const maxPackReads = 3

// maxFactorChoices caps the split choices of one axis.
const maxFactorChoices = 64

// NewSpace derives the schedule space of spec.
func NewSpace(spec *ir.Spec) *Space {
	sp := &Space{spec: spec}
	for i, st := range spec.Stmts {
		ss := stmtSpace{index: i, st: st, off: len(sp.card), red: st.Stmt.Reduce != ir.Assign}
		def := loops.DefaultSchedule(spec, i)
		if def.Scatter {
			ss.scatter = true
			sp.card = append(sp.card, 1)
			sp.stmts = append(sp.stmts, ss)
			continue
		}
		sp.card = append(sp.card, ss.genes(false)...)
		if gs := newGroupSpace(spec, i, def, len(sp.card)); gs != nil {
			ss.grp = gs
			sp.card[ss.off+geneMode] = 3
			sp.card = append(sp.card, gs.dom.genes(true)...)
		}
		sp.stmts = append(sp.stmts, ss)
	}
	return sp
}

// genes fills in ss's split choices and returns the cardinalities of its
// genes (the layout above). A group domain's genes (group) have no
// remainder splits and fix the genes that a loops.GroupTiling has no
// field for (mode, unroll, pack, packAt, relayout) at one value.
func (ss *stmtSpace) genes(group bool) []int {
	st := ss.st
	n := len(st.Spatial)
	fixed := make([]int, numFixedGenes)
	for i := range fixed {
		fixed[i] = 1
	}
	if n+len(st.Reduction) > 0 && !group {
		fixed[geneMode] = 2 // else no loop to tile: the default schedule only
	}
	if ss.red {
		fixed[geneTemplate] = len(templates)
	}
	fixed[geneAcc] = 3
	fixed[geneParallel] = n + 1
	fixed[geneVector] = 2
	if !group {
		fixed[geneUnroll] = len(unrolls)
		fixed[genePack] = 1 + min(len(loops.PackableReads(st)), maxPackReads)
		fixed[genePackAt] = packAtGroups + 1 // the last choice: shared
		fixed[geneRelayout] = 2
	}
	card := fixed
	for _, ax := range st.Spatial {
		fs := factorPairs(ax.Extent)
		if !group {
			for _, v := range laneRemainders(ax.Extent) {
				fs = append(fs, []int64{1, v})
			}
		}
		ss.splits = append(ss.splits, fs)
	}
	for _, ax := range st.Reduction {
		fs := factorSingles(ax.Extent)
		if !group {
			for _, v := range laneRemainders(ax.Extent) {
				fs = append(fs, []int64{v})
			}
		}
		ss.splits = append(ss.splits, fs)
	}
	for _, f := range ss.splits {
		card = append(card, len(f))
	}
	for i := range n {
		card = append(card, n-i)
	}
	return card
}

// Cardinalities is the number of values of each gene.
func (sp *Space) Cardinalities() []int { return slices.Clone(sp.card) }

// Default is the genome of the default schedules.
func (sp *Space) Default() []int { return make([]int, len(sp.card)) }

// Decode turns a genome into one schedule per statement. Statement i's
// schedule depends on its own gene segment alone (segment), so segments
// taken from different genomes compose into a valid genome whose
// statements are scheduled as in the genomes they came from.
func (sp *Space) Decode(g []int) []loops.Schedule {
	out := make([]loops.Schedule, len(sp.stmts))
	for i, ss := range sp.stmts {
		out[i] = ss.decode(sp.spec, g)
	}
	return out
}

func (sp *Space) numStmts() int { return len(sp.stmts) }

// keepParallel raises, in g, the parallel gene of every statement (and
// fused group) that floor tiles (mode 1 or 2) to floor's: g's tiling then
// runs at least as many outer tile loops in parallel, as far as its own
// splits allow (decode). A statement floor leaves to its default
// schedule sets no floor.
func (sp *Space) keepParallel(g, floor []int) {
	for _, ss := range sp.stmts {
		if ss.scatter || floor[ss.off+geneMode] == 0 {
			continue
		}
		i := ss.off + geneParallel
		g[i] = max(g[i], floor[i])
		if ss.grp != nil && floor[ss.off+geneMode] == 2 {
			j := ss.grp.dom.off + geneParallel
			g[j] = max(g[j], floor[j])
		}
	}
}

// segment is the gene range [lo, hi) of statement i.
func (sp *Space) segment(i int) (lo, hi int) {
	return geneSegment(i, len(sp.stmts), len(sp.card), func(i int) int { return sp.stmts[i].off })
}

// geneSegment is the gene range of statement i of n, statement j's genes
// starting at off(j), genes in all.
func geneSegment(i, n, genes int, off func(int) int) (lo, hi int) {
	lo, hi = off(i), genes
	if i+1 < n {
		hi = off(i + 1)
	}
	return lo, hi
}

func (ss *stmtSpace) decode(spec *ir.Spec, g []int) loops.Schedule {
	def := loops.DefaultSchedule(spec, ss.index)
	if ss.scatter || g[ss.off+geneMode] == 0 {
		return def
	}
	if g[ss.off+geneMode] == 2 {
		return ss.grp.decode(def, g)
	}
	t, starts := ss.tiling(g)
	if t.Check(spec, ss.st) != nil {
		// A remainder split whose axis does not end innermost in lanes:
		// the axis stays whole instead.
		g = slices.Clone(g)
		genes := g[ss.off+numFixedGenes:]
		for a := range ss.splits {
			if rem(axisAt(ss.st, a).Extent, ss.splits[a][genes[a]]) {
				genes[a] = 0
			}
		}
		t, starts = ss.tiling(g)
	}
	if r := g[ss.off+genePack]; r > 0 {
		at := 0 // shared
		if pa := g[ss.off+genePackAt]; pa < packAtGroups {
			at = max(starts[min(1+pa, len(starts)-1)], t.Parallel)
		}
		if at < len(t.Loops) {
			t.Packs = []loops.Pack{{Read: r - 1, At: at}}
			if t.Check(spec, ss.st) != nil {
				t.Packs = nil
			}
		}
	}
	if g[ss.off+geneRelayout] == 1 && t.Vector {
		t.Relayouts = laneRelayouts(spec, ss.st, t.Loops[len(t.Loops)-1])
		if t.Check(spec, ss.st) != nil {
			t.Relayouts = nil
		}
	}
	return loops.Schedule{Tiling: t}
}

// rem reports whether tile factors f leave a remainder of extent e.
func rem(e int64, f []int64) bool {
	p := int64(1)
	for _, x := range f {
		p *= x
	}
	return e%p != 0
}

// tiling decodes the statement's genes, packs aside, into a tiling and the
// positions in its loops where the template's groups start; a remainder
// split it places where lowering rejects it is left to decode.
func (ss *stmtSpace) tiling(g []int) (*loops.Tiling, []int) {
	st := ss.st
	n, m := len(st.Spatial), len(st.Reduction)
	genes := g[ss.off+numFixedGenes:]
	t := &loops.Tiling{}
	// Tile loop names per level: spatial levels 0..2, reduction 0..1.
	sLevels := make([][]string, 3)
	rLevels := make([][]string, 2)
	for a := range n + m {
		f := ss.splits[a][genes[a]]
		ax := axisAt(st, a)
		nonTrivial := slices.ContainsFunc(f, func(x int64) bool { return x > 1 })
		var names []string
		if nonTrivial {
			t.Splits = append(t.Splits, loops.Split{Axis: ax.Name, Factors: slices.Clone(f)})
			for l := range len(f) + 1 {
				names = append(names, loops.TileLoop(ax.Name, l))
			}
		} else {
			names = []string{ax.Name}
		}
		if a < n {
			for l, nm := range levelsOf(names, 3) {
				sLevels[l] = append(sLevels[l], nm...)
			}
		} else {
			for l, nm := range levelsOf(names, 2) {
				rLevels[l] = append(rLevels[l], nm...)
			}
		}
	}
	perm := lehmer(genes[n+m : n+m+n])
	for l := range sLevels {
		sLevels[l] = permuteByAxis(sLevels[l], st, perm)
	}
	groups := map[string][]string{"S0": sLevels[0], "S1": sLevels[1], "S2": sLevels[2], "R0": rLevels[0], "R1": rLevels[1]}
	tmpl := []string{"S0", "S1", "S2"}
	if ss.red {
		tmpl = templates[g[ss.off+geneTemplate]]
	}
	pos := map[string]int{}
	var starts []int
	for _, grp := range tmpl {
		pos[grp] = len(t.Loops)
		starts = append(starts, len(t.Loops))
		t.Loops = append(t.Loops, groups[grp]...)
	}
	t.Parallel = min(g[ss.off+geneParallel], len(sLevels[0]))
	last := len(t.Loops) - 1
	t.Vector = g[ss.off+geneVector] == 1 && last >= 0
	laneRed := t.Vector && isRedLoop(st, t.Loops[last])
	switch u := unrolls[g[ss.off+geneUnroll]]; {
	case u.tile:
		for d := 2; d <= min(u.depth, len(t.Loops)); d++ {
			t.Unroll = append(t.Unroll, loops.Unroll{Loop: t.Loops[len(t.Loops)-d], Factor: u.factor})
		}
	case u.factor > 1 && len(t.Loops) >= u.depth:
		t.Unroll = []loops.Unroll{{Loop: t.Loops[len(t.Loops)-u.depth], Factor: u.factor}}
	}
	if ss.red {
		switch g[ss.off+geneAcc] {
		case 0:
			t.AccAt = pos["S0"] + len(sLevels[0])
		case 1:
			t.AccAt = pos["S1"] + len(sLevels[1])
		default:
			t.AccAt = len(t.Loops)
		}
		t.AccAt = max(t.AccAt, t.Parallel)
		for t.AccAt < len(t.Loops) && accElems(st, t) > loops.MaxLocalElems {
			t.AccAt++
		}
		if laneRed && t.AccAt >= len(t.Loops) {
			t.Vector = false // a reduction lane needs a local accumulator
		}
	}
	// The outer loop of a remainder split must not run in parallel.
	for i, l := range t.Loops[:t.Parallel] {
		if f, ok := splitOf(t, baseAxis(l)); ok && rem(axisExtent(st, baseAxis(l)), f) && l == loops.TileLoop(baseAxis(l), 0) {
			t.Parallel = i
			break
		}
	}
	return t, starts
}

// splitOf is the factors of axis in t's splits.
func splitOf(t *loops.Tiling, axis string) ([]int64, bool) {
	for _, s := range t.Splits {
		if s.Axis == axis {
			return s.Factors, true
		}
	}
	return nil, false
}

// axisExtent is the extent of the statement's axis name.
func axisExtent(st *ir.BoundStmt, name string) int64 {
	for a := range len(st.Spatial) + len(st.Reduction) {
		if ax := axisAt(st, a); ax.Name == name {
			return ax.Extent
		}
	}
	return 0
}

// laneRemainders lists the lane widths of float64 and float32 vectors
// (8 and 16) that are shorter than extent e and do not divide it: split
// choices that run e in full vectors and a remainder.
func laneRemainders(e int64) []int64 {
	var out []int64
	for _, v := range []int64{8, 16} {
		if v < e && e%v != 0 {
			out = append(out, v)
		}
	}
	return out
}

// accElems is the size of the accumulator of t: one element per
// iteration of the spatial loops from AccAt on, times the lanes of a
// reduction lane loop.
func accElems(st *ir.BoundStmt, t *loops.Tiling) int64 {
	ext := loops.TileExtents(st, t.Splits)
	n := int64(1)
	for _, l := range t.Loops[t.AccAt:] {
		if !isRedLoop(st, l) {
			n *= max(ext[l], 1)
		}
	}
	if last := t.Loops[len(t.Loops)-1]; t.Vector && isRedLoop(st, last) && t.AccAt < len(t.Loops) {
		n *= max(ext[last], 1) // one partial result per reduction lane
	}
	return n
}

func axisAt(st *ir.BoundStmt, a int) ir.Var {
	if a < len(st.Spatial) {
		return st.Spatial[a]
	}
	return st.Reduction[a-len(st.Spatial)]
}

// isRedLoop reports whether tile loop name belongs to a reduction axis.
func isRedLoop(st *ir.BoundStmt, name string) bool {
	ax := baseAxis(name)
	return slices.ContainsFunc(st.Reduction, func(v ir.Var) bool { return v.Name == ax })
}

// baseAxis is the axis of a tile loop name ("k.t1" -> "k").
func baseAxis(name string) string {
	for i := len(name) - 1; i >= 0; i-- {
		if name[i] == '.' {
			return name[:i]
		}
	}
	return name
}

// levelsOf spreads an axis's tile loops over k levels: a split axis has
// one loop per level; an unsplit axis's single loop goes to the outermost
// level.
func levelsOf(names []string, k int) [][]string {
	out := make([][]string, k)
	if len(names) == 1 {
		out[0] = names
		return out
	}
	for i, nm := range names {
		out[min(i, k-1)] = append(out[min(i, k-1)], nm)
	}
	return out
}

// lehmer decodes a Lehmer code (gene i in [0, n-i)) into a permutation.
func lehmer(code []int) []int {
	rest := make([]int, len(code))
	for i := range rest {
		rest[i] = i
	}
	perm := make([]int, 0, len(code))
	for _, c := range code {
		perm = append(perm, rest[c])
		rest = slices.Delete(rest, c, c+1)
	}
	return perm
}

// permuteByAxis orders tile loop names by the rank of their spatial axis
// in perm (perm[r] is the index of the axis placed r-th).
func permuteByAxis(names []string, st *ir.BoundStmt, perm []int) []string {
	rank := map[string]int{}
	for r, a := range perm {
		rank[st.Spatial[a].Name] = r
	}
	out := slices.Clone(names)
	slices.SortStableFunc(out, func(x, y string) int { return rank[baseAxis(x)] - rank[baseAxis(y)] })
	return out
}

// factorPairs lists (f1, f2) with f1*f2 dividing e, (1, 1) first, then by
// increasing inner factor; at most maxFactorChoices, keeping powers of
// two and small factors first.
func factorPairs(e int64) [][]int64 {
	ds := divisors(e)
	var out [][]int64
	for _, f2 := range ds {
		for _, f1 := range ds {
			if e%(f1*f2) == 0 && len(out) < maxFactorChoices {
				out = append(out, []int64{f1, f2})
			}
		}
	}
	return out
}

// factorSingles lists the divisors f of e as one-factor splits.
func factorSingles(e int64) [][]int64 {
	var out [][]int64
	for _, d := range divisors(e) {
		if len(out) < maxFactorChoices {
			out = append(out, []int64{d})
		}
	}
	return out
}

// divisors of e in increasing order, capped to those up to 256.
func divisors(e int64) []int64 {
	var out []int64
	for d := int64(1); d <= e && d <= 256; d++ {
		if e%d == 0 {
			out = append(out, d)
		}
	}
	return out
}

// laneRelayouts lists the relayouts that make the reads of st contiguous
// in the axis of the lane loop lane: for each tensor other than st's
// output, the first outer dimension that some read of it indexes by the
// axis alone.
func laneRelayouts(spec *ir.Spec, st *ir.BoundStmt, lane string) []loops.Relayout {
	axis := baseAxis(lane)
	var out []loops.Relayout
	ir.Walk(st.Stmt.RHS, func(e ir.Expr) bool {
		a, ok := e.(*ir.Access)
		if !ok || a.Tensor == st.Stmt.Tensor || slices.ContainsFunc(out, func(r loops.Relayout) bool { return r.Tensor == a.Tensor }) ||
			loops.IndirectlyRead(st.Stmt.RHS, a.Tensor) {
			return true
		}
		for d, x := range a.Indices[:max(len(a.Indices)-1, 0)] {
			if ix, ok := x.(*ir.Index); ok && ix.Name == axis {
				out = append(out, loops.Relayout{Tensor: a.Tensor, Dim: d})
				break
			}
		}
		return true
	})
	return out
}
