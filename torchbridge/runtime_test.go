package torchbridge

import (
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"github.com/neoflow/neoflow/api"
	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/loops"
	"github.com/neoflow/neoflow/core/pipeline"
)

func newRuntime(t *testing.T) *Runtime {
	t.Helper()
	r := New()
	if _, err := r.Init(&api.InitRequest{CacheDir: t.TempDir(), NumThreads: 2}); err != nil {
		t.Fatal(err)
	}
	// A forward kernel's tuner kept for a joint pass pins its buffers; a
	// runtime collected with it would leak the pins.
	t.Cleanup(func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, k := range r.tunedFwd {
			k.tuner.Close()
		}
		r.tunedFwd = nil
	})
	return r
}

func f64(shape ...int64) *api.TensorType { return &api.TensorType{Dtype: "float64", Shape: shape} }

func TestDefineReportsInputsOutputsAndRanks(t *testing.T) {
	r := newRuntime(t)
	resp, err := r.Define(&api.DefineRequest{Source: "M[b] max= X[b,j]\nE[b,j] = exp(X[b,j] - M[b])\nS[b] += E[b,j]\nT[b] += X[b,j]"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(resp.Inputs, ","), "X"; got != want {
		t.Errorf("inputs: got %s want %s", got, want)
	}
	if got, want := strings.Join(resp.Outputs, ","), "S,T"; got != want {
		t.Errorf("outputs: got %s want %s", got, want)
	}
	if len(resp.InputRanks) != 1 || resp.InputRanks[0] != 2 {
		t.Errorf("input ranks: got %v want [2]", resp.InputRanks)
	}
}

func TestDefineChecksNamesAndOutputOrder(t *testing.T) {
	r := newRuntime(t)
	for _, name := range []string{"a\x00b", "tab\tname", "é", strings.Repeat("n", MaxNameLen+1)} {
		_, err := r.Define(&api.DefineRequest{Source: "Y[i] = X[i]", Name: name})
		if err == nil || !strings.Contains(err.Error(), "is not allowed: a name is 1 to 128 characters") {
			t.Errorf("name %q: got error %v", name, err)
		}
	}
	resp, err := r.Define(&api.DefineRequest{Source: "A[i] = X[i]\nB[i] = X[i]", Name: "ok_name-1.0", Outputs: []string{"B", "A"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(resp.Outputs, ","); got != "B,A" {
		t.Errorf("outputs: got %s want B,A", got)
	}
	spec, err := r.Specialize(&api.SpecializeRequest{OpId: resp.OpId, Inputs: []*api.TensorType{f64(3)}, ShapesOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	var bufs []string
	for _, b := range spec.Buffers {
		bufs = append(bufs, b.Name)
	}
	if got := strings.Join(bufs, ","); got != "X,B,A" {
		t.Errorf("buffers: got %s want X,B,A", got)
	}
}

func TestDefineErrorsCarryPositions(t *testing.T) {
	r := newRuntime(t)
	for _, tc := range []struct{ desc, src, want string }{
		{"syntax", "Y[i] = X[i", "1:"},
		{"unknown index", "Y[i] = X[i] * j", "unknown index j"},
		{"bad const", "Y[i] = X[i]", "constant S has no value"},
	} {
		req := &api.DefineRequest{Source: tc.src}
		if tc.desc == "bad const" {
			req.Consts = map[string]*api.Scalar{"S": {}}
		}
		_, err := r.Define(req)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got error %v, want one containing %q", tc.desc, err, tc.want)
		}
	}
}

func TestSpecializeLaunch(t *testing.T) {
	r := newRuntime(t)
	def, err := r.Define(&api.DefineRequest{Source: "C[i,j] += A[i,k] * B[k,j]", Name: "matmul"})
	if err != nil {
		t.Fatal(err)
	}
	req := &api.SpecializeRequest{OpId: def.OpId, Inputs: []*api.TensorType{f64(2, 3), f64(3, 2)}}
	spec, err := r.Specialize(req)
	if err != nil {
		t.Fatal(err)
	}
	if spec.KernelId == 0 || len(spec.Buffers) != 3 || spec.Buffers[2].Role != "output" {
		t.Fatalf("unexpected response %v", spec)
	}
	if again, _ := r.Specialize(req); again.KernelId != spec.KernelId {
		t.Errorf("second specialization built kernel %d, want %d", again.KernelId, spec.KernelId)
	}

	a := []float64{1, 2, 3, 4, 5, 6}
	b := []float64{1, 0, 0, 1, 1, 1}
	c := make([]float64, 4)
	var pin runtime.Pinner
	defer pin.Unpin()
	bufs := []unsafe.Pointer{unsafe.Pointer(&a[0]), unsafe.Pointer(&b[0]), unsafe.Pointer(&c[0])}
	for _, p := range bufs {
		pin.Pin(p)
	}
	pin.Pin(&bufs[0])
	if err := r.Launch(spec.KernelId, unsafe.Pointer(&bufs[0]), 3, 2); err != nil {
		t.Fatal(err)
	}
	want := []float64{4, 5, 10, 11}
	for i := range want {
		if c[i] != want[i] {
			t.Errorf("C[%d]: got %v want %v", i, c[i], want[i])
		}
	}
	if err := r.Launch(spec.KernelId, unsafe.Pointer(&bufs[0]), 2, 2); err == nil || !strings.Contains(err.Error(), "takes 3 buffers, got 2") {
		t.Errorf("wrong buffer count: got %v", err)
	}
	if err := r.Launch(99, unsafe.Pointer(&bufs[0]), 3, 2); err == nil || !strings.Contains(err.Error(), "unknown kernel id 99") {
		t.Errorf("unknown kernel: got %v", err)
	}
}

func TestSpecializeErrors(t *testing.T) {
	r := newRuntime(t)
	def, err := r.Define(&api.DefineRequest{Source: "C[i,j] += A[i,k] * B[k,j]", Name: "matmul"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		desc string
		req  *api.SpecializeRequest
		want string
	}{
		{"count", &api.SpecializeRequest{OpId: def.OpId, Inputs: []*api.TensorType{f64(2, 3)}}, "takes 2 inputs (A, B), got 1"},
		{"dtype", &api.SpecializeRequest{OpId: def.OpId, Inputs: []*api.TensorType{{Dtype: "uint8", Shape: []int64{2, 3}}, f64(3, 2)}}, "unsupported dtype"},
		{"mixed", &api.SpecializeRequest{OpId: def.OpId, Inputs: []*api.TensorType{{Dtype: "float32", Shape: []int64{2, 3}}, f64(3, 2)}}, "share one dtype"},
		{"ranges", &api.SpecializeRequest{OpId: def.OpId, Inputs: []*api.TensorType{f64(2, 3), f64(4, 2)}}, "inconsistent ranges for index k"},
		{"op id", &api.SpecializeRequest{OpId: 12345}, "unknown op id 12345"},
	} {
		_, err := r.Specialize(tc.req)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got error %v, want one containing %q", tc.desc, err, tc.want)
		}
	}
}

func TestSourceOnlyDoesNotCompile(t *testing.T) {
	r := newRuntime(t)
	if _, err := r.Init(&api.InitRequest{CacheDir: t.TempDir(), Cc: "/nonexistent/cc"}); err != nil {
		t.Fatal(err)
	}
	def, err := r.Define(&api.DefineRequest{Source: "Y[i] = X[i] * 2.0"})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := r.Specialize(&api.SpecializeRequest{OpId: def.OpId, Inputs: []*api.TensorType{f64(5)}, SourceOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if resp.KernelId != 0 || !strings.Contains(resp.CSource, "double") {
		t.Errorf("source only: kernel %d, source %q", resp.KernelId, resp.CSource)
	}
	_, err = r.Specialize(&api.SpecializeRequest{OpId: def.OpId, Inputs: []*api.TensorType{f64(5)}})
	if err == nil || !strings.Contains(err.Error(), "/nonexistent/cc") {
		t.Errorf("missing compiler: got %v", err)
	}
}

// The requests of a first call (the shapes, then the build) run the
// Kernel plan once: the specialization is kept per op and request.
func TestShapesAndBuildShareOneSpecialization(t *testing.T) {
	r := newRuntime(t)
	var dump strings.Builder
	d, err := pipeline.NewDumper("specialize,fuse-group,schedule", "", &dump)
	if err != nil {
		t.Fatal(err)
	}
	r.mu.Lock()
	r.cfg.Dump = d
	r.mu.Unlock()
	def, err := r.Define(&api.DefineRequest{Source: "T[i] = exp(X[i])\nY[i] = T[i] * 2.0"})
	if err != nil {
		t.Fatal(err)
	}
	req := &api.SpecializeRequest{OpId: def.OpId, Inputs: []*api.TensorType{f64(64)}, ShapesOnly: true}
	if _, err := r.Specialize(req); err != nil {
		t.Fatal(err)
	}
	req.ShapesOnly, req.SourceOnly = false, true
	if _, err := r.Specialize(req); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(dump.String(), "// after specialize:"); n != 1 {
		t.Fatalf("specialize ran %d times, want 1:\n%s", n, dump.String())
	}
	if n := strings.Count(dump.String(), "// after schedule: op <anonymous>"); n != 1 {
		t.Fatalf("the source request scheduled %d times, want 1", n)
	}
	req.Inputs = []*api.TensorType{f64(32)}
	if _, err := r.Specialize(req); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(dump.String(), "// after specialize:"); n != 2 {
		t.Fatalf("a new shape: specialize ran %d times in all, want 2", n)
	}
}

// Picked schedules that fail to lower are reported, and the kernel is
// lowered with the defaults.
func TestPickedSchedulesThatFailFallBackToDefaults(t *testing.T) {
	r := newRuntime(t)
	def, err := r.Define(&api.DefineRequest{Source: "Y[i] = exp(X[i])"})
	if err != nil {
		t.Fatal(err)
	}
	op, in, err := r.opInputs(def.OpId, []*api.TensorType{f64(64)})
	if err != nil {
		t.Fatal(err)
	}
	bad := func(*ir.Spec) []loops.Schedule { return make([]loops.Schedule, 5) } // one statement
	u, _, err := r.plan(op, in, nil, true, "bad-pick", pipeline.Build, bad)
	if err != nil {
		t.Fatal(err)
	}
	if u.Func == nil || u.Picked != nil {
		t.Fatalf("func %v, picked %v: want the defaults' loop nests", u.Func, u.Picked)
	}
	w := strings.Join(r.takeWarnings(), "\n")
	if !strings.Contains(w, "failed to lower, using the default ones") || !strings.Contains(w, "5 schedules picked for the 1 statements") {
		t.Fatalf("warnings: %q", w)
	}
}
