package nvrtc_test

import (
	"github.com/neoflow/neoflow/internal/nvrtctest"
	. "github.com/neoflow/neoflow/kernels/nvrtc"

	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func testLibrary(t *testing.T) *Library { return nvrtctest.Library(t) }

const kernel = `extern "C" __global__ void add1(float *x, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		x[i] = expf(x[i]) + 1.0f;
}
`

func TestCompileCUBINAndPTX(t *testing.T) {
	l := testLibrary(t)
	ma, mi, err := l.Version()
	if err != nil || ma < 11 {
		t.Fatalf("version %d.%d, %v", ma, mi, err)
	}
	tg, err := l.TargetFor(90)
	if err != nil {
		t.Fatal(err)
	}
	if tg != (Target{Arch: 90}) {
		t.Fatalf("target for sm_90 is %v", tg)
	}
	img, _, err := l.Compile(kernel, "add1.cu", tg)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(img, []byte("\x7fELF")) {
		t.Fatalf("CUBIN does not start with the ELF magic: %q", img[:min(len(img), 8)])
	}
	ptx, _, err := l.Compile(kernel, "add1.cu", Target{Arch: 90, PTX: true})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(ptx, []byte(".entry add1")) || !bytes.Contains(ptx, []byte(".target sm_90")) {
		t.Fatalf("PTX lacks the entry or the target:\n%s", ptx)
	}
}

func TestTargetFallsBackToPTX(t *testing.T) {
	l := testLibrary(t)
	archs, err := l.Archs()
	if err != nil || len(archs) == 0 {
		t.Fatalf("archs %v, %v", archs, err)
	}
	newest := archs[len(archs)-1]
	tg, err := l.TargetFor(newest + 1)
	if err != nil {
		t.Fatal(err)
	}
	if tg != (Target{Arch: newest, PTX: true}) {
		t.Fatalf("a device newer than NVRTC gets %v, want PTX for compute_%d", tg, newest)
	}
	if _, err := l.TargetFor(archs[0] - 1); err == nil || !strings.Contains(err.Error(), "newer than the device") {
		t.Fatalf("a device older than every architecture: %v", err)
	}
}

func TestCompileErrorHasLog(t *testing.T) {
	l := testLibrary(t)
	_, _, err := l.Compile("extern \"C\" __global__ void bad(float *x) { x[0] = undefined_name; }\n", "bad.cu", Target{Arch: 90})
	if err == nil || !strings.Contains(err.Error(), "undefined_name") || !strings.Contains(err.Error(), "bad.cu") {
		t.Fatalf("want an error quoting the compiler's log, got %v", err)
	}
}

func TestOpenErrors(t *testing.T) {
	if _, err := Open(filepath.Join(t.TempDir(), "libnvrtc.so.99")); err == nil || !strings.Contains(err.Error(), "loading NVRTC") {
		t.Fatalf("missing file: %v", err)
	}
	if _, err := Find([]string{t.TempDir()}); err == nil || !strings.Contains(err.Error(), "no NVRTC library") {
		t.Fatalf("empty directory: %v", err)
	}
}

func TestFindPrefersNewest(t *testing.T) {
	d := t.TempDir()
	for _, n := range []string{"libnvrtc.so.11.2", "libnvrtc.so.12", "libnvrtc-builtins.so.13", "libnvrtc.alt.so.13"} {
		if err := os.WriteFile(filepath.Join(d, n), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p, err := Find([]string{"", filepath.Join(d, "missing"), d})
	if err != nil || filepath.Base(p) != "libnvrtc.so.12" {
		t.Fatalf("Find = %q, %v; want libnvrtc.so.12", p, err)
	}
}
