package kernels

import (
	"strings"
	"testing"

	"github.com/neoflow/neoflow/core/ir"
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
