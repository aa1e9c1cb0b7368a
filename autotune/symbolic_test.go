package autotune

import (
	"testing"

	"github.com/neoflow/neoflow/core/bounds"
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
