package cache

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pkg/errors"
)

// TestImageEntries stores device code images: a miss compiles, a hit
// does not, a corrupt image is rebuilt, a compile error is returned, and
// the key depends on the compiler description.
func TestImageEntries(t *testing.T) {
	comp, _ := fakeCompiler(t)
	c := newCache(t, filepath.Join(t.TempDir(), "cache"), comp)
	const src = `extern "C" __global__ void k() {}`
	key := c.ImageKey(src, "nvrtc 12.4 sm_90")
	if key == c.ImageKey(src, "nvrtc 12.4 sm_80") || key == c.Key(src) {
		t.Fatal("the image key ignores the target")
	}
	compiles := 0
	compile := func() ([]byte, error) {
		compiles++
		return []byte("\x7fELF image"), nil
	}
	get := func(want Outcome) {
		t.Helper()
		img, got, err := c.GetImage(context.Background(), key, ".cubin", src, "k", "nvrtc 12.4 sm_90", compile)
		if err != nil {
			t.Fatal(err)
		}
		if got != want || !bytes.Equal(img, []byte("\x7fELF image")) {
			t.Fatalf("outcome %v image %q, want %v", got, img, want)
		}
	}
	get(Miss)
	get(Hit)
	if compiles != 1 {
		t.Fatalf("%d compilations, want 1", compiles)
	}
	file, _ := c.paths(key, ".cubin")
	if err := os.WriteFile(file, []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	get(Rebuilt)
	if compiles != 2 {
		t.Fatalf("%d compilations, want 2", compiles)
	}
	other := c.ImageKey(src, "nvrtc 12.4 sm_80")
	_, _, err := c.GetImage(context.Background(), other, ".cubin", src, "k", "nvrtc 12.4 sm_80", func() ([]byte, error) {
		return nil, errors.New("NVRTC says no")
	})
	if err == nil || !strings.Contains(err.Error(), "NVRTC says no") || !strings.Contains(err.Error(), "kernel k") {
		t.Fatalf("compile error: %v", err)
	}
	if f, _ := c.paths(other, ".cubin"); fileExists(f) {
		t.Fatal("a failed compilation left an entry")
	}
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
