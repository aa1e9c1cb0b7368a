package autotune

import (
	"math"
	"slices"

	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/loops"
)

// GPUSpace is the CUDA schedule space of one specialized kernel: like
// Space, a genome of integer genes that decodes to one schedule per
// statement, every genome to schedules that lower. A reduction statement
// chooses between its default GPU schedule, a GPU tiling and a block
// reduction and carries their knobs; any other statement keeps
// loops.GPUSchedule's, as does a statement without reduction axes or of
// the scatter form, with one gene: its block size where that schedule
// runs a grid-stride kernel (a fused group of '=' statements, an
// elementwise or scatter nest; gpuBlockThreads), else of cardinality 1.
type GPUSpace struct {
	spec  *ir.Spec
	stmts []gpuStmtSpace
	card  []int
}

// gpuStmtSpace is the part of a genome that schedules one statement.
type gpuStmtSpace struct {
	index int
	st    *ir.BoundStmt
	off   int
	fixed bool // one gene: GPUSchedule's schedule, and its block size if block
	block bool
	// steps lists, per reduction axis, its step choices (divisors).
	steps [][]int64
	reads int // stageable reads with a gene, at most maxStageGenes
	// mma: the statement is a 16-bit contraction (loops.MatchMMA); mode 3
	// runs it on Tensor Cores with the tile of its last gene (mmaTiles).
	mma bool
}

// Gene layout of a reduction statement (n spatial, m reduction axes):
//
//	mode        0: loops.GPUSchedule, 1: GPU tiling, 2: block reduction
//	block       the block reduction's threads (gpuReduceThreads)
//	threads[a]  n genes: log2 of the axis's threads, 0..5
//	regs[a]     n genes: the axis's registers (gpuRegs)
//	step[k]     m genes: the step of the axis, a divisor of its extent
//	stage[r]    one gene per stageable read (at most maxStageGenes): 1
//	            stages it in shared memory
//	mma         only for a 16-bit contraction: the Tensor Core tile of
//	            mode 3 (mmaTiles)
//
// Decode repairs what would not lower: threads beyond an axis's extent or
// the block's 1024 are halved, registers cut to the extent and to 256 in
// all, stages that overflow shared memory dropped; a tiling that still
// fails is the default schedule.
const (
	gpuGeneMode = iota
	gpuGeneBlock
	gpuFixedGenes
)

var (
	gpuReduceThreads = []int64{32, 64, 128, 256, 512, 1024}
	gpuRegs          = []int64{1, 2, 4, 8}
	// gpuBlockThreads are the block sizes of a grid-stride kernel, the
	// default (loops.DefaultThreads) first so that gene 0 is the default.
	gpuBlockThreads = []int{loops.DefaultThreads, 64, 128, 512, 1024}
	// mmaTiles are the Tensor Core tiles (BM x BN, warps) of mode 3.
	mmaTiles = func() []loops.MMATiling {
		var out []loops.MMATiling
		for _, w := range []int64{0, 4} {
			for _, m := range loops.MMATiles {
				for _, n := range loops.MMATiles {
					out = append(out, loops.MMATiling{BM: m, BN: n, Warps: w})
				}
			}
		}
		return out
	}()
)

// gpuModeMMA is the mode gene's value of a Tensor Core schedule.
const gpuModeMMA = 3

// maxStageGenes caps the reads of a statement with a stage gene.
const maxStageGenes = 4

// maxThreadsLog is the largest log2 of an axis's threads.
const maxThreadsLog = 5

// NewGPUSpace derives the CUDA schedule space of spec.
func NewGPUSpace(spec *ir.Spec) *GPUSpace {
	sp := &GPUSpace{spec: spec}
	for i, st := range spec.Stmts {
		ss := gpuStmtSpace{index: i, st: st, off: len(sp.card)}
		def := loops.GPUSchedule(spec, i)
		if st.Stmt.Reduce == ir.Assign || len(st.Reduction) == 0 || def.Scatter {
			ss.fixed = true
			ss.block = gridStride(st, def)
			sp.card = append(sp.card, 1)
			if ss.block {
				sp.card[len(sp.card)-1] = len(gpuBlockThreads)
			}
			sp.stmts = append(sp.stmts, ss)
			continue
		}
		_, err := loops.MatchMMA(spec, st)
		ss.mma = err == nil
		modes := 3
		if ss.mma {
			modes = gpuModeMMA + 1
		}
		sp.card = append(sp.card, modes, len(gpuReduceThreads))
		for range st.Spatial {
			sp.card = append(sp.card, maxThreadsLog+1)
		}
		for range st.Spatial {
			sp.card = append(sp.card, len(gpuRegs))
		}
		for _, v := range st.Reduction {
			ds := divisors(v.Extent)
			ss.steps = append(ss.steps, ds)
			sp.card = append(sp.card, len(ds))
		}
		ss.reads = min(len(loops.StageableReads(st)), maxStageGenes)
		for range ss.reads {
			sp.card = append(sp.card, 2)
		}
		if ss.mma {
			sp.card = append(sp.card, len(mmaTiles))
		}
		sp.stmts = append(sp.stmts, ss)
	}
	return sp
}

// gridStride reports whether def, statement st's default GPU schedule,
// runs a grid-stride kernel whose block size is a free choice: a fused
// group's one kernel, or a nest with parallel loops and neither a GPU
// tiling nor a block reduction. A statement joined to a group has none of
// its own (the group's lead schedules the kernel).
func gridStride(st *ir.BoundStmt, def loops.Schedule) bool {
	if st.Joined || def.GPU != nil || def.GPUReduce != nil || def.MMA != nil {
		return false
	}
	return def.Group != nil || def.ParallelDepth > 0
}

// Cardinalities is the number of values of each gene.
func (sp *GPUSpace) Cardinalities() []int { return slices.Clone(sp.card) }

// Default is the genome of the default GPU schedules.
func (sp *GPUSpace) Default() []int { return make([]int, len(sp.card)) }

func (sp *GPUSpace) numStmts() int { return len(sp.stmts) }

// segment is the gene range [lo, hi) of statement i.
func (sp *GPUSpace) segment(i int) (lo, hi int) {
	return geneSegment(i, len(sp.stmts), len(sp.card), func(i int) int { return sp.stmts[i].off })
}

// Features describes a genome to the cost model: every gene scaled to
// [0, 1], and per tiled statement the log2 of its block's threads, of
// its registers and of its step's iterations.
func (sp *GPUSpace) Features(g []int) []float64 {
	f := scaledGenes(g, sp.card)
	for _, ss := range sp.stmts {
		if ss.fixed {
			continue
		}
		genes := g[ss.off+gpuFixedGenes:]
		n := len(ss.st.Spatial)
		threads, regs, step := 0.0, 0.0, 0.0
		for a := range n {
			threads += float64(genes[a])
			regs += math.Log2(float64(gpuRegs[genes[n+a]]))
		}
		for k, ds := range ss.steps {
			step += math.Log2(float64(ds[genes[2*n+k]]))
		}
		f = append(f, threads, regs, step)
	}
	return f
}

// Decode turns a genome into one schedule per statement; statement i's
// schedule depends on its own genes alone.
func (sp *GPUSpace) Decode(g []int) []loops.Schedule {
	out := make([]loops.Schedule, len(sp.stmts))
	for i, ss := range sp.stmts {
		out[i] = ss.decode(sp.spec, g)
	}
	return out
}

func (ss *gpuStmtSpace) decode(spec *ir.Spec, g []int) loops.Schedule {
	if ss.fixed {
		s := loops.GPUSchedule(spec, ss.index)
		if ss.block {
			s.Threads = gpuBlockThreads[g[ss.off]]
		}
		return s
	}
	genes := g[ss.off:]
	switch genes[gpuGeneMode] {
	case 1:
		if t := ss.tiling(spec, genes[gpuFixedGenes:]); t != nil {
			return loops.Schedule{GPU: t}
		}
	case 2:
		return loops.Schedule{GPUReduce: &loops.GPUReduction{Threads: gpuReduceThreads[genes[gpuGeneBlock]]}}
	case gpuModeMMA:
		t := mmaTiles[genes[ss.mmaGene()]]
		return loops.Schedule{MMA: &t}
	}
	return loops.GPUSchedule(spec, ss.index)
}

// tiling decodes the tiling genes (those after the fixed ones), repaired;
// nil when no repair lowers.
func (ss *gpuStmtSpace) tiling(spec *ir.Spec, genes []int) *loops.GPUTiling {
	n := len(ss.st.Spatial)
	t := &loops.GPUTiling{}
	threads := int64(1)
	for a, v := range ss.st.Spatial {
		th := int64(1) << genes[a]
		for th > v.Extent || threads*th > loops.MaxGPUThreads {
			th /= 2
		}
		threads *= th
		r := gpuRegs[genes[n+a]]
		for r > 1 && th*r > v.Extent {
			r /= 2
		}
		t.Spatial = append(t.Spatial, loops.GPUAxis{Axis: v.Name, Threads: th, Regs: r})
	}
	for regs := tileRegs(t); regs > loops.MaxGPURegs; regs = tileRegs(t) {
		i := slices.IndexFunc(t.Spatial, func(a loops.GPUAxis) bool { return a.Regs > 1 })
		t.Spatial[i].Regs /= 2
	}
	for k, v := range ss.st.Reduction {
		t.Steps = append(t.Steps, loops.GPUStep{Axis: v.Name, Tile: ss.steps[k][genes[2*n+k]]})
	}
	for r := range ss.reads {
		if genes[2*n+len(ss.steps)+r] == 1 {
			t.TryStage(spec, ss.st, r)
		}
	}
	if t.Check(spec, ss.st) != nil {
		return nil
	}
	return t
}

// mmaGene is the position of the Tensor Core tile gene in the
// statement's segment.
func (ss *gpuStmtSpace) mmaGene() int {
	return gpuFixedGenes + 2*len(ss.st.Spatial) + len(ss.steps) + ss.reads
}

func tileRegs(t *loops.GPUTiling) int64 {
	r := int64(1)
	for _, a := range t.Spatial {
		r *= a.Regs
	}
	return r
}

// Seeds are the genomes the GPU search starts from: the default, for
// each reduction statement the tilings of 64, 128 and 256 threads with 1,
// 4 and 16 registers, steps of up to 8 and 16 iterations, every read
// staged, the block reductions of 128 and 256 threads, the Tensor Core
// tiles 128x128, 64x128 and 64x64 of 8 warps and 128x128 of 4 of a 16-bit
// contraction, and every
// grid-stride kernel (a fused group's included) in blocks of 128 and of
// 512 threads.
func (sp *GPUSpace) Seeds() [][]int {
	out := [][]int{sp.Default()}
	add := func(g []int) {
		if !slices.ContainsFunc(out, func(o []int) bool { return slices.Equal(o, g) }) {
			out = append(out, g)
		}
	}
	for _, c := range []struct {
		threads, regs int
		budget        int64
	}{{6, 0, 8}, {7, 1, 16}, {8, 1, 16}, {8, 2, 16}, {8, 2, 8}} {
		g := sp.Default()
		for _, ss := range sp.stmts {
			if !ss.fixed {
				ss.seedTiling(g, c.threads, c.regs, c.budget)
			}
		}
		add(g)
	}
	for _, b := range []int{2, 3} {
		g := sp.Default()
		for _, ss := range sp.stmts {
			if !ss.fixed {
				g[ss.off+gpuGeneMode], g[ss.off+gpuGeneBlock] = 2, b
			}
		}
		add(g)
	}
	for _, t := range []loops.MMATiling{{BM: 128, BN: 128}, {BM: 64, BN: 128}, {BM: 64, BN: 64}, {BM: 128, BN: 128, Warps: 4}} {
		g := sp.Default()
		for _, ss := range sp.stmts {
			if ss.mma {
				g[ss.off+gpuGeneMode], g[ss.off+ss.mmaGene()] = gpuModeMMA, slices.Index(mmaTiles, t)
			}
		}
		add(g)
	}
	for _, b := range []int{2, 3} {
		g := sp.Default()
		for _, ss := range sp.stmts {
			if ss.block {
				g[ss.off] = b
			}
		}
		add(g)
	}
	return out
}

// seedTiling writes a tiling seed into g: 2^logThreads threads spread
// from the innermost axis outward (at most 2^maxThreadsLog each), register
// gene regs on the two axes with the most points left, steps within
// budget from the innermost reduction axis, every read staged.
func (ss *gpuStmtSpace) seedTiling(g []int, logThreads, regs int, budget int64) {
	genes := g[ss.off:]
	genes[gpuGeneMode] = 1
	rest := genes[gpuFixedGenes:]
	n := len(ss.st.Spatial)
	left := logThreads
	for a := n - 1; a >= 0; a-- {
		l := 0
		for l < maxThreadsLog && l < left && int64(1)<<(l+1) <= ss.st.Spatial[a].Extent {
			l++
		}
		rest[a] = l
		left -= l
	}
	type cand struct {
		a    int
		left int64
	}
	var cs []cand
	for a, v := range ss.st.Spatial {
		cs = append(cs, cand{a, v.Extent >> rest[a]})
	}
	slices.SortStableFunc(cs, func(x, y cand) int { return int(y.left - x.left) })
	for _, c := range cs[:min(2, len(cs))] {
		rest[n+c.a] = regs
	}
	for k := len(ss.steps) - 1; k >= 0; k-- {
		i := 0
		for j, d := range ss.steps[k] {
			if d <= budget {
				i = j
			}
		}
		rest[2*n+k] = i
		budget /= ss.steps[k][i]
	}
	for r := range ss.reads {
		rest[2*n+len(ss.steps)+r] = 1
	}
}
