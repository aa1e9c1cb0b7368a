// Package nvrtctest finds an NVRTC library for tests: the file or
// directory NEOFLOW_NVRTC names, else CUDA_HOME/lib64, else
// /usr/local/cuda/lib64. Without one a test is skipped, unless
// NEOFLOW_REQUIRE_NVRTC=1 (set by CI, which has PyTorch's NVRTC) makes
// that a failure.
package nvrtctest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/neoflow/neoflow/kernels/nvrtc"
)

// Library opens the test NVRTC or skips t.
func Library(t testing.TB) *nvrtc.Library {
	t.Helper()
	dirs := []string{os.Getenv("NEOFLOW_NVRTC")}
	if h := os.Getenv("CUDA_HOME"); h != "" {
		dirs = append(dirs, filepath.Join(h, "lib64"))
	}
	dirs = append(dirs, "/usr/local/cuda/lib64")
	p, err := nvrtc.Find(dirs)
	if err != nil {
		if os.Getenv("NEOFLOW_REQUIRE_NVRTC") == "1" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	l, err := nvrtc.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	return l
}
