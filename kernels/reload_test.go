package kernels

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/internal/hostbuf"
	"github.com/neoflow/neoflow/internal/testops"
)

// TestReloadAfterLastClose builds a kernel that runs on several OpenMP
// threads, closes it (the last Close unloads its library) and builds and
// runs it again. The kernel's OpenMP runtime must stay loaded through the
// unload: when nothing else in the process holds it, unloading it with its
// thread pool alive killed the process at the next parallel run. Runs in
// a child process, where no other kernel keeps the runtime loaded.
func TestReloadAfterLastClose(t *testing.T) {
	if os.Getenv("NEOFLOW_RELOAD_CHILD") != "1" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestReloadAfterLastClose$", "-test.v")
		cmd.Env = append(os.Environ(), "NEOFLOW_RELOAD_CHILD=1")
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "--- PASS") {
			t.Fatalf("child process: %v\n%s", err, out)
		}
		return
	}
	o := testops.Op{Name: "scale", Src: "Y[i] = X[i] * 2.0", Shapes: [][]int64{{1 << 16}}}
	spec, err := o.Spec(ir.Float64)
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewBuilder(Options{CacheDir: t.TempDir(), Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	inputs := [][]float64{make([]float64, 1<<16)}
	for i := range inputs[0] {
		inputs[0][i] = float64(i)
	}
	for round := range 3 {
		k, err := b.Build(spec)
		if err != nil {
			t.Fatal(err)
		}
		bufs := hostbuf.New(spec, inputs)
		if err := k.Launch(bufs.Ptr, 4); err != nil {
			t.Fatal(err)
		}
		if got := bufs.Get(1)[12345]; got != 24690 {
			t.Fatalf("round %d: Y[12345] = %v, want 24690", round, got)
		}
		bufs.Free()
		if err := k.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
