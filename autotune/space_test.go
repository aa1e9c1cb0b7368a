package autotune

import (
	"context"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"testing"

	"github.com/neoflow/neoflow/core/interp"
	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/loops"
	"github.com/neoflow/neoflow/internal/hostbuf"
	"github.com/neoflow/neoflow/internal/testops"
	"github.com/neoflow/neoflow/kernels"
)

func testBuilder(t *testing.T) *kernels.Builder {
	t.Helper()
	dir := t.TempDir()
	b, err := kernels.NewBuilder(kernels.Options{CacheDir: dir, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// parallelAlways lets the lowering run every parallel loop in parallel,
// however little work it has, until t ends, so that small test ops
// exercise the parallel code.
func parallelAlways(t *testing.T) {
	saved := loops.MinParallelWork
	loops.MinParallelWork = 0
	t.Cleanup(func() { loops.MinParallelWork = saved })
}

func randomGenome(rng *rand.Rand, card []int) []int {
	g := make([]int, len(card))
	for i, c := range card {
		g[i] = rng.IntN(c)
	}
	return g
}

// checkAgainstInterp builds spec with scheds and compares every output
// with the reference interpreter.
func checkAgainstInterp(t *testing.T, b *kernels.Builder, spec *ir.Spec, scheds []loops.Schedule, inputs [][]float64, nthreads int) {
	t.Helper()
	want, err := interp.Run(spec, inputs)
	if err != nil {
		t.Fatal(err)
	}
	checkAgainst(t, b, spec, scheds, inputs, want, nthreads)
}

// checkAgainst builds spec with scheds, runs it on inputs and compares
// every output with want (one slice per tensor of spec, as interp.Run
// gives them).
func checkAgainst(t *testing.T, b *kernels.Builder, spec *ir.Spec, scheds []loops.Schedule, inputs, want [][]float64, nthreads int) {
	t.Helper()
	k, err := b.BuildScheduled(context.Background(), spec, scheds)
	if err != nil {
		t.Fatalf("schedules %v: %v", scheds, err)
	}
	defer k.Close()
	bufs := hostbuf.New(spec, inputs)
	defer bufs.Free()
	if err := k.Launch(bufs.Ptr, nthreads); err != nil {
		t.Fatal(err)
	}
	tol := 1e-9
	if spec.DType == ir.Float32 {
		tol = 2e-4
	}
	for i, td := range spec.Tensors {
		if td.Role == ir.RoleInput {
			continue
		}
		got := bufs.Get(i)
		for j := range want[i] {
			w, g := want[i][j], got[j]
			if math.IsNaN(w) && math.IsNaN(g) || math.Abs(g-w) <= tol*(1+math.Abs(w)) {
				continue
			}
			t.Fatalf("schedules %v: %s[%d] = %v, interpreter says %v\n%s", scheds, td.Name, j, g, w, k.Source())
		}
	}
}

// TestRandomSchedules draws random genomes of every test op's space and
// checks each decoded kernel against the reference interpreter.
func TestRandomSchedules(t *testing.T) {
	parallelAlways(t)
	b := testBuilder(t)
	per := 6
	if testing.Short() || os.Getenv("NEOFLOW_QUICK") != "" {
		per = 2
	}
	for oi, o := range testops.All {
		for _, dt := range []ir.DType{ir.Float32, ir.Float64} {
			t.Run(o.Name+"_"+dt.String(), func(t *testing.T) {
				spec, err := o.Spec(dt)
				if err != nil {
					t.Fatal(err)
				}
				sp := NewSpace(spec)
				rng := rand.New(rand.NewPCG(uint64(oi), uint64(dt)))
				inputs := hostbuf.RandomInputs(spec, true, uint64(oi))
				for range per {
					g := randomGenome(rng, sp.Cardinalities())
					for _, ss := range sp.stmts {
						if !ss.scatter {
							g[ss.off+geneMode] = 1 // tiled: the default is tested elsewhere
						}
					}
					checkAgainstInterp(t, b, spec, sp.Decode(g), inputs, 3)
				}
			})
		}
	}
}

// TestSeedsAreValid checks the heuristic seeds of every test op against
// the interpreter, and that lehmerCode inverts lehmer.
func TestSeedsAreValid(t *testing.T) {
	b := testBuilder(t)
	for oi, o := range testops.All {
		spec, err := o.Spec(ir.Float32)
		if err != nil {
			t.Fatal(err)
		}
		sp := NewSpace(spec)
		seeds := sp.Seeds()
		if len(seeds) < 2 && !sp.stmts[0].scatter && len(spec.Stmts[0].Spatial) > 0 {
			t.Errorf("%s: %d seeds", o.Name, len(seeds))
		}
		for _, g := range seeds {
			for i, c := range sp.Cardinalities() {
				if g[i] < 0 || g[i] >= c {
					t.Fatalf("%s: seed gene %d = %d outside [0, %d)", o.Name, i, g[i], c)
				}
			}
			checkAgainstInterp(t, b, spec, sp.Decode(g), hostbuf.RandomInputs(spec, true, uint64(oi)), 2)
		}
	}
	for _, p := range [][]int{{0}, {1, 0}, {2, 0, 1}, {3, 1, 0, 2}} {
		if got := lehmer(lehmerCode(p)); !slices.Equal(got, p) {
			t.Errorf("lehmer(lehmerCode(%v)) = %v", p, got)
		}
	}
}

// TestReductionLanes checks schedules whose lane loop is a reduction loop
// (one partial result per lane, combined after the reduction) on every
// reducing test op, against the interpreter.
func TestReductionLanes(t *testing.T) {
	parallelAlways(t)
	b := testBuilder(t)
	lanes := 0
	for oi, o := range testops.All {
		spec, err := o.Spec(ir.Float64)
		if err != nil {
			t.Fatal(err)
		}
		sp := NewSpace(spec)
		rng := rand.New(rand.NewPCG(uint64(oi), 99))
		inputs := hostbuf.RandomInputs(spec, true, uint64(oi))
		for range 2 {
			g := randomGenome(rng, sp.Cardinalities())
			for _, ss := range sp.stmts {
				if ss.scatter {
					continue
				}
				g[ss.off+geneMode] = 1
				g[ss.off+geneVector] = 1
				if ss.red {
					g[ss.off+geneTemplate] = 3 // reduction tiles innermost
					g[ss.off+geneAcc] = rng.IntN(2)
				}
			}
			scheds := sp.Decode(g)
			for i, s := range scheds {
				tl := s.Tiling
				if tl != nil && tl.Vector && isRedLoop(spec.Stmts[i], tl.Loops[len(tl.Loops)-1]) {
					lanes++
				}
			}
			checkAgainstInterp(t, b, spec, scheds, inputs, 3)
		}
	}
	if lanes < 10 {
		t.Errorf("only %d statements got a reduction lane loop", lanes)
	}
}

// TestPackedLanes checks the packedLanes seed on a capsule convolution
// with 32 output capsule types: lanes over k with B in a shared pack, in
// both dtypes, against the interpreter, and in a gradient-like statement
// whose only read of the lane axis is guarded (a relayout instead).
func TestPackedLanes(t *testing.T) {
	b := testBuilder(t)
	capsule := testops.Op{Name: "capsule32", Src: "C[b,k,p,q,i,j] += A[b,c,p*2+r,q*2+s,i,t] * B[k,c,r,s,t,j]",
		Shapes: [][]int64{{1, 2, 7, 7, 4, 4}, {32, 2, 3, 3, 4, 4}}}
	for _, dt := range []ir.DType{ir.Float32, ir.Float64} {
		spec, err := capsule.Spec(dt)
		if err != nil {
			t.Fatal(err)
		}
		sp := NewSpace(spec)
		g := sp.Default()
		if !sp.stmts[0].packedLanes(spec, g) {
			t.Fatalf("%s: no packed-lanes seed", dt)
		}
		tl := sp.Decode(g)[0].Tiling
		if tl == nil || len(tl.Packs) != 1 || tl.Packs[0].At != 0 || tl.Loops[len(tl.Loops)-1] != "k.t2" || tl.Parallel == 0 {
			t.Fatalf("%s: seed decodes to %v, want lanes over k.t2 and a shared pack", dt, tl)
		}
		checkAgainstInterp(t, b, spec, sp.Decode(g), hostbuf.RandomInputs(spec, true, 7), 2)
	}
	// A guarded read of the lane axis cannot be packed: X is relaid.
	guarded := testops.Op{Name: "guarded", Src: "Y[k, i] += where(i + r < 4, X[k, i + r], 0.0)",
		Shapes: [][]int64{{32, 4}}, Sizes: map[string]int64{"r": 2, "i": 4}}
	for _, dt := range []ir.DType{ir.Float32, ir.Float64} {
		spec, err := guarded.Spec(dt)
		if err != nil {
			t.Fatal(err)
		}
		sp := NewSpace(spec)
		g := sp.Default()
		if !sp.stmts[0].packedLanes(spec, g) {
			t.Fatalf("%s: no packed-lanes seed for the guarded read", dt)
		}
		tl := sp.Decode(g)[0].Tiling
		if tl == nil || len(tl.Packs) != 0 || len(tl.Relayouts) != 1 || tl.Relayouts[0] != (loops.Relayout{Tensor: "X", Dim: 0}) {
			t.Fatalf("%s: seed decodes to %v, want X relaid with k innermost", dt, tl)
		}
		checkAgainstInterp(t, b, spec, sp.Decode(g), hostbuf.RandomInputs(spec, true, 7), 2)
	}
}

// TestLaneRemainders checks schedules whose lane axis is split by a vector
// width that leaves a remainder (loops.Tiling.Splits) on every test op, in
// both dtypes, against the interpreter.
func TestLaneRemainders(t *testing.T) {
	parallelAlways(t)
	b := testBuilder(t)
	peeled := 0
	for oi, o := range testops.All {
		for _, dt := range []ir.DType{ir.Float32, ir.Float64} {
			spec, err := o.Spec(dt)
			if err != nil {
				t.Fatal(err)
			}
			sp := NewSpace(spec)
			rng := rand.New(rand.NewPCG(uint64(oi), 7+uint64(dt)))
			inputs := hostbuf.RandomInputs(spec, true, uint64(oi))
			for range 3 {
				g := randomGenome(rng, sp.Cardinalities())
				for _, ss := range sp.stmts {
					if !ss.scatter {
						ss.forceRemainder(rng, g)
					}
				}
				scheds := sp.Decode(g)
				for i, s := range scheds {
					if tl := s.Tiling; tl != nil {
						for _, sp := range tl.Splits {
							if rem(axisExtent(spec.Stmts[i], sp.Axis), sp.Factors) {
								peeled++
							}
						}
					}
				}
				checkAgainstInterp(t, b, spec, scheds, inputs, 3)
			}
		}
	}
	if peeled < 20 {
		t.Errorf("only %d statements got a lane remainder", peeled)
	}
}

// forceRemainder makes g's schedule of the statement tiled with lanes and
// picks a remainder split for the axis that ends innermost, if it has one.
func (ss *stmtSpace) forceRemainder(rng *rand.Rand, g []int) {
	st := ss.st
	n, m := len(st.Spatial), len(st.Reduction)
	g[ss.off+geneMode] = 1
	g[ss.off+geneVector] = 1
	genes := g[ss.off+numFixedGenes:]
	a := -1
	if tm := g[ss.off+geneTemplate]; ss.red && m > 0 && (tm == 3 || tm == 4) {
		a = n + m - 1
		g[ss.off+geneAcc] = 0
	} else if n > 0 {
		a = lehmer(genes[n+m : n+m+n])[n-1]
	}
	if a < 0 {
		return
	}
	k := len(laneRemainders(axisAt(st, a).Extent))
	if k > 0 {
		genes[a] = len(ss.splits[a]) - 1 - rng.IntN(k)
	}
}
