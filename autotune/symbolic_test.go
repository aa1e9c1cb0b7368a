package autotune

import (
	"context"
	"math"
	"slices"
	"testing"

	"github.com/neoflow/neoflow/core/bounds"
	"github.com/neoflow/neoflow/core/interp"
	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/loops"
	"github.com/neoflow/neoflow/core/pipeline"
	"github.com/neoflow/neoflow/internal/hostbuf"
	"github.com/neoflow/neoflow/internal/testops"
	"github.com/neoflow/neoflow/kernels"
)

// A size's bucket is the least power of two at least it.
func TestBucket(t *testing.T) {
	for v, want := range map[int64]int64{1: 1, 2: 2, 3: 4, 4: 4, 5: 8, 31: 32, 32: 32, 33: 64, 1000: 1024, bounds.MaxSize: bounds.MaxSize} {
		if got := Bucket(v); got != want {
			t.Errorf("Bucket(%d) = %d, want %d", v, got, want)
		}
	}
}

// A bucket's key differs from the static kernel's at the same shapes,
// and with the dimensions that are sizes.
func TestBucketKey(t *testing.T) {
	spec := tunerSpec(t)
	static := Key(spec, "v")
	rows := BucketKey(spec, [][]string{{"s0", ""}, {"", ""}, {"s0", ""}}, "v")
	cols := BucketKey(spec, [][]string{{"", ""}, {"", "s0"}, {"", "s0"}}, "v")
	if rows.Kernel == static.Kernel || rows.Kernel == cols.Kernel {
		t.Fatalf("keys: static %s, rows %s, columns %s", static.Kernel, rows.Kernel, cols.Kernel)
	}
	if again := BucketKey(spec, [][]string{{"s0", ""}, {"", ""}, {"s0", ""}}, "v"); again.Kernel != rows.Kernel {
		t.Fatal("a bucket's key is not deterministic")
	}
}

// symbolicOps are ops whose first input's first dimension is the size s0.
var symbolicOps = []struct {
	name, src string
	shapes    func(n int64) [][]int64
}{
	{"linear", "Y[n, j] += X[n, k] * W[j, k]", func(n int64) [][]int64 { return [][]int64{{n, 48}, {32, 48}} }},
	{"rows_out", "Y[n, j] += X[n, k] * W[k, j]", func(n int64) [][]int64 { return [][]int64{{n, 40}, {40, 64}} }},
	{"batched", "Y[b, i, j] += A[b, i, k] * B[b, k, j]", func(n int64) [][]int64 { return [][]int64{{n, 8, 16}, {n, 16, 32}} }},
	{"norm", "S[n] += X[n, j] * X[n, j]\nY[n, j] = X[n, j] / (S[n] + 1.0)", func(n int64) [][]int64 { return [][]int64{{n, 64}} }},
}

// Every candidate a size bucket's kernel is picked among
// (SymbolicCandidates: the variants of the defaults, and the per-shape
// candidates' register tiles split over the size, whose remainder runs at
// every size) lowers for every size and computes each op as the
// interpreter does at sizes below, between and above the tile factors.
// Some ops get a tiled candidate.
func TestSymbolicCandidatesCompute(t *testing.T) {
	b := testBuilder(t)
	tiled := 0
	for _, o := range symbolicOps {
		t.Run(o.name, func(t *testing.T) {
			at := func(v map[string]int64) (*ir.Spec, error) {
				return testops.Op{Name: o.name, Src: o.src, Shapes: o.shapes(v["s0"])}.Spec(ir.Float32)
			}
			plan, err := pipeline.PrepareSymbolic(at, []loops.Size{{Name: "s0", A: 10, B: 12}}, pipeline.CPU)
			if err != nil {
				t.Fatal(err)
			}
			bucket, err := at(map[string]int64{"s0": 64})
			if err != nil {
				t.Fatal(err)
			}
			for i, scheds := range SymbolicCandidates(plan, bucket) {
				fn, err := plan.Lower(scheds)
				if err != nil {
					if i == 0 {
						t.Fatal(err)
					}
					t.Logf("candidate %d does not lower: %v", i, err)
					continue
				}
				for _, s := range scheds {
					if s.Tiling != nil && slices.ContainsFunc(s.Tiling.Splits, func(sp loops.Split) bool { return sp.Size != "" }) {
						tiled++
						break
					}
				}
				k, err := b.BuildFunc(context.Background(), fn)
				if err != nil {
					t.Fatalf("candidate %d: %v", i, err)
				}
				for _, n := range []int64{1, 3, 8, 17, 33} {
					spec, err := at(map[string]int64{"s0": n})
					if err != nil {
						t.Fatal(err)
					}
					checkSized(t, k, spec, n)
				}
				_ = k.Close()
			}
		})
	}
	if tiled == 0 {
		t.Error("no candidate split a loop over the size")
	}
}

// checkSized launches k at size n on random inputs, on 1 and 3 threads,
// and compares every output with the interpreter's run of spec (the op at
// n).
func checkSized(t *testing.T, k *kernels.Kernel, spec *ir.Spec, n int64) {
	t.Helper()
	inputs := hostbuf.RandomInputs(spec, false, uint64(n))
	want, err := interp.Run(spec, inputs)
	if err != nil {
		t.Fatal(err)
	}
	for _, threads := range []int{1, 3} {
		bufs := hostbuf.New(spec, inputs)
		if err := k.LaunchSized(bufs.Ptr, []int64{n}, threads); err != nil {
			t.Fatal(err)
		}
		for i, td := range spec.Tensors {
			if td.Role != ir.RoleOutput {
				continue
			}
			got := bufs.Get(i)
			for j := range want[i] {
				if d := math.Abs(got[j] - want[i][j]); d > 2e-4*(1+math.Abs(want[i][j])) {
					t.Fatalf("size %d, %d threads: %s[%d] = %v, want %v\n%s", n, threads, td.Name, j, got[j], want[i][j], k.Source())
				}
			}
		}
		bufs.Free()
	}
}
