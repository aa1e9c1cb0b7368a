package cc

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"
)

const addSrc = `#include <stdint.h>
void nf_add(void **bufs, int64_t nthreads)
{
	const double *a = bufs[0], *b = bufs[1];
	double *c = bufs[2];
	for (int i = 0; i < 4; i++)
		c[i] = a[i] + b[i] + (double)nthreads;
}
`

func needCC(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath(DefaultPath); err != nil {
		t.Fatal("no C compiler (cc) on PATH: the kernels need one")
	}
}

func TestResolveMissing(t *testing.T) {
	_, err := Compiler{Path: "no-such-compiler-xyz"}.Identity()
	want := `C compiler "no-such-compiler-xyz" not found on PATH (set NEOFLOW_CC to a working compiler)`
	if err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
}

func TestIdentity(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "fakecc")
	if err := os.WriteFile(p, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "cc-link")
	if err := os.Symlink(p, link); err != nil {
		t.Fatal(err)
	}
	id1, err := Compiler{Path: link}.Identity()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(id1, p) || !strings.Contains(id1, "size=") {
		t.Errorf("identity %q does not name the resolved compiler", id1)
	}
	if id2, _ := (Compiler{Path: link}).Identity(); id2 != id1 {
		t.Errorf("identity not stable: %q vs %q", id1, id2)
	}
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(p, later, later); err != nil {
		t.Fatal(err)
	}
	if id3, _ := (Compiler{Path: link}).Identity(); id3 == id1 {
		t.Errorf("identity unchanged after the compiler changed: %q", id3)
	}
}

func TestCompileError(t *testing.T) {
	needCC(t)
	out := filepath.Join(t.TempDir(), "bad.so")
	err := Compiler{}.Compile(context.Background(), "int f(void) { return nosuch; }\n", out)
	if err == nil {
		t.Fatal("bad source compiled")
	}
	msg := err.Error()
	for _, want := range []string{"C compiler failed", strings.Join(DefaultFlags, " ") + " -o " + out, "-lm", "nosuch"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error lacks %q:\n%s", want, msg)
		}
	}
	if m, _ := filepath.Glob(filepath.Join(filepath.Dir(out), "*.c")); len(m) != 0 {
		t.Errorf("temporary source left behind: %v", m)
	}
}

func build(t *testing.T) *Kernel {
	t.Helper()
	needCC(t)
	out := filepath.Join(t.TempDir(), "add.so")
	if err := (Compiler{}).Compile(context.Background(), addSrc, out); err != nil {
		t.Fatal(err)
	}
	lib, err := Open(out)
	if err != nil {
		t.Fatal(err)
	}
	k, err := lib.Kernel("nf_add", 3)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestCompileLoadLaunch(t *testing.T) {
	k := build(t)
	a := []float64{1, 2, 3, 4}
	b := []float64{10, 20, 30, 40}
	c := make([]float64, 4)
	var pin runtime.Pinner
	defer pin.Unpin()
	bufs := []unsafe.Pointer{unsafe.Pointer(&a[0]), unsafe.Pointer(&b[0]), unsafe.Pointer(&c[0])}
	for _, p := range bufs {
		pin.Pin(p)
	}
	if err := k.Launch(bufs, 2); err != nil {
		t.Fatal(err)
	}
	for i := range c {
		if c[i] != a[i]+b[i]+2 {
			t.Errorf("c[%d] = %v", i, c[i])
		}
	}
	if err := k.Launch(bufs[:2], 1); err == nil || !strings.Contains(err.Error(), "takes 3 buffers, got 2") {
		t.Errorf("wrong buffer count: %v", err)
	}
	if err := k.Launch([]unsafe.Pointer{bufs[0], nil, bufs[2]}, 1); err == nil {
		t.Error("nil buffer accepted")
	}
	allocs := testing.AllocsPerRun(100, func() {
		CallRaw(k.Fn, unsafe.Pointer(&bufs[0]), 1)
	})
	if allocs != 0 {
		t.Errorf("CallRaw allocates %v times per call", allocs)
	}
}

func TestOpenErrors(t *testing.T) {
	k := build(t)
	if _, err := k.Lib.Symbol("no_such_symbol"); err == nil || !strings.Contains(err.Error(), "dlsym no_such_symbol") {
		t.Errorf("missing symbol: %v", err)
	}
	bad := filepath.Join(t.TempDir(), "garbage.so")
	if err := os.WriteFile(bad, []byte("not an ELF file"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(bad); err == nil || !strings.Contains(err.Error(), "dlopen "+bad) {
		t.Errorf("garbage library: %v", err)
	}
}

// TestCompileCancelKillsChildren: a cancelled compile returns, also when
// the compiler's children (here a sleep the fake driver starts, as gcc
// starts cc1) still hold its output pipe, and the driver and its children
// are gone. (How soon depends on the machine's load: not asserted; the
// 60 s bound only catches a compile that waits for its 600 s compiler.)
func TestCompileCancelKillsChildren(t *testing.T) {
	dir := t.TempDir()
	slow, pids := slowCompiler(t, dir)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Compiler{Path: slow}.Compile(ctx, "int x;", filepath.Join(dir, "k.so")) }()
	time.Sleep(300 * time.Millisecond)
	cancel()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "interrupted") {
			t.Fatalf("got %v, want an interrupted error", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("cancelled compile did not return")
	}
	b, _ := os.ReadFile(pids)
	expectGone(t, strings.Fields(string(b)), "the cancel")
}

// fakeCompiler is a script that logs each call to log and refuses what an
// old toolchain refuses (refuse: the arguments and the message), else runs cc.
func fakeCompiler(t *testing.T, refuse map[string]string) (path, log string) {
	t.Helper()
	dir := t.TempDir()
	path, log = filepath.Join(dir, "oldcc"), filepath.Join(dir, "calls")
	var cases strings.Builder
	for arg, msg := range refuse {
		fmt.Fprintf(&cases, "    %s) echo %q >&2; exit 1;;\n", arg, msg)
	}
	script := fmt.Sprintf("#!/bin/sh\necho call >> %s\nfor a in \"$@\"; do\n  case \"$a\" in\n%s  esac\ndone\nexec cc \"$@\"\n", log, cases.String())
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path, log
}

func calls(t *testing.T, log string) int {
	t.Helper()
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "call")
}

func TestAnOlderToolchainCompilesWithoutWhatItRefuses(t *testing.T) {
	needCC(t)
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		t.Skip("-lmvec is added on linux/amd64 only")
	}
	path, log := fakeCompiler(t, map[string]string{
		"-fvect-cost-model=very-cheap": "cc1: error: unknown vectorizer cost model 'very-cheap'",
		"-lmvec":                       "/usr/bin/ld: cannot find -lmvec",
	})
	c := Compiler{Path: path}
	for i, want := range []int{3, 4} { // refused twice, then built; then built at once
		out := filepath.Join(t.TempDir(), "add.so")
		if err := c.Compile(context.Background(), addSrc, out); err != nil {
			t.Fatalf("compile %d: %v", i, err)
		}
		if got := calls(t, log); got != want {
			t.Errorf("after compile %d: %d compiler calls, want %d", i, got, want)
		}
		lib, err := Open(out)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := lib.Kernel("nf_add", 3); err != nil {
			t.Fatal(err)
		}
	}
	line := c.CommandLine(path, "k.c", "k.so")
	if slices.Contains(line, "-lmvec") || slices.Contains(line, "-fvect-cost-model=very-cheap") {
		t.Errorf("later command lines keep a refused argument: %v", line)
	}
	if line := (Compiler{}).CommandLine("cc", "k.c", "k.so"); !slices.Contains(line, "-lmvec") {
		t.Errorf("another compiler lost -lmvec: %v", line)
	}
}

func TestACompilerWithoutOpenMPIsNamed(t *testing.T) {
	needCC(t)
	path, _ := fakeCompiler(t, map[string]string{"-fopenmp": "clang: error: unsupported option '-fopenmp'"})
	err := Compiler{Path: path}.Compile(context.Background(), addSrc, filepath.Join(t.TempDir(), "add.so"))
	if err == nil || !strings.Contains(err.Error(), "seems to lack OpenMP") || !strings.Contains(err.Error(), "NEOFLOW_CC") {
		t.Fatalf("want an error naming OpenMP, got %v", err)
	}
}

// TestStopAllKillsRunningCompilers: at exit, a background compile (one no
// interrupt reaches) is killed with its children, and no compiler starts
// after. It runs in a child process: StopAll is for good.
func TestStopAllKillsRunningCompilers(t *testing.T) {
	if os.Getenv("NEOFLOW_TEST_STOPALL") == "" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestStopAllKillsRunningCompilers$", "-test.v")
		cmd.Env = append(os.Environ(), "NEOFLOW_TEST_STOPALL=1")
		if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "--- PASS") {
			t.Fatalf("child: %v\n%s", err, out)
		}
		return
	}
	dir := t.TempDir()
	slow, pids := slowCompiler(t, dir)
	done := make(chan error, 1)
	go func() {
		done <- Compiler{Path: slow}.Compile(WithLowPriority(context.Background()), "int x;", filepath.Join(dir, "k.so"))
	}()
	var started []string
	for range 3000 { // the script has written both pids
		b, _ := os.ReadFile(pids)
		if started = strings.Fields(string(b)); len(started) == 2 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if len(started) != 2 {
		t.Fatalf("the compiler did not start: %v", started)
	}
	// The script may write its pids before Compile tracks its process
	// group (track follows cmd.Start): on a busy machine, wait for that too.
	for i := 0; i < 3000 && tracked() == 0; i++ {
		time.Sleep(10 * time.Millisecond)
	}
	if n := StopAll(); n != 1 {
		t.Errorf("StopAll killed %d compilers, want 1", n)
	}
	if err := <-done; err == nil {
		t.Fatal("a killed compile succeeded")
	}
	expectGone(t, started, "StopAll")
	err := Compiler{Path: slow}.Compile(context.Background(), "int x;", filepath.Join(dir, "k2.so"))
	if err == nil || !strings.Contains(err.Error(), "exiting") {
		t.Errorf("a compile after StopAll: %v, want the process-is-exiting error", err)
	}
}

// tracked is how many compilers StopAll would kill now.
func tracked() int {
	running.Lock()
	defer running.Unlock()
	return len(running.groups)
}

// slowCompiler writes a fake compiler into dir that runs 600 s with a
// child holding its output (as gcc's cc1 does), each writing its pid to
// the file pids.
func slowCompiler(t *testing.T, dir string) (path, pids string) {
	t.Helper()
	path, pids = filepath.Join(dir, "slowcc"), filepath.Join(dir, "pids")
	script := fmt.Sprintf("#!/bin/sh\necho $$ >> %s\nsleep 600 &\necho $! >> %s\nsleep 600\n", pids, pids)
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path, pids
}

// expectGone fails the test for each of pids still running 30 s after
// what (the event that should have killed them).
func expectGone(t *testing.T, pids []string, what string) {
	t.Helper()
	for _, p := range pids {
		pid, _ := strconv.Atoi(p)
		for i := 0; i < 3000 && alive(pid); i++ {
			time.Sleep(10 * time.Millisecond)
		}
		if alive(pid) {
			t.Errorf("compiler process %d outlived %s", pid, what)
		}
	}
}

// alive reports whether process pid exists and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	fields := strings.Fields(s[strings.LastIndex(s, ")")+1:])
	return len(fields) > 0 && fields[0] != "Z"
}
