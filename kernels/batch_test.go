package kernels

import (
	"runtime"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/neoflow/neoflow/core/interp"
	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/loops"
	"github.com/neoflow/neoflow/internal/hostbuf"
	"github.com/neoflow/neoflow/internal/testops"
	"github.com/neoflow/neoflow/kernels/cc"
)

// batchOps are kernels of one dtype that need different helpers (a
// sigmoid, a streaming store of a large copy, a parallel contraction), so
// that one prelude must serve them all.
var batchOps = []testops.Op{
	{Name: "batch_sig", Src: "Y[i] = sigmoid(X[i]) * 2.0", Inputs: []string{"X"}, Shapes: [][]int64{{37}}},
	{Name: "batch_mm", Src: "C[i, j] += A[i, k] * B[k, j]", Inputs: []string{"A", "B"}, Shapes: [][]int64{{33, 17}, {17, 40}}},
	{Name: "batch_copy", Src: "Y[i] = X[i]", Inputs: []string{"X"}, Shapes: [][]int64{{1 << 21}}},
	{Name: "batch_two", Src: "T[i] = exp(X[i])\nY[i] = T[i] - X[i]", Inputs: []string{"X"}, Shapes: [][]int64{{64}}},
	{Name: "batch_sig", Src: "Y[i] = sigmoid(X[i]) * 2.0", Inputs: []string{"X"}, Shapes: [][]int64{{5}}},
}

// batchSpecs is batchOps' float32 specs.
func batchSpecs(t *testing.T) []*ir.Spec {
	t.Helper()
	var specs []*ir.Spec
	for _, op := range batchOps {
		spec, err := op.Spec(ir.Float32)
		if err != nil {
			t.Fatal(err)
		}
		specs = append(specs, spec)
	}
	return specs
}

// BuildBatches builds kernels in batches, one shared object each, and
// every kernel computes what the interpreter does; each is closed on its
// own, and the last Close of a batch unloads it.
func TestBuildBatches(t *testing.T) {
	b := testBuilder(t)
	specs := batchSpecs(t)
	loaded := cc.NumLoaded()
	ks, err := b.BuildBatches(t.Context(), specs, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(ks) != len(specs) {
		t.Fatalf("%d kernels for %d specs", len(ks), len(specs))
	}
	if got := cc.NumLoaded() - loaded; got != 2 {
		t.Fatalf("%d libraries loaded for 2 batches", got)
	}
	for i, k := range ks {
		if k.Spec() != specs[i] {
			t.Fatalf("kernel %d computes %s, want %s", i, k.Spec().Op.Name, specs[i].Op.Name)
		}
		if k.Path() != ks[i%2].Path() || k.Path() == ks[1-i%2].Path() {
			t.Errorf("kernel %d is in %s, not in batch %d", i, k.Path(), i%2)
		}
		if !strings.Contains(k.Source(), "void "+k.Symbol()+"(") {
			t.Errorf("kernel %d: the batch's source lacks its function %s", i, k.Symbol())
		}
		inputs := hostbuf.RandomInputs(specs[i], false, uint64(i+1))
		want, err := interp.Run(specs[i], inputs)
		if err != nil {
			t.Fatal(err)
		}
		bufs := hostbuf.New(specs[i], inputs)
		if err := k.Launch(bufs.Ptr, 2); err != nil {
			t.Fatal(err)
		}
		compareWritten(t, specs[i], bufs, want, tolerance(ir.Float32), k.Source())
		bufs.Free()
	}
	if strings.Count(ks[0].Source(), "static inline float nf_sigmoid") != 1 {
		t.Errorf("the batch defines its sigmoid other than once:\n%s", ks[0].Source())
	}
	for i, k := range ks {
		if err := k.Close(); err != nil {
			t.Fatal(err)
		}
		if i == len(ks)-2 && cc.NumLoaded()-loaded != 1 {
			t.Fatalf("after closing all but one kernel, %d libraries are loaded, want the last one's", cc.NumLoaded()-loaded)
		}
	}
	if got := cc.NumLoaded() - loaded; got != 0 {
		t.Fatalf("%d libraries still loaded after every kernel was closed", got)
	}
}

// A batch mixing dtypes is refused, and so is an empty one.
func TestBuildBatchRefuses(t *testing.T) {
	b := testBuilder(t)
	f32, err := batchOps[0].Spec(ir.Float32)
	if err != nil {
		t.Fatal(err)
	}
	f64, err := batchOps[0].Spec(ir.Float64)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.BuildBatch(t.Context(), []*ir.Spec{f32, f64}); err == nil || !strings.Contains(err.Error(), "float32 and float64") {
		t.Fatalf("a mixed batch: error %v", err)
	}
	if _, err := b.BuildBatch(t.Context(), nil); err == nil {
		t.Fatal("an empty batch built")
	}
}

// A profiled batch's kernels take the timing buffer and add each
// statement's seconds to it, and compute what the interpreter does;
// kernels of the same schedules share one function.
func TestBuildProfiledBatch(t *testing.T) {
	b := testBuilder(t)
	spec, err := batchOps[3].Spec(ir.Float64)
	if err != nil {
		t.Fatal(err)
	}
	other := []loops.Schedule{{VectorWidth: 1}, {VectorWidth: 4, ParallelDepth: 1}}
	// the same schedules twice: one function serves both
	ks, err := b.BuildKernels(t.Context(), Batch{Specs: []*ir.Spec{spec, spec, spec}, Scheds: [][]loops.Schedule{nil, other, other}, Profiled: true})
	if err != nil {
		t.Fatal(err)
	}
	inputs := hostbuf.RandomInputs(spec, false, 3)
	want, err := interp.Run(spec, inputs)
	if err != nil {
		t.Fatal(err)
	}
	if ks[1].Symbol() != ks[2].Symbol() || ks[0].Symbol() == ks[1].Symbol() {
		t.Fatalf("symbols %s %s %s: want the last two alike", ks[0].Symbol(), ks[1].Symbol(), ks[2].Symbol())
	}
	for _, k := range ks {
		if !k.Profiled() || k.NumBufs() != len(spec.Tensors)+1 {
			t.Fatalf("kernel %s: profiled %v, %d buffers", k.Symbol(), k.Profiled(), k.NumBufs())
		}
		bufs := hostbuf.New(spec, inputs)
		prof := make([]float64, len(spec.Stmts))
		ptr := append(slices.Clone(bufs.Ptr), unsafe.Pointer(&prof[0]))
		var pin runtime.Pinner
		pin.Pin(&prof[0])
		if err := k.Launch(ptr, 1); err != nil {
			t.Fatal(err)
		}
		pin.Unpin()
		compareWritten(t, spec, bufs, want, tolerance(ir.Float64), k.Source())
		if prof[0] <= 0 {
			t.Errorf("kernel %s: statement times %v", k.Symbol(), prof)
		}
		bufs.Free()
		_ = k.Close()
	}
}

// PerRun caps the kernels of one compiler run: five kernels, two a run,
// on one compiler, are three libraries, each kernel in batch i mod 3.
func TestBuildBatchesPerRun(t *testing.T) {
	b := testBuilder(t)
	specs := batchSpecs(t)
	loaded := cc.NumLoaded()
	ks, err := b.BuildKernelsParallel(t.Context(), Batch{Specs: specs, PerRun: 2}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if got := cc.NumLoaded() - loaded; got != 3 {
		t.Errorf("%d libraries for 5 kernels, 2 a run", got)
	}
	for i, k := range ks {
		if k.Spec() != specs[i] || k.Path() != ks[i%3].Path() {
			t.Errorf("kernel %d: %s in %s", i, k.Spec().Op.Name, k.Path())
		}
	}
	for _, k := range ks {
		_ = k.Close()
	}
}

// A failing batch fails BuildKernelsParallel, which closes the kernels the
// other batches built: no library stays loaded.
func TestBuildBatchesFailure(t *testing.T) {
	b := testBuilder(t)
	specs := batchSpecs(t)
	f64, err := batchOps[0].Spec(ir.Float64)
	if err != nil {
		t.Fatal(err)
	}
	loaded := cc.NumLoaded()
	// batch 0 holds specs 0 and 2, batch 1 specs 1 and the float64 one
	_, err = b.BuildKernelsParallel(t.Context(), Batch{Specs: []*ir.Spec{specs[0], specs[1], specs[2], f64}}, 2)
	if err == nil || !strings.Contains(err.Error(), "float32 and float64") {
		t.Fatalf("error %v, want the mixed batch's", err)
	}
	if n := cc.NumLoaded() - loaded; n != 0 {
		t.Fatalf("%d libraries left loaded after a failed build", n)
	}
}
