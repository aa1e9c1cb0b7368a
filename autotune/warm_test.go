package autotune

import (
	"reflect"
	"testing"

	"github.com/neoflow/neoflow/api"
	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/internal/hostbuf"
	"github.com/neoflow/neoflow/internal/testops"
)

func gemmSpec(t *testing.T, m, k, n int64, dt ir.DType) *ir.Spec {
	t.Helper()
	spec, err := testops.Op{Name: "gemm", Src: "C[i,j] += A[i,k] * B[k,j]", Shapes: [][]int64{{m, k}, {k, n}}}.Spec(dt)
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

// One op at two shapes is one family; another dtype, target or op is not.
func TestFamily(t *testing.T) {
	a, b := gemmSpec(t, 64, 64, 64, ir.Float32), gemmSpec(t, 96, 40, 128, ir.Float32)
	if Family(a, "v", "cpu") != Family(b, "v", "cpu") {
		t.Fatal("one op at two shapes: two families")
	}
	for _, other := range []string{Family(gemmSpec(t, 64, 64, 64, ir.Float64), "v", "cpu"), Family(a, "v", "gpu"), Family(a, "w", "cpu")} {
		if other == Family(a, "v", "cpu") {
			t.Fatal("another dtype, target or version shares the family")
		}
	}
	d, ok := ShapeDistance(KeyFor(a, "v", "cpu"), KeyFor(b, "v", "cpu"))
	if !ok || d <= 0 {
		t.Fatalf("distance %v %v", d, ok)
	}
	if d2, _ := ShapeDistance(KeyFor(a, "v", "cpu"), KeyFor(gemmSpec(t, 64, 64, 65, ir.Float32), "v", "cpu")); d2 >= d {
		t.Fatalf("a shape one column away is %v away, a farther one %v", d2, d)
	}
}

// A tuned record's genome projects onto another shape: the tiling keeps
// its loop structure with the split factors nearest the old ones, and the
// kernel computes what the interpreter does.
func TestWarmStartProjectsTheTiling(t *testing.T) {
	old := gemmSpec(t, 64, 64, 64, ir.Float32)
	sp := NewSpace(old)
	g := sp.registerTiled()
	scheds := sp.Decode(g)
	if scheds[0].Tiling == nil {
		t.Fatalf("register-tiled genome decodes to %v", scheds)
	}
	rec := &api.TuneRecord{Schedules: ToProto(scheds), Genome: RecordGenome(g), Trials: 8}
	spec := gemmSpec(t, 96, 64, 80, ir.Float32)
	ng, got, ok := WarmStart(spec, rec, false)
	if !ok || got[0].Tiling == nil {
		t.Fatalf("warm start %v %v", got, ok)
	}
	if !reflect.DeepEqual(got[0].Tiling.Loops, scheds[0].Tiling.Loops) || got[0].Tiling.Vector != scheds[0].Tiling.Vector {
		t.Fatalf("projected tiling %s, from %s", got[0].Tiling, scheds[0].Tiling)
	}
	if !reflect.DeepEqual(NewSpace(spec).Decode(ng), got) {
		t.Fatal("the genome and the schedules disagree")
	}
	checkAgainstInterp(t, testBuilder(t), spec, got, hostbuf.RandomInputs(spec, false, 3), 2)
	// A genome of another layout, or none, is no warm start.
	if _, _, ok := WarmStart(spec, &api.TuneRecord{Schedules: ToProto(scheds), Genome: []int32{1, 2}}, false); ok {
		t.Fatal("a genome of another length projected")
	}
	if _, _, ok := WarmStart(spec, &api.TuneRecord{Schedules: ToProto(scheds)}, false); ok {
		t.Fatal("a record without a genome projected")
	}
}

// On the GPU space a step is re-chosen among the new extent's divisors.
func TestWarmStartGPUSteps(t *testing.T) {
	old := gemmSpec(t, 64, 64, 64, ir.Float32)
	sp := NewGPUSpace(old)
	var g []int
	for _, s := range sp.Seeds() {
		if d := sp.Decode(s)[0]; d.GPU != nil && len(d.GPU.Steps) == 1 && d.GPU.Steps[0].Tile == 16 {
			g = s
			break
		}
	}
	if g == nil {
		t.Skip("no seed with a step of 16")
	}
	rec := &api.TuneRecord{Schedules: ToProto(sp.Decode(g)), Genome: RecordGenome(g)}
	_, got, ok := WarmStart(gemmSpec(t, 64, 48, 64, ir.Float32), rec, true)
	if !ok || got[0].GPU == nil || got[0].GPU.Steps[0].Tile != 16 {
		t.Fatalf("projected %v %v, want a step of 16 (divides 48)", got, ok)
	}
	_, got, _ = WarmStart(gemmSpec(t, 64, 36, 64, ir.Float32), rec, true)
	if got[0].GPU != nil && 36%got[0].GPU.Steps[0].Tile != 0 {
		t.Fatalf("projected step %d does not divide 36", got[0].GPU.Steps[0].Tile)
	}
}
