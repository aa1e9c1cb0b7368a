package torchbridge

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/neoflow/neoflow/api"
)

// TestBundleWithoutCompiler saves the kernels one runtime launched and
// loads them in another whose compiler is missing and whose cache is
// empty: the same specialization loads from the bundle (with the bundle's
// fusion rates, not measured ones), and a kernel the bundle lacks fails
// naming the compiler.
func TestBundleWithoutCompiler(t *testing.T) {
	src := "T[b,u] = X[b,u] * 2.0\nY[b,u] = tanh(T[b,u]) + T[b,u]"
	path := filepath.Join(t.TempDir(), "k.nfb")
	a := newRuntime(t)
	def, err := a.Define(&api.DefineRequest{Source: src, Outputs: []string{"T", "Y"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Specialize(&api.SpecializeRequest{OpId: def.OpId, Inputs: []*api.TensorType{f64(4, 6)}}); err != nil {
		t.Fatal(err)
	}
	saved, err := a.SaveBundle(&api.BundleSaveRequest{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	if saved.Kernels != 1 || !strings.Contains(saved.Manifest, `"fusion_rates"`) {
		t.Fatalf("saved %d kernels, manifest %s", saved.Kernels, saved.Manifest)
	}

	b := New()
	init, err := b.Init(&api.InitRequest{CacheDir: t.TempDir(), NumThreads: 2, Cc: "/nonexistent/cc", Bundle: path})
	if err != nil {
		t.Fatal(err)
	}
	if init.BundleKernels != 1 {
		t.Fatalf("bundle kernels %d, want 1", init.BundleKernels)
	}
	def, err = b.Define(&api.DefineRequest{Source: src, Outputs: []string{"T", "Y"}})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := b.Specialize(&api.SpecializeRequest{OpId: def.OpId, Inputs: []*api.TensorType{f64(4, 6)}})
	if err != nil {
		t.Fatalf("the bundled kernel, without a compiler: %v", err)
	}
	if !resp.CacheHit || resp.KernelId == 0 {
		t.Fatalf("bundled kernel: hit %v, id %d", resp.CacheHit, resp.KernelId)
	}
	for _, w := range resp.Warnings {
		if strings.Contains(w, "rates") {
			t.Errorf("the fusion rates were measured, not taken from the bundle: %s", w)
		}
	}
	_, err = b.Specialize(&api.SpecializeRequest{OpId: def.OpId, Inputs: []*api.TensorType{f64(5, 6)}})
	if err == nil || !strings.Contains(err.Error(), "/nonexistent/cc") {
		t.Fatalf("a kernel the bundle lacks, without a compiler: got %v, want an error naming the compiler", err)
	}
}

// TestBundleRefusedAtInit checks that a bundle that does not open fails
// Init with its reason, and a missing file names the path.
func TestBundleRefusedAtInit(t *testing.T) {
	r := New()
	_, err := r.Init(&api.InitRequest{CacheDir: t.TempDir(), Bundle: "/nonexistent/k.nfb"})
	if err == nil || !strings.Contains(err.Error(), "/nonexistent/k.nfb") {
		t.Fatalf("missing bundle: %v", err)
	}
}

// TestBundleOfAClearedRecord saves a bundle whose kernel was built from a
// tuning record that was removed since: a warning names the record, and
// the bundle carries the kernel without it.
func TestBundleOfAClearedRecord(t *testing.T) {
	a := newRuntime(t)
	def, err := a.Define(&api.DefineRequest{Source: "Y[i] = X[i] * 2.0"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Specialize(&api.SpecializeRequest{OpId: def.OpId, Inputs: []*api.TensorType{f64(8)}}); err != nil {
		t.Fatal(err)
	}
	a.noteRecord("00000000000000000000000000000000") // a record this process used, gone from the database
	saved, err := a.SaveBundle(&api.BundleSaveRequest{Path: filepath.Join(t.TempDir(), "k.nfb")})
	if err != nil {
		t.Fatal(err)
	}
	if saved.Kernels != 1 || saved.Records != 0 {
		t.Fatalf("saved %d kernels and %d records, want 1 and 0", saved.Kernels, saved.Records)
	}
	if len(saved.Warnings) != 1 || !strings.Contains(saved.Warnings[0], "no longer in the tuning database") {
		t.Fatalf("warnings %q", saved.Warnings)
	}
}
