package kernels

import (
	"fmt"
	"strings"
	"testing"

	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/loops"
	"github.com/neoflow/neoflow/core/parse"
	"github.com/neoflow/neoflow/core/sema"
	"github.com/neoflow/neoflow/internal/hostbuf"
)

// groupSpec is a weight's and an input's gradient contraction (they
// share d_G and the axes b, g, j) and two elementwise statements, the
// second reading the first where it stores it, joined into two groups.
func groupSpec(t *testing.T, dt ir.DType) *ir.Spec {
	t.Helper()
	return groupSpecSized(t, dt, [][]int64{{6, 40}, {6, 64}, {40, 64}})
}

// groupSpecSized is groupSpec for d_G, H and W of these shapes.
func groupSpecSized(t *testing.T, dt ir.DType, shapes [][]int64) *ir.Spec {
	t.Helper()
	src := "d_W[g,j] += d_G[b,g] * H[b,j]\nd_H[b,j] += d_G[b,g] * W[g,j]\nE[b,j] = H[b,j] * 2.0 + 1.0\nF[b,j] = tanh(E[b,j]) * H[b,j]"
	op, err := parse.Parse(src, parse.Options{Name: "grp", Inputs: []string{"d_G", "H", "W"}, Outputs: []string{"d_W", "d_H", "F"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := sema.Check(op); err != nil {
		t.Fatal(err)
	}
	spec, err := sema.Specialize(op, dt, shapes, nil)
	if err != nil {
		t.Fatal(err)
	}
	spec.Stmts[1].Joined, spec.Stmts[3].Joined = true, true
	return spec
}

// TestGroupedNests runs fused groups under their default tiling and
// under tilings that place the accumulators elsewhere (none: an identity
// fill and combining into the output; partial: outside a reduction loop)
// against the interpreter, on 1 and 3 threads: one nest per group.
func TestGroupedNests(t *testing.T) {
	b := testBuilder(t)
	for _, dt := range []ir.DType{ir.Float32, ir.Float64} {
		spec := groupSpec(t, dt)
		members := func(i int) []*ir.BoundStmt { return []*ir.BoundStmt{spec.Stmts[i], spec.Stmts[i+1]} }
		def := loops.DefaultGroupTiling(spec, members(0))
		if def == nil {
			t.Fatal("no default tiling for the contraction group")
		}
		ew := loops.DefaultGroupTiling(spec, members(2))
		if ew == nil {
			t.Fatal("no default tiling for the elementwise group")
		}
		n := len(def.Loops)
		variants := map[string]*loops.GroupTiling{
			"default": def,
			"direct":  {Splits: def.Splits, Loops: def.Loops, Parallel: def.Parallel, Vector: true, AccAt: []int{n, n}},
			"partial": {Splits: def.Splits, Loops: def.Loops, Parallel: def.Parallel, Vector: true, AccAt: []int{n - 2, n - 2}},
			"serial":  {Splits: def.Splits, Loops: def.Loops, AccAt: def.AccAt},
		}
		for name, g := range variants {
			t.Run(fmt.Sprintf("%s_%s", dt, name), func(t *testing.T) {
				scheds := []loops.Schedule{{Group: g}, loops.DefaultSchedule(spec, 1), {Group: ew}, loops.DefaultSchedule(spec, 3)}
				runScheduled(t, b, spec, scheds, 7)
			})
		}
	}
}

// TestGroupTilingRefused: a tiling that would race or does not fit the
// members is a lowering error, not a kernel.
func TestGroupTilingRefused(t *testing.T) {
	spec := groupSpec(t, ir.Float32)
	def := loops.DefaultGroupTiling(spec, []*ir.BoundStmt{spec.Stmts[0], spec.Stmts[1]})
	n := len(def.Loops)
	bad := map[string]*loops.GroupTiling{
		// g is d_H's reduction axis: threads would add into one d_H element.
		"parallel reduction": {Loops: []string{"g", "b", "j"}, Parallel: 1, AccAt: []int{3, 3}},
		// b is d_W's reduction axis: lanes would add into one d_W element.
		"reduction lanes":   {Loops: []string{"j", "g", "b"}, Vector: true, AccAt: []int{3, 3}},
		"acc in parallel":   {Splits: def.Splits, Loops: def.Loops, Parallel: 1, AccAt: []int{0, n}},
		"acc count":         {Splits: def.Splits, Loops: def.Loops, AccAt: []int{n}},
		"not a permutation": {Loops: []string{"j", "g"}, AccAt: []int{2, 2}},
	}
	for name, g := range bad {
		scheds := []loops.Schedule{{Group: g}, {}, {}, {}}
		if _, err := ScheduledSource(spec, scheds); err == nil {
			t.Errorf("%s: tiling %s lowered", name, g)
		}
	}
	// Members with different axes are no group.
	spec.Stmts[2].Joined = false
	spec.Stmts[2].Joined, spec.Stmts[1].Joined = true, false
	if _, err := loops.LowerGroup(spec, []int{1, 2}, loops.Schedule{Group: def}); err == nil {
		t.Error("a group of statements over different axes lowered")
	}
}

// TestGroupedKernelCUDAEmulated: under the GPU defaults the elementwise
// group is one grid-stride kernel computing both members per point, and
// the contraction group runs member by member; both compute what the
// interpreter does (the CUDA emulator, every dtype).
func TestGroupedKernelCUDAEmulated(t *testing.T) {
	for _, dt := range []ir.DType{ir.Float32, ir.Float64, ir.Float16, ir.BFloat16} {
		spec := groupSpec(t, dt)
		if s := loops.GPUSchedule(spec, 2); s.Group == nil {
			t.Fatalf("the elementwise group has no GPU group schedule: %s", s)
		}
		if s := loops.GPUSchedule(spec, 0); s.Group != nil {
			t.Fatalf("the contraction group got a GPU group schedule: %s", s)
		}
		mod, err := CUDASource(spec, nil, "nf_test")
		if err != nil {
			t.Fatal(err)
		}
		var nests []int
		for _, l := range mod.Launches {
			nests = append(nests, l.Nest)
		}
		if want := []int{0, 1, 2}; fmt.Sprint(nests) != fmt.Sprint(want) {
			t.Errorf("%s: kernels for statements %v, want %v (E and F in one)", dt, nests, want)
		}
		runCUDAEmulated(t, spec, nil, hostbuf.RandomInputs(spec, false, 3), tolerance(dt))
	}
}

// TestHorizontalKernelCUDAEmulated: where both contractions of the
// weight's and the input's gradient get a GPU tiling of the same block
// size, the group is one kernel, its grid the two members' grids side by
// side (horizontal fusion); the elementwise group is another. In 16 bits
// each contraction is a Tensor Core kernel of its own. Every dtype against
// the interpreter on the CUDA emulator.
func TestHorizontalKernelCUDAEmulated(t *testing.T) {
	for _, dt := range []ir.DType{ir.Float32, ir.Float64, ir.Float16, ir.BFloat16} {
		spec := groupSpecSized(t, dt, [][]int64{{16, 96}, {16, 64}, {96, 64}})
		mod, err := CUDASource(spec, nil, "nf_test")
		if err != nil {
			t.Fatal(err)
		}
		var nests []int
		for _, l := range mod.Launches {
			nests = append(nests, l.Nest)
		}
		if dt.Half() {
			if want := []int{0, 1, 2}; fmt.Sprint(nests) != fmt.Sprint(want) || strings.Count(mod.Source, "nf_mma(nf_acc") != 2 {
				t.Fatalf("%s: kernels for statements %v, want %v, both contractions on Tensor Cores\n%s", dt, nests, want, mod.Source)
			}
			runCUDAEmulated(t, spec, nil, hostbuf.RandomInputs(spec, false, 4), tolerance(dt))
			continue
		}
		if want := []int{0, 2}; fmt.Sprint(nests) != fmt.Sprint(want) {
			t.Fatalf("%s: kernels for statements %v, want %v (d_W and d_H in one, E and F in one)\n%s", dt, nests, want, mod.Source)
		}
		if !strings.Contains(mod.Source, "} else if (blockIdx.x < ") {
			t.Errorf("%s: the group's kernel does not split its grid between the members\n%s", dt, mod.Source)
		}
		runCUDAEmulated(t, spec, nil, hostbuf.RandomInputs(spec, false, 4), tolerance(dt))
	}
	// A member that reads what another writes cannot run beside it (no
	// barrier spans the grid): two kernels.
	src := "A[i,j] += X[i,k] * Y[k,j]\nB[i,j] += X[i,k] * A[k,j]"
	op, err := parse.Parse(src, parse.Options{Name: "dep", Inputs: []string{"X", "Y"}, Outputs: []string{"B"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := sema.Check(op); err != nil {
		t.Fatal(err)
	}
	spec, err := sema.Specialize(op, ir.Float32, [][]int64{{64, 64}, {64, 64}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	spec.Stmts[1].Joined = true
	mod, err := CUDASource(spec, nil, "nf_test")
	if err != nil {
		t.Fatal(err)
	}
	if len(mod.Launches) != 2 {
		t.Errorf("dependent members: %d launches, want 2", len(mod.Launches))
	}
	runCUDAEmulated(t, spec, nil, hostbuf.RandomInputs(spec, false, 5), tolerance(ir.Float32))
}
