package torchbridge

import (
	"runtime"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/neoflow/neoflow/api"
)

// TestSpecializeSymbolic builds a kernel for every batch size from two
// calls' shapes and launches it at a third.
func TestSpecializeSymbolic(t *testing.T) {
	r := newRuntime(t)
	def, err := r.Define(&api.DefineRequest{Source: "Y[n, j] += X[n, k] * W[j, k]", Name: "linear"})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := r.Specialize(&api.SpecializeRequest{OpId: def.OpId, Inputs: []*api.TensorType{f64(4, 3), f64(2, 3)},
		Like: []*api.TensorType{f64(6, 3), f64(2, 3)}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(resp.SizeNames, []string{"s0"}) || !slices.Equal(resp.Buffers[0].Sizes, []string{"s0", ""}) ||
		!slices.Equal(resp.Buffers[2].Sizes, []string{"s0", ""}) || resp.Buffers[1].Sizes != nil {
		t.Fatalf("sizes: %v, buffers %v", resp.SizeNames, resp.Buffers)
	}
	x := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9} // 3 rows: a size neither call had
	w := []float64{1, 0, 0, 0, 1, 1}
	y := make([]float64, 6)
	n := []int64{3}
	var pin runtime.Pinner
	defer pin.Unpin()
	bufs := []unsafe.Pointer{unsafe.Pointer(&x[0]), unsafe.Pointer(&w[0]), unsafe.Pointer(&y[0]), unsafe.Pointer(&n[0])}
	for _, p := range bufs {
		pin.Pin(p)
	}
	pin.Pin(&bufs[0])
	if err := r.Launch(resp.KernelId, unsafe.Pointer(&bufs[0]), 4, 2); err != nil {
		t.Fatal(err)
	}
	if want := []float64{1, 5, 4, 11, 7, 17}; !slices.Equal(y, want) {
		t.Errorf("Y = %v, want %v", y, want)
	}
	for _, tc := range []struct {
		like []*api.TensorType
		want string
	}{
		{[]*api.TensorType{f64(4, 3), f64(2, 3)}, "like has the inputs' shapes"},
		{[]*api.TensorType{f64(4, 3, 1), f64(2, 3)}, "another rank"},
		{[]*api.TensorType{f64(1, 3), f64(2, 3)}, "two different values of at least 2"},
	} {
		_, err := r.Specialize(&api.SpecializeRequest{OpId: def.OpId, Inputs: []*api.TensorType{f64(4, 3), f64(2, 3)}, Like: tc.like})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("like %v: got %v, want an error saying %q", tc.like, err, tc.want)
		}
	}
}

// TestSpecializeSymbolicSizes: explicit extents that follow the varying
// dimension (the backend gives every extent) are that size's.
func TestSpecializeSymbolicSizes(t *testing.T) {
	r := newRuntime(t)
	def, err := r.Define(&api.DefineRequest{Source: "Y[n, j] = X[n] + 1.0", Name: "broadcast"})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := r.Specialize(&api.SpecializeRequest{OpId: def.OpId, Inputs: []*api.TensorType{f64(4)}, Sizes: map[string]int64{"n": 4, "j": 3},
		Like: []*api.TensorType{f64(6)}, LikeSizes: map[string]int64{"n": 6, "j": 3}})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.SizeOf) != 1 || resp.SizeOf["n"] != "s0" || !slices.Equal(resp.Buffers[1].Sizes, []string{"s0", ""}) {
		t.Fatalf("size_of %v, buffers %v", resp.SizeOf, resp.Buffers)
	}
	_, err = r.Specialize(&api.SpecializeRequest{OpId: def.OpId, Inputs: []*api.TensorType{f64(4)}, Sizes: map[string]int64{"n": 4, "j": 3},
		Like: []*api.TensorType{f64(6)}, LikeSizes: map[string]int64{"n": 6, "j": 5}})
	if err == nil || !strings.Contains(err.Error(), "extent j is 3 and 5, no input dimension's values") {
		t.Errorf("got %v", err)
	}
}
