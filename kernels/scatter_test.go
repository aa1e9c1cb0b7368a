package kernels

import (
	"context"
	"math"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/neoflow/neoflow/core/autodiff"
	"github.com/neoflow/neoflow/core/interp"
	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/loops"
	"github.com/neoflow/neoflow/core/pipeline"
	"github.com/neoflow/neoflow/internal/hostbuf"
	"github.com/neoflow/neoflow/internal/testops"
	"github.com/neoflow/neoflow/kernels/cc"
	"github.com/neoflow/neoflow/kernels/cgen"
)

// scatterOps are indicator statements (the form core/autodiff falls back
// to for index maps it cannot invert) that core/loops lowers as a zero fill
// and a serial scatter. The interpreter evaluates the indicator form
// directly, the gather over every point for every element.
var scatterOps = []testops.Op{
	// Free axes (no equality): looped inside the guard, the second in
	// four parallel blocks of 16 lanes.
	{Name: "sc_free", Src: "d_X[z1, z2] += where(i*j == z1 && z2 < 2, d_Y[i, j], 0.0)",
		Shapes: [][]int64{{4, 3}}, Sizes: map[string]int64{"z1": 9, "z2": 3, "i": 4, "j": 3}},
	{Name: "sc_free_blocks", Src: "Y[v, f] += where(v == e / 2 && f % 3 != 1, X[e, f] * W[e], 0.0)",
		Shapes: [][]int64{{9, 64}, {9}}, Sizes: map[string]int64{"v": 4}},
	{Name: "sc_square", Src: "d_X[z] += where((i*i) % 5 == z, d_Y[i], 0.0)",
		Shapes: [][]int64{{7}}, Sizes: map[string]int64{"z": 5, "i": 7}},
	// i*j reaches 12, beyond z1's 9.
	{Name: "sc_2d", Src: "d_X[z1, z2] += where(i*j == z1 && j == z2, d_Y[i, j] * W[j], 0.0)",
		Shapes: [][]int64{{5, 4}, {4}}, Sizes: map[string]int64{"z1": 9, "z2": 4, "i": 5, "j": 4}},
	// Guards before and after the equality, one reading a tensor.
	{Name: "sc_guard", Src: "d_X[z] += where(i % 3 != 1 && (i*i) % 5 == z && d_Y[i] > 0.0, d_Y[i] * 2.0, 0.0)",
		Shapes: [][]int64{{11}}, Sizes: map[string]int64{"z": 5, "i": 11}},
	// Targets out of range on both sides for most points: skipped, not
	// written out of bounds.
	{Name: "sc_out_of_range", Src: "d_X[z] += where(i*i - 4 == z, d_Y[i], 0.0)",
		Shapes: [][]int64{{7}}, Sizes: map[string]int64{"z": 5, "i": 7}},
	{Name: "sc_out_of_range_2d", Src: "d_X[z1, z2] += where(i - 2 == z1 && i*j - 3 == z2, d_Y[i, j], 0.0)",
		Shapes: [][]int64{{6, 4}}, Sizes: map[string]int64{"z1": 3, "z2": 4, "i": 6, "j": 4}},
	// min in an index, a guard nested in the body, and the never-taken
	// reads autodiff adds.
	{Name: "sc_min", Src: "d_X[z] += where(0 > 1, X[0], where(min(i, 4) == z, where(i > 2, d_Y[i], 0.0), 0.0))",
		Shapes: [][]int64{{5}, {9}}, Sizes: map[string]int64{"z": 5, "i": 9}},
	{Name: "sc_anchor", Src: "d_X[x0, j_1] += where(i * j == x0 && j == j_1, d_Y[i] * W[i], 0.0) + where(j < 0, X[j, 0], 0.0)",
		Shapes: [][]int64{{3}, {3}, {12, 4}}, Sizes: map[string]int64{"x0": 12, "j_1": 4, "i": 3, "j": 4}},
	// Several points on one element, several reduction variables.
	{Name: "sc_collide", Src: "d_X[z] += where((i*j + k) % 3 == z, d_Y[i, j] * V[k], 0)",
		Shapes: [][]int64{{6, 5}, {4}}, Sizes: map[string]int64{"z": 3, "i": 6, "j": 5, "k": 4}},
}

func TestScatterConformance(t *testing.T) {
	for _, o := range scatterOps {
		for _, dt := range []ir.DType{ir.Float32, ir.Float64} {
			t.Run(o.Name+"_"+dt.String(), func(t *testing.T) {
				spec, err := o.Spec(dt)
				if err != nil {
					t.Fatal(err)
				}
				requireScatter(t, spec, 0)
				in := hostbuf.RandomInputs(spec, false, 3)
				run(t, spec, in, 2, tolerance(dt))
				runPadded(t, spec, in)
			})
		}
	}
}

// TestScatterLookalikes runs statements that look like a scatter but are
// not (a target variable in the body, a free one in a target): they keep
// the gather.
func TestScatterLookalikes(t *testing.T) {
	for _, o := range []testops.Op{
		{Name: "la_body", Src: "d_X[z] += where((i*i) % 5 == z, d_Y[i] * z, 0.0)",
			Shapes: [][]int64{{7}}, Sizes: map[string]int64{"z": 5, "i": 7}},
		{Name: "la_free_in_target", Src: "d_X[z1, z2] += where(i + z2 == z1, d_Y[i, z2], 0.0)",
			Shapes: [][]int64{{4, 3}}, Sizes: map[string]int64{"z1": 9}},
	} {
		spec, err := o.Spec(ir.Float64)
		if err != nil {
			t.Fatal(err)
		}
		fn, err := pipeline.Lower(spec, nil)
		if err != nil {
			t.Fatal(err)
		}
		if fn.Nests[0].Schedule.Scatter {
			t.Errorf("%s lowered as a scatter:\n%s", o.Name, loops.Dump(fn))
		}
		run(t, spec, hostbuf.RandomInputs(spec, false, 4), 2, tolerance(ir.Float64))
	}
}

// TestScatterGradients differentiates forward ops whose index maps
// autodiff cannot invert and checks that every indicator statement of the
// gradient op lowers as a scatter and that the kernel matches the
// interpreter.
func TestScatterGradients(t *testing.T) {
	for _, o := range []testops.Op{
		{Name: "g_square", Src: "Y[i] += X[(i*i) % 5] * W[i]", Shapes: [][]int64{{5}, {6}}},
		{Name: "g_product", Src: "Y[i, j] = X[i*j] * W[i, j]", Shapes: [][]int64{{7}, {3, 3}}},
		{Name: "g_only", Src: "Y[i] = X[(i*i) % 5]", Shapes: [][]int64{{5}}, Sizes: map[string]int64{"i": 7}},
		{Name: "g_guard_var", Src: "Y[i] += X[i*j, j] * W[i]", Shapes: [][]int64{{12, 4}, {3}}, Sizes: map[string]int64{"i": 3, "j": 4}},
		{Name: "g_max", Src: "Y[i] max= X[(i*j) % 5]", Shapes: [][]int64{{5}}, Sizes: map[string]int64{"i": 3, "j": 4}},
		{Name: "g_min_index", Src: "Y[i] = where(i > 2, X[min(i, 4)], 0.0)", Shapes: [][]int64{{5}}, Sizes: map[string]int64{"i": 7}},
	} {
		for _, dt := range []ir.DType{ir.Float32, ir.Float64} {
			t.Run(o.Name+"_"+dt.String(), func(t *testing.T) {
				spec, g, err := o.GradSpec(dt)
				if err != nil {
					t.Fatal(err)
				}
				explain := autodiff.Explain(g)
				n := 0
				for i, st := range g.Op.Stmts {
					if strings.Contains(noteOf(explain, st), "indicator fallback") {
						requireScatter(t, spec, i)
						n++
					}
				}
				if n == 0 {
					t.Fatalf("no indicator statement:\n%s", explain)
				}
				in := hostbuf.RandomInputs(spec, false, 5)
				run(t, spec, in, 2, tolerance(dt))
				runPadded(t, spec, in)
			})
		}
	}
}

// noteOf is the Explain note of statement st.
func noteOf(explain string, st *ir.Stmt) string {
	prefix := ir.StmtString(st) + "  # "
	for _, line := range strings.Split(explain, "\n") {
		if strings.HasPrefix(line, prefix) {
			return line[len(prefix):]
		}
	}
	return ""
}

func requireScatter(t *testing.T, spec *ir.Spec, i int) {
	t.Helper()
	fn, err := pipeline.Lower(spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !fn.Nests[i].Schedule.Scatter {
		t.Fatalf("statement %d is not lowered as a scatter:\n%s", i, loops.Dump(fn))
	}
}

// runPadded launches spec's kernel with every written tensor between two
// guard zones and checks that no guard was written: a target out of
// range must be skipped.
func runPadded(t *testing.T, spec *ir.Spec, inputs [][]float64) {
	t.Helper()
	const pad, sentinel = 64, 12345.0
	k, err := testBuilder(t).Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	bufs := hostbuf.New(spec, inputs)
	defer bufs.Free()
	type zone struct {
		f32 []float32
		f64 []float64
	}
	zones := map[int]zone{}
	for i, td := range spec.Tensors {
		if td.Role == ir.RoleInput {
			continue
		}
		n := int(max(td.Elems(), 1))
		var z zone
		var p unsafe.Pointer
		if spec.DType == ir.Float32 {
			z.f32 = make([]float32, n+2*pad)
			for j := range z.f32 {
				z.f32[j] = sentinel
			}
			p = unsafe.Pointer(&z.f32[pad])
		} else {
			z.f64 = make([]float64, n+2*pad)
			for j := range z.f64 {
				z.f64[j] = sentinel
			}
			p = unsafe.Pointer(&z.f64[pad])
		}
		bufs.Pin.Pin(p)
		bufs.Ptr[i] = p
		zones[i] = z
	}
	if err := k.Launch(bufs.Ptr, 2); err != nil {
		t.Fatal(err)
	}
	for i, z := range zones {
		n := int(max(spec.Tensors[i].Elems(), 1))
		for j := 0; j < n+2*pad; j++ {
			if j >= pad && j < pad+n {
				continue
			}
			var v float64
			if z.f32 != nil {
				v = float64(z.f32[j])
			} else {
				v = z.f64[j]
			}
			if v != sentinel {
				t.Errorf("%s: element %d outside the tensor written (%v)", spec.Tensors[i].Name, j-pad, v)
			}
		}
	}
}

// buildWith compiles spec lowered with sched, outside the cache.
func buildWith(t *testing.T, spec *ir.Spec, sched func(*ir.Spec, int) loops.Schedule, symbol string) *cc.Kernel {
	t.Helper()
	fn, err := pipeline.Lower(spec, sched)
	if err != nil {
		t.Fatal(err)
	}
	src, err := cgen.Render(fn, symbol)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), symbol+".so")
	if err := (cc.Compiler{}).Compile(context.Background(), src, out); err != nil {
		t.Fatal(err)
	}
	lib, err := cc.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	k, err := lib.Kernel(symbol, len(spec.Tensors))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestScatterSpeedup runs the scatter lowering of an indicator statement
// (X: [512], i < 4096) and its gather lowering, which evaluates 512 * 4096
// points, checks both against the interpreter and logs their times (the
// scatter wins by far more than 20x; go test -v shows it). Times are not
// asserted: a busy machine would fail them.
func TestScatterSpeedup(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	saved := loops.MinParallelWork
	loops.MinParallelWork = 1 << 15 // the production threshold
	defer func() { loops.MinParallelWork = saved }()
	ops := []testops.Op{
		{Name: "square", Src: "d_X[z] += where((i*i) % 512 == z, d_Y[i], 0.0)",
			Shapes: [][]int64{{4096}}, Sizes: map[string]int64{"z": 512, "i": 4096}},
		// Targets beyond 512: the scatter checks the range.
		{Name: "checked", Src: "d_X[z] += where((i*i + 3*i) % 521 == z, d_Y[i], 0.0)",
			Shapes: [][]int64{{4096}}, Sizes: map[string]int64{"z": 512, "i": 4096}},
	}
	for _, o := range ops {
		for _, dt := range []ir.DType{ir.Float32, ir.Float64} {
			speedup(t, o, dt)
		}
	}
}

func speedup(t *testing.T, o testops.Op, dt ir.DType) {
	t.Helper()
	spec, err := o.Spec(dt)
	if err != nil {
		t.Fatal(err)
	}
	requireScatter(t, spec, 0)
	scatter := buildWith(t, spec, loops.DefaultSchedule, "nf_scatter_"+o.Name+"_"+dt.String())
	gather := buildWith(t, spec, loops.GatherSchedule, "nf_gather_"+o.Name+"_"+dt.String())
	in := hostbuf.RandomInputs(spec, false, 9)
	want, err := interp.Run(spec, in)
	if err != nil {
		t.Fatal(err)
	}
	for _, nt := range []int{1, runtime.NumCPU()} {
		var best [2]time.Duration
		for ki, k := range []*cc.Kernel{scatter, gather} {
			bufs := hostbuf.New(spec, in)
			best[ki] = timeKernel(t, k, bufs.Ptr, nt)
			got := bufs.Get(1)
			for j := range want[1] {
				if !same(got[j], want[1][j], tolerance(dt)) {
					t.Fatalf("%s kernel %d: d_X[%d] = %v, interpreter says %v", dt, ki, j, got[j], want[1][j])
				}
			}
			bufs.Free()
		}
		ratio := float64(best[1]) / float64(best[0])
		t.Logf("%s %s, %d threads: scatter %v, gather %v: %.0fx", o.Name, dt, nt, best[0], best[1], ratio)
	}
}

// timeKernel is the best time of one launch over several batches.
func timeKernel(t *testing.T, k *cc.Kernel, bufs []unsafe.Pointer, nthreads int) time.Duration {
	t.Helper()
	best := time.Duration(math.MaxInt64)
	for range 5 {
		n := 0
		start := time.Now()
		for time.Since(start) < 20*time.Millisecond || n == 0 {
			if err := k.Launch(bufs, nthreads); err != nil {
				t.Fatal(err)
			}
			n++
		}
		best = min(best, time.Since(start)/time.Duration(n))
	}
	return best
}
