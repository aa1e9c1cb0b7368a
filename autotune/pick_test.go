package autotune

import (
	"context"
	"fmt"
	"testing"

	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/internal/hostbuf"
	"github.com/neoflow/neoflow/internal/testops"
)

// compose takes each statement's schedule from the fastest candidate and
// sums the times; a fused group goes by its members' total.
func TestComposePicksPerStatement(t *testing.T) {
	spec, err := (testops.Op{Name: "two", Src: "C[i,j] += A[i,k] * B[k,j]\nD[i,j] += A[i,k] * B[j,k]\nE[i,j] = D[i,j] * 2.0",
		Inputs: []string{"A", "B"}, Shapes: [][]int64{{64, 64}, {64, 64}}}).Spec(ir.Float32)
	if err != nil {
		t.Fatal(err)
	}
	sp := NewSpace(spec)
	cands := [][]int{sp.Default(), sp.registerTiled()}
	def, tiled := sp.Decode(cands[0]), sp.Decode(cands[1])
	if def[1].String() == tiled[1].String() || def[2].String() != tiled[2].String() {
		t.Fatalf("candidates %v and %v: want D's schedules to differ, E's not", def, tiled)
	}
	p := compose(sp, spec, cands, [][]float64{{1, 2, 1}, {3, 1, 1}})
	if p.Changed != 1 || p.Default != 4 || p.Best != 3 {
		t.Fatalf("pick %+v: want the tiled schedule for D only, 4 s default, 3 s picked", p)
	}
	if p.Schedules[0].String() != def[0].String() || p.Schedules[1].String() != tiled[1].String() {
		t.Errorf("schedules %v, want C's default and D's tiled", p.Schedules)
	}
	// A candidate dropped as slow (no times) is never taken.
	spec.Stmts[2].Joined = true // E joins D: D alone would go tiled, the group stays default (2 + 1.5 < 1 + 3)
	if p := compose(sp, spec, cands, [][]float64{{1, 2, 1.5}, {3, 1, 3}}); p.Changed != 0 {
		t.Errorf("group: pick %+v, want the default for D and E", p)
	}
	spec.Stmts[2].Joined = false
	if p := compose(sp, spec, append(cands, cands[1]), [][]float64{{1, 1, 1}, {3, 2, 1}, nil}); p.Schedules != nil || p.Changed != 0 {
		t.Errorf("defaults faster everywhere: pick %+v, want no schedules", p)
	}
}

// PickDefaults measures a contraction with enough work and returns
// schedules that compute what the interpreter does; a small one, and an
// elementwise op, it leaves unmeasured.
func TestPickDefaults(t *testing.T) {
	b := testBuilder(t)
	gemm := gemmSpec(t, 256, 256, 256, ir.Float32)
	p, err := PickDefaults(context.Background(), b, gemm, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	if p.Default <= 0 || p.Best <= 0 || p.Best > p.Default {
		t.Fatalf("pick %+v: want measured times, the picked no slower than the default", p)
	}
	checkAgainstInterp(t, b, gemm, p.Schedules, hostbuf.RandomInputs(gemm, false, 1), 2)
	for _, o := range []testops.Op{
		{Name: "small", Src: "C[i,j] += A[i,k] * B[k,j]", Inputs: []string{"A", "B"}, Shapes: [][]int64{{32, 32}, {32, 32}}},
		{Name: "ew", Src: "C[i,j] = A[i,j] * 2.0", Inputs: []string{"A"}, Shapes: [][]int64{{2048, 2048}}},
	} {
		spec, err := o.Spec(ir.Float32)
		if err != nil {
			t.Fatal(err)
		}
		p, err := PickDefaults(context.Background(), b, spec, 2, nil)
		if err != nil || p.Schedules != nil || p.Default != 0 {
			t.Errorf("%s: pick %+v, %v: want none measured", o.Name, p, err)
		}
	}
}

// A pick's genome seeds a search: measured right after the default, so
// the search's best is at least as fast as the pick up to noise.
func TestPickSeedsTheSearch(t *testing.T) {
	b := testBuilder(t)
	gemm := gemmSpec(t, 256, 256, 256, ir.Float32)
	sp := NewSpace(gemm)
	g := sp.registerTiled()
	tu, err := NewTuner(b, gemm, Options{Trials: 2, Seed: 1, Seeds: [][]int{g, {1, 2}}, Timing: Timing{Threads: 2}})
	if err != nil {
		t.Fatal(err)
	}
	defer tu.Close()
	for range 2 {
		if _, err := tu.Step(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := fmt.Sprint(tu.Best()), fmt.Sprint(sp.Decode(g)); tu.Progress().Best < tu.Progress().Default && got != want {
		t.Errorf("after the default and the seed, best %s, want the seed's %s", got, want)
	}
}
