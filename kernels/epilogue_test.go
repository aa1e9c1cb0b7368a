package kernels

import (
	"fmt"
	"os"
	"testing"

	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/loops"
	"github.com/neoflow/neoflow/core/parse"
	"github.com/neoflow/neoflow/core/sema"
	"github.com/neoflow/neoflow/internal/hostbuf"
)

// epilogueSpec is a contraction with two epilogue statements joined to
// it: P reads UH where it is stored (and X elsewhere), Q reads P.
func epilogueSpec(t *testing.T, dt ir.DType) *ir.Spec {
	t.Helper()
	src := "UH[b,g] += U[g,j] * H[b,j]\nP[b,g] = UH[b,g] * X[b,g] + X[b,39 - g]\nQ[b,g] = tanh(P[b,g]) + UH[b,g]"
	op, err := parse.Parse(src, parse.Options{Name: "epi", Inputs: []string{"U", "H", "X"}, Outputs: []string{"P", "Q"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := sema.Check(op); err != nil {
		t.Fatal(err)
	}
	spec, err := sema.Specialize(op, dt, [][]int64{{40, 64}, {6, 64}, {6, 40}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	spec.Stmts[1].Joined, spec.Stmts[2].Joined = true, true
	return spec
}

// TestEpilogueNests runs the contraction's epilogue under schedules of
// each family: the untiled default, a lane reduction, spatial lanes, tiled
// with a local accumulator (one nest, the epilogue after each element) and
// tiled combining into the output (no complete element before the end:
// the epilogue statements run after it, as a group of their own), against
// the interpreter on 1 and 3 threads.
func TestEpilogueNests(t *testing.T) {
	b := testBuilder(t)
	tiled := func(accAt int) loops.Schedule {
		return loops.Schedule{Tiling: &loops.Tiling{
			Splits: []loops.Split{{Axis: "g", Factors: []int64{2, 4}}, {Axis: "j", Factors: []int64{16}}},
			Loops:  []string{"b", "g.t0", "j.t0", "g.t1", "j.t1", "g.t2"}, Parallel: 1, Vector: true, AccAt: accAt}}
	}
	for _, dt := range []ir.DType{ir.Float32, ir.Float64} {
		spec := epilogueSpec(t, dt)
		variants := map[string]struct {
			s     loops.Schedule
			nests int
		}{
			"default":     {loops.DefaultSchedule(spec, 0), 1},
			"lane reduce": {loops.Schedule{VectorWidth: 8, VectorAxis: "j", ParallelDepth: 1}, 1},
			"lanes":       {loops.Schedule{VectorWidth: 8, Order: []string{"b", "g"}, ParallelDepth: 1}, 1},
			"tiled acc":   {tiled(2), 1},
			"tiled out":   {tiled(6), 2},
		}
		for name, v := range variants {
			t.Run(fmt.Sprintf("%s_%s", dt, name), func(t *testing.T) {
				scheds := []loops.Schedule{v.s, loops.DefaultSchedule(spec, 1), loops.DefaultSchedule(spec, 2)}
				fn, err := loops.LowerNests(spec, func(_ *ir.Spec, i int) loops.Schedule { return scheds[i] })
				if err != nil {
					t.Fatal(err)
				}
				if os.Getenv("NF_SHOW") != "" {
					t.Log(loops.Dump(fn))
				}
				if len(fn.Nests) != v.nests {
					t.Fatalf("%d nests, want %d\n%s", len(fn.Nests), v.nests, loops.Dump(fn))
				}
				runScheduled(t, b, spec, scheds, 9)
			})
		}
	}
}

// TestEpilogueNotAttached: statements that are not a reduction's
// epilogue (another reduction joined, an epilogue over other axes) are
// lowered one by one.
func TestEpilogueNotAttached(t *testing.T) {
	spec := epilogueSpec(t, ir.Float32)
	if !loops.EpilogueMembers(spec.Stmts) {
		t.Fatal("a contraction and its epilogue statements are not epilogue members")
	}
	if loops.EpilogueMembers(spec.Stmts[1:]) {
		t.Fatal("'=' statements are a reduction's epilogue")
	}
	other := *spec.Stmts[1]
	other.Spatial = []ir.Var{{Name: "b", Extent: 6}}
	if loops.EpilogueMembers([]*ir.BoundStmt{spec.Stmts[0], &other}) {
		t.Fatal("a statement over other axes is an epilogue")
	}
}

// TestEpilogueCUDAEmulated: on a GPU the epilogue statements run in the
// reduction's kernel, one launch for the three statements, under each GPU
// family: the tiled contraction (after each register element's store, in
// its thread), the block reduction (in the thread that stores the
// block's result) and the default one thread per element; every dtype
// against the interpreter on the CUDA emulator.
func TestEpilogueCUDAEmulated(t *testing.T) {
	for _, dt := range []ir.DType{ir.Float32, ir.Float64, ir.Float16, ir.BFloat16} {
		spec := epilogueSpec(t, dt)
		tiled := loops.DefaultGPUTiling(spec, spec.Stmts[0])
		if tiled == nil {
			t.Fatal("the contraction has no GPU tiling")
		}
		variants := map[string]loops.Schedule{
			"tiled":   {GPU: tiled},
			"reduce":  {GPUReduce: &loops.GPUReduction{Threads: 64}},
			"default": {VectorWidth: 1, Threads: 128, ParallelDepth: 2},
		}
		for name, s := range variants {
			t.Run(fmt.Sprintf("%s_%s", dt, name), func(t *testing.T) {
				scheds := []loops.Schedule{s, loops.GPUSchedule(spec, 1), loops.GPUSchedule(spec, 2)}
				mod, err := CUDASource(spec, scheds, "nf_test")
				if err != nil {
					t.Fatal(err)
				}
				if len(mod.Launches) != 1 {
					t.Fatalf("%d launches, want 1 (the epilogue in the contraction's kernel)\n%s", len(mod.Launches), mod.Source)
				}
				if os.Getenv("NF_SHOW") != "" {
					t.Log(mod.Source)
				}
				runCUDAEmulated(t, spec, scheds, hostbuf.RandomInputs(spec, false, 5), tolerance(dt))
			})
		}
	}
}
