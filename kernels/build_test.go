package kernels

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/loops"
	"github.com/neoflow/neoflow/internal/nvrtctest"
	"github.com/neoflow/neoflow/internal/testops"
)

func TestBuildCacheAndSource(t *testing.T) {
	b := testBuilder(t)
	o, _ := testops.Lookup("matmul")
	spec, err := o.Spec(ir.Float64)
	if err != nil {
		t.Fatal(err)
	}
	k1, err := b.Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	b2, err := NewBuilder(Options{CacheDir: builderDir, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	k2, err := b2.Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	if k2.Outcome().String() != "hit" || k2.Symbol() != k1.Symbol() || k2.Key() != k1.Key() {
		t.Errorf("second build: outcome %v, symbols %s %s", k2.Outcome(), k1.Symbol(), k2.Symbol())
	}
	if !strings.HasPrefix(k1.Symbol(), "nf_matmul_") || len(k1.Symbol()) != len("nf_matmul_")+16 {
		t.Errorf("symbol %s", k1.Symbol())
	}
	src, err := Source(spec)
	if err != nil {
		t.Fatal(err)
	}
	if strings.ReplaceAll(src, PlaceholderSymbol+"(", k1.Symbol()+"(") != k1.Source() {
		t.Errorf("Source and the built source differ beyond the symbol")
	}
	if k1.NumBufs() != 3 || k1.Addr() == 0 {
		t.Errorf("NumBufs %d Addr %x", k1.NumBufs(), k1.Addr())
	}
	// Another version is another key and another compilation.
	b3, err := NewBuilder(Options{CacheDir: builderDir, Version: "test-other"})
	if err != nil {
		t.Fatal(err)
	}
	k3, err := b3.Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	if k3.Key() == k1.Key() || k3.Outcome().String() != "miss" {
		t.Errorf("version change: key %s outcome %v", k3.Key(), k3.Outcome())
	}
}

func TestSymbol(t *testing.T) {
	key := strings.Repeat("ab", 32)
	for name, want := range map[string]string{
		"conv2d":  "nf_conv2d_abababababababab",
		"":        "nf_op_abababababababab",
		"my op-1": "nf_my_op_1_abababababababab",
	} {
		if got := Symbol(name, key); got != want {
			t.Errorf("Symbol(%q) = %s, want %s", name, got, want)
		}
	}
}

// TestTunedSchedulesFallBack: tuned schedules that do not lower are
// reported and replaced by the defaults, for the C kernel (Build with
// Options.Schedules) and the CUDA one (BuildCUDATuned) alike.
func TestTunedSchedulesFallBack(t *testing.T) {
	o, _ := testops.Lookup("matmul")
	spec, err := o.Spec(ir.Float32)
	if err != nil {
		t.Fatal(err)
	}
	bad := []loops.Schedule{{Tiling: &loops.Tiling{Splits: []loops.Split{{Axis: "nope", Factors: []int64{2}}}}}}
	var logs []string
	logf := func(format string, args ...any) { logs = append(logs, fmt.Sprintf(format, args...)) }
	b, err := NewBuilder(Options{CacheDir: t.TempDir(), Version: "test", Logf: logf,
		Schedules: func(*ir.Spec) []loops.Schedule { return bad }})
	if err != nil {
		t.Fatal(err)
	}
	k, err := b.Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	def, err := Source(spec)
	if err != nil {
		t.Fatal(err)
	}
	if normalizeSymbol(k.Source()) != normalizeSymbol(def) {
		t.Error("the fallback is not the default schedule's kernel")
	}
	if len(logs) != 1 || !strings.Contains(logs[0], "tuned schedules of kernel matmul failed, using the default ones") {
		t.Fatalf("reports %q", logs)
	}

	lib := nvrtctest.Library(t)
	b, err = NewBuilder(Options{CacheDir: t.TempDir(), Version: "test", Logf: logf, NVRTCDirs: []string{lib.Path}})
	if err != nil {
		t.Fatal(err)
	}
	logs = nil
	badGPU := []loops.Schedule{{GPU: &loops.GPUTiling{Spatial: []loops.GPUAxis{{Axis: "nope", Threads: 2, Regs: 1}}}}}
	ck, err := b.BuildCUDATuned(context.Background(), spec, badGPU, 90)
	if err != nil {
		t.Fatal(err)
	}
	want, err := CUDASource(spec, nil, "nf_x")
	if err != nil {
		t.Fatal(err)
	}
	if normalizeSymbol(ck.Source()) != normalizeSymbol(want.Source) {
		t.Error("the CUDA fallback is not the default schedule's kernel")
	}
	if len(logs) != 1 || !strings.Contains(logs[0], "tuned schedules of kernel matmul failed, using the default ones") {
		t.Fatalf("CUDA reports %q", logs)
	}
}

// normalizeSymbol names every kernel function nf_x.
func normalizeSymbol(src string) string {
	return regexp.MustCompile(`\bnf_\w+_[0-9a-f]{16}`).ReplaceAllString(strings.ReplaceAll(src, PlaceholderSymbol, "nf_x"), "nf_x")
}
