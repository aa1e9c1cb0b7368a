package kernels

import (
	"context"
	"runtime"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/internal/hostbuf"
	"github.com/neoflow/neoflow/internal/testops"
)

// TestBuildProfiled builds a two-statement op plain and profiled: the
// profiled kernel has its own key, takes one buffer more, fills one
// positive time per statement (accumulating over launches) and computes
// what the plain kernel does.
func TestBuildProfiled(t *testing.T) {
	b := testBuilder(t)
	o, _ := testops.Lookup("prod_min")
	spec, err := o.Spec(ir.Float64)
	if err != nil {
		t.Fatal(err)
	}
	if len(spec.Stmts) != 2 {
		t.Fatalf("prod_min has %d statements, want 2", len(spec.Stmts))
	}
	plain, err := b.Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	prof, err := b.BuildProfiled(context.Background(), spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	if prof.Key() == plain.Key() || prof.Symbol() == plain.Symbol() {
		t.Errorf("the profiled kernel shares the plain one's key %s", plain.Key())
	}
	if !prof.Profiled() || plain.Profiled() {
		t.Errorf("Profiled(): profiled kernel %v, plain kernel %v", prof.Profiled(), plain.Profiled())
	}
	if prof.NumBufs() != len(spec.Tensors)+1 || plain.NumBufs() != len(spec.Tensors) {
		t.Errorf("NumBufs: profiled %d, plain %d, for %d tensors", prof.NumBufs(), plain.NumBufs(), len(spec.Tensors))
	}
	if !strings.Contains(prof.Source(), "clock_gettime") || strings.Contains(plain.Source(), "clock_gettime") {
		t.Error("the clock reads are not (only) in the profiled source")
	}
	// A second builder over the same cache finds the profiled kernel.
	b2, err := NewBuilder(Options{CacheDir: builderDir, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	again, err := b2.BuildProfiled(context.Background(), spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	if again.Key() != prof.Key() || again.Outcome().String() != "hit" {
		t.Errorf("rebuilding the profiled kernel: key %s (was %s), outcome %v", again.Key(), prof.Key(), again.Outcome())
	}

	inputs := hostbuf.RandomInputs(spec, true, 1)
	want := hostbuf.New(spec, inputs)
	defer want.Free()
	if err := plain.Launch(want.Ptr, 2); err != nil {
		t.Fatal(err)
	}
	got := hostbuf.New(spec, inputs)
	defer got.Free()
	if err := prof.Launch(got.Ptr, 2); err == nil {
		t.Error("the profiled kernel launched without its timing buffer")
	}
	times := make([]float64, len(spec.Stmts))
	var pin runtime.Pinner
	pin.Pin(&times[0])
	defer pin.Unpin()
	bufs := append(slices.Clone(got.Ptr), unsafe.Pointer(&times[0]))
	if err := prof.Launch(bufs, 2); err != nil {
		t.Fatal(err)
	}
	for i, s := range times {
		if !(s > 0 && s < 10) {
			t.Errorf("statement %d took %v s", i, s)
		}
	}
	for i, td := range spec.Tensors {
		if td.Role != ir.RoleInput && !slices.Equal(got.Get(i), want.Get(i)) {
			t.Errorf("%s: profiled %v, plain %v", td.Name, got.Get(i), want.Get(i))
		}
	}
	first := slices.Clone(times)
	if err := prof.Launch(bufs, 1); err != nil {
		t.Fatal(err)
	}
	for i := range times {
		if times[i] <= first[i] {
			t.Errorf("statement %d: a second launch did not add to its time %v (now %v)", i, first[i], times[i])
		}
	}
}
