package kernels

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/neoflow/neoflow/core/fuse"
	"github.com/neoflow/neoflow/core/interp"
	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/loops"
	"github.com/neoflow/neoflow/core/pipeline"
	"github.com/neoflow/neoflow/internal/hostbuf"
	"github.com/neoflow/neoflow/internal/testops"
)

// TestConformance runs every op of the one table (internal/testops), its
// gradient op and its tangent op (forward mode) as C kernels against the reference interpreter, in
// float32 and float64, unfused and fused (core/fuse). (The CUDA emulator runs the same table in
// cuda_emu_test.go; pytest checks every op against PyTorch with
// gradcheck.)
func TestConformance(t *testing.T) {
	for _, o := range testops.All {
		for _, dt := range []ir.DType{ir.Float32, ir.Float64} {
			t.Run(o.Name+"_"+dt.String(), func(t *testing.T) {
				spec, err := o.Spec(dt)
				if err != nil {
					t.Fatal(err)
				}
				run(t, spec, hostbuf.RandomInputs(spec, o.Positive, 1), 3, tolerance(dt))
				runFused(t, spec, hostbuf.RandomInputs(spec, o.Positive, 1), tolerance(dt))
				g, _, err := o.GradSpec(dt)
				if err != nil {
					t.Fatal(err)
				}
				run(t, g, hostbuf.RandomInputs(g, o.Positive, 2), 3, tolerance(dt))
				runFused(t, g, hostbuf.RandomInputs(g, o.Positive, 2), tolerance(dt))
				tg, _, err := o.TangentSpec(dt)
				if err != nil {
					t.Fatal(err)
				}
				run(t, tg, hostbuf.RandomInputs(tg, o.Positive, 3), 3, tolerance(dt))
				runFused(t, tg, hostbuf.RandomInputs(tg, o.Positive, 3), tolerance(dt))
			})
		}
	}
}

// runFused fuses spec (every fusion pass, no temporary kept, splitting
// wherever it can so that small shapes exercise it) and, when
// that changes it, runs the fused kernel against the interpreter and
// checks that the fused op's outputs are the unfused op's.
func runFused(t *testing.T, spec *ir.Spec, inputs [][]float64, tol float64) {
	t.Helper()
	f, err := pipeline.Fuse(spec, fuse.Options{SplitAlways: true})
	if err != nil {
		t.Fatalf("fusion: %v", err)
	}
	if f == spec {
		return
	}
	run(t, f, inputs, 3, tol)
	want, err := interp.Run(spec, inputs)
	if err != nil {
		t.Fatal(err)
	}
	got, err := interp.Run(f, inputs)
	if err != nil {
		t.Fatalf("fused op in the interpreter: %v\n%s", err, ir.PrintSpec(f))
	}
	for i, td := range spec.Tensors {
		if td.Role != ir.RoleOutput {
			continue
		}
		for k, fd := range f.Tensors {
			if fd.Name != td.Name {
				continue
			}
			for j := range want[i] {
				if !same(got[k][j], want[i][j], tol) {
					t.Fatalf("fused %s[%d] = %v, unfused %v\n%s", td.Name, j, got[k][j], want[i][j], ir.PrintSpec(f))
				}
			}
		}
	}
}

// TestThreadCountInvariant checks that results do not depend on the
// number of threads (every element is computed by one thread in a fixed
// order).
func TestThreadCountInvariant(t *testing.T) {
	o, _ := testops.Lookup("conv_pad")
	spec, err := o.Spec(ir.Float32)
	if err != nil {
		t.Fatal(err)
	}
	in := hostbuf.RandomInputs(spec, false, 2)
	a := run(t, spec, in, 1, 1e-4)
	b := run(t, spec, in, 4, 1e-4)
	for i := range a.F32 {
		for j := range a.F32[i] {
			if math.Float32bits(a.F32[i][j]) != math.Float32bits(b.F32[i][j]) {
				t.Fatalf("tensor %d element %d: %v with 1 thread, %v with 4", i, j, a.F32[i][j], b.F32[i][j])
			}
		}
	}
}

// TestSpecialValues compares NaN, infinities and signed zeros exactly:
// min, max, relu and max=/min= follow the rule of core/ir,
// max(a, b) = a > b || a != a ? a : b (NaN propagates, also against an
// infinity; of equal operands the second wins).
func TestSpecialValues(t *testing.T) {
	specials := []float64{math.NaN(), math.Inf(1), math.Inf(-1), 0, math.Copysign(0, -1), 1, -1, 0.5}
	n := int64(len(specials))
	var x, y []float64
	for _, a := range specials {
		for _, b := range specials {
			x, y = append(x, a), append(y, b)
		}
	}
	ops := []testops.Op{
		{Name: "minmax", Src: "Y[i] = max(X[i], Z[i])\nW[i] = min(X[i], Z[i])\nR[i] = relu(X[i])\nA[i] = abs(X[i])",
			Shapes: [][]int64{{n * n}, {n * n}}},
		{Name: "reduce_special", Src: "M[i] max= X[i, j]\nN[i] min= X[i, j]\nS[i] += X[i, j]\nP[i] *= X[i, j]",
			Shapes: [][]int64{{n, 2 * n}}},
	}
	// Rows of 21 special values: lane-parallel reductions over j (16 or
	// 8 lanes and a remainder of 5). A row holds one sign of zero only:
	// with both, the sign of a zero max or min depends on the order of
	// the fold, which that schedule changes.
	pools := [][]float64{
		{math.NaN(), math.Inf(1), math.Inf(-1), 0, 1, -1, 0.5},
		{math.Inf(1), math.Copysign(0, -1), 1, -1, 0.5},
		{0, 1, -1, 0.5, 2},
		{math.Inf(-1), math.Copysign(0, -1), -1, 0.5},
	}
	var rows []float64
	for r := range 16 {
		pool := pools[r%len(pools)]
		for j := range 21 {
			rows = append(rows, pool[(r*5+j*3+j*j)%len(pool)])
		}
	}
	ops = append(ops, testops.Op{Name: "reduce_special_lanes", Src: "M[i] max= X[i, j]\nN[i] min= X[i, j]\nS[i] += X[i, j]\nP[i] *= X[i, j]",
		Shapes: [][]int64{{16, 21}}})
	// A where blended in a lane loop (kernels/cgen/blend.go): the lanes
	// that do not take a branch must not leak its NaN, infinity or the
	// sign of its zero.
	ops = append(ops, testops.Op{Name: "blend_special", Src: "Y[i] = where(i >= 3, X[i - 3] * Z[i], Z[i] * -0.0)",
		Shapes: [][]int64{{n * n}, {n * n}}, Sizes: map[string]int64{"i": n * n}})
	// A where whose condition reads a tensor in bounds (a ReLU's mask in
	// its gradient) blends too; the branch not taken divides by a special
	// value and must not leak.
	ops = append(ops, testops.Op{Name: "blend_tensor_cond", Src: "Y[i] = where(X[i] != 0.0, X[i] * Z[i], Z[i] / X[i])",
		Shapes: [][]int64{{n * n}, {n * n}}, Sizes: map[string]int64{"i": n * n}})
	inputs := [][][]float64{{x, y}, {append(append([]float64(nil), x...), y...)}, {rows}, {x, y}, {x, y}}
	for i, o := range ops {
		for _, dt := range []ir.DType{ir.Float32, ir.Float64} {
			t.Run(o.Name+"_"+dt.String(), func(t *testing.T) {
				spec, err := o.Spec(dt)
				if err != nil {
					t.Fatal(err)
				}
				k, err := testBuilder(t).Build(spec)
				if err != nil {
					t.Fatal(err)
				}
				if strings.HasPrefix(o.Name, "blend_") && !strings.Contains(k.Source(), "nf_blend(") {
					t.Fatalf("the where is not blended:\n%s", k.Source())
				}
				want, err := interp.Run(spec, inputs[i])
				if err != nil {
					t.Fatal(err)
				}
				bufs := hostbuf.New(spec, inputs[i])
				defer bufs.Free()
				if err := k.Launch(bufs.Ptr, 2); err != nil {
					t.Fatal(err)
				}
				for ti, td := range spec.Tensors {
					if td.Role == ir.RoleInput {
						continue
					}
					got := bufs.Get(ti)
					for j := range want[ti] {
						g, w := got[j], want[ti][j]
						ok := math.IsNaN(g) && math.IsNaN(w) || g == w && math.Signbit(g) == math.Signbit(w)
						if !ok {
							t.Errorf("%s[%d] = %v, interpreter says %v", td.Name, j, g, w)
						}
					}
				}
			})
		}
	}
}

// TestGuardIsLazy reads far out of bounds in the branch that is not
// taken: an eager evaluation would fault.
func TestGuardIsLazy(t *testing.T) {
	o := testops.Op{Name: "guard_far", Src: "Y[i] = where(i < 1, X[i * 100000000], -1.0)",
		Shapes: [][]int64{{1}}, Sizes: map[string]int64{"i": 64}}
	for _, dt := range []ir.DType{ir.Float32, ir.Float64} {
		spec, err := o.Spec(dt)
		if err != nil {
			t.Fatalf("sema cannot prove the guarded access: %v", err)
		}
		run(t, spec, [][]float64{{3}}, 2, tolerance(dt))
	}
}

// TestShapeSweep runs matmul and a row reduction over shapes around the
// vector width: remainders of every kind, extents of 1, scalar outputs.
func TestShapeSweep(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	for _, dt := range []ir.DType{ir.Float32, ir.Float64} {
		for _, mn := range [][2]int64{{1, 1}, {1, 9}, {3, 1}, {2, 8}, {5, 15}, {4, 16}, {3, 17}, {2, 33}, {70, 2}} {
			m, n := mn[0], mn[1]
			for _, o := range []testops.Op{
				{Name: "mm", Src: "C[i, j] += A[i, k] * B[k, j]", Shapes: [][]int64{{m, 3}, {3, n}}},
				{Name: "rowmax", Src: "Y[i] max= X[i, j]\nZ[j] min= X[i, j] * 2.0", Shapes: [][]int64{{m, n}}},
				// Lanes over the reduction axis k once n reaches the
				// vector width.
				{Name: "mmT", Src: "C[i, j] += A[i, k] * B[j, k]", Shapes: [][]int64{{m, n}, {3, n}}},
				// At 70x2 the lanes go over i, which becomes the innermost
				// loop (the store is strided by 2, both reads contiguous).
				{Name: "tr", Src: "Y[i, j] = X[j, i] + Z[j, i]", Shapes: [][]int64{{n, m}, {n, m}}},
				{Name: "ew", Src: "Y[i, j] = X[i, j] * 2.0 + 1.0", Shapes: [][]int64{{m, n}}},
			} {
				spec, err := o.Spec(dt)
				if err != nil {
					t.Fatal(err)
				}
				t.Run(fmt.Sprintf("%s_%s_%dx%d", o.Name, dt, m, n), func(t *testing.T) {
					run(t, spec, hostbuf.RandomInputs(spec, false, uint64(m*100+n)), 2, tolerance(dt))
				})
			}
		}
	}
}

// TestConformance16 runs every op of the table and its gradient op as C
// kernels in float16 and bfloat16 (loaded into float32, computed and
// accumulated there, rounded once per stored element) against the
// interpreter, unfused and fused, with the bit-rounding check of the CUDA
// emulator's 16-bit runs.
func TestConformance16(t *testing.T) {
	for _, o := range testops.All {
		for _, dt := range []ir.DType{ir.Float16, ir.BFloat16} {
			t.Run(o.Name+"_"+dt.String(), func(t *testing.T) {
				spec, err := o.Spec(dt)
				if err != nil {
					t.Fatal(err)
				}
				g, _, err := o.GradSpec(dt)
				if err != nil {
					t.Fatal(err)
				}
				for i, s := range []*ir.Spec{spec, g} {
					inputs := hostbuf.RandomInputs(s, o.Positive, uint64(i+1))
					bufs := run(t, s, inputs, 3, tolerance(dt))
					want, err := interp.Run(s, inputs)
					if err != nil {
						t.Fatal(err)
					}
					if !scatters(s, nil, loops.DefaultSchedule) {
						roundsLikeTheInterpreter(t, s, bufs, want)
					}
					runFused(t, s, inputs, tolerance(dt))
				}
			})
		}
	}
}
