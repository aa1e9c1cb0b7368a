package torchbridge

import (
	"runtime"
	"testing"

	"github.com/neoflow/neoflow/api"
)

// TestInitLeavesSpareProcs: Init sets GOMAXPROCS to the calls' threads
// plus spareProcs, so that a caller entering Go finds an idle P while
// goroutines wait in compilers and C calls.
func TestInitLeavesSpareProcs(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	r := New()
	if _, err := r.Init(&api.InitRequest{CacheDir: t.TempDir(), NumThreads: 3}); err != nil {
		t.Fatal(err)
	}
	if got, want := runtime.GOMAXPROCS(0), 3+spareProcs; got != want {
		t.Errorf("GOMAXPROCS %d after Init with 3 threads, want %d", got, want)
	}
}
