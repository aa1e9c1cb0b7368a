package cache

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/neoflow/neoflow/kernels/cc"
)

const testSrc = `#include <stdint.h>
void nf_test(void **bufs, int64_t nthreads)
{
	double *y = bufs[0];
	y[0] = 42 + (double)nthreads;
}
`

// fakeCompiler writes a compiler script that logs each call to a file and
// runs the real compiler.
func fakeCompiler(t *testing.T) (cc.Compiler, string) {
	t.Helper()
	real, err := exec.LookPath("cc")
	if err != nil {
		t.Fatal("no C compiler (cc) on PATH: the kernels need one")
	}
	dir := t.TempDir()
	log := filepath.Join(dir, "calls.log")
	script := filepath.Join(dir, "fakecc")
	body := fmt.Sprintf("#!/bin/sh\necho \"$@\" >> %q\nexec %q \"$@\"\n", log, real)
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return cc.Compiler{Path: script}, log
}

func calls(t *testing.T, log string) int {
	t.Helper()
	b, err := os.ReadFile(log)
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}

func newCache(t *testing.T, dir string, comp cc.Compiler) *Cache {
	t.Helper()
	c, err := New(Config{Dir: dir, Compiler: comp, Version: "test-1", Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func get(t *testing.T, c *Cache, want Outcome) *cc.Library {
	t.Helper()
	lib, got, err := c.Get(context.Background(), c.Key(testSrc), testSrc, "test")
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("outcome %v, want %v", got, want)
	}
	if _, err := lib.Symbol("nf_test"); err != nil {
		t.Error(err)
	}
	return lib
}

func TestHitDoesNotCompile(t *testing.T) {
	comp, log := fakeCompiler(t)
	dir := filepath.Join(t.TempDir(), "cache")
	get(t, newCache(t, dir, comp), Miss)
	if n := calls(t, log); n != 1 {
		t.Fatalf("compiler ran %d times for a miss", n)
	}
	// A fresh Cache stands for a second process.
	c2 := newCache(t, dir, comp)
	get(t, c2, Hit)
	if n := calls(t, log); n != 1 {
		t.Errorf("a hit ran the compiler (%d calls)", n)
	}
	if s := c2.Stats(); s != (Stats{Hits: 1}) {
		t.Errorf("stats %+v", s)
	}
	key := c2.Key(testSrc)
	so, meta := c2.Paths(key)
	if so != filepath.Join(dir, key[:2], key+".so") || meta != filepath.Join(dir, key[:2], key+".json") {
		t.Errorf("layout: %s %s", so, meta)
	}
	for _, p := range []string{dir, filepath.Dir(so)} {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o700 {
			t.Errorf("%s: mode %v, %v", p, fi.Mode(), err)
		}
	}
	entries, _ := os.ReadDir(filepath.Dir(so))
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp") || strings.HasSuffix(e.Name(), ".c") {
			t.Errorf("temporary file left: %s", e.Name())
		}
	}
}

func TestKey(t *testing.T) {
	comp, _ := fakeCompiler(t)
	dir := t.TempDir()
	a := newCache(t, dir, comp)
	if a.Key(testSrc) != newCache(t, dir, comp).Key(testSrc) {
		t.Error("key differs between caches")
	}
	if a.Key(testSrc) == a.Key(testSrc+" ") {
		t.Error("key ignores the source")
	}
	b, err := New(Config{Dir: dir, Compiler: comp, Version: "test-2"})
	if err != nil {
		t.Fatal(err)
	}
	if a.Key(testSrc) == b.Key(testSrc) {
		t.Error("key ignores the version")
	}
	comp.Flags = []string{"-O2", "-fPIC", "-shared"}
	b, err = New(Config{Dir: dir, Compiler: comp, Version: "test-1"})
	if err != nil {
		t.Fatal(err)
	}
	if a.Key(testSrc) == b.Key(testSrc) {
		t.Error("key ignores the flags")
	}
	if _, _, err := a.Get(context.Background(), "../../etc", testSrc, "x"); err == nil {
		t.Error("invalid key accepted")
	}
}

func TestCorruptionRebuilds(t *testing.T) {
	comp, log := fakeCompiler(t)
	dir := t.TempDir()
	c := newCache(t, dir, comp)
	get(t, c, Miss)
	so, meta := c.Paths(c.Key(testSrc))
	// Corrupt files by replacing them: this process has the library
	// mapped, and rewriting a mapped file in place would crash it.
	replace := func(path string, b []byte, mode os.FileMode) error {
		if err := os.WriteFile(path+".new", b, mode); err != nil {
			return err
		}
		return os.Rename(path+".new", path)
	}
	for i, corrupt := range []struct {
		name string
		do   func() error
	}{
		{"garbage .so", func() error { return replace(so, []byte("garbage"), 0o700) }},
		{"flipped byte", func() error {
			b, err := os.ReadFile(so)
			if err != nil {
				return err
			}
			b[len(b)/2] ^= 0xff
			return replace(so, b, 0o700)
		}},
		{"truncated metadata", func() error { return replace(meta, []byte(`{"key": "ab`), 0o600) }},
		{"missing metadata", func() error { return os.Remove(meta) }},
		{"missing .so", func() error { return os.Remove(so) }},
	} {
		if err := corrupt.do(); err != nil {
			t.Fatal(err)
		}
		// A fresh Cache so that the library is dlopened from disk anew.
		c2 := newCache(t, dir, comp)
		get(t, c2, Rebuilt)
		if s := c2.Stats(); s.Rebuilt != 1 {
			t.Errorf("%s: stats %+v", corrupt.name, s)
		}
		if n := calls(t, log); n != i+2 {
			t.Errorf("%s: compiler ran %d times in all, want %d", corrupt.name, n, i+2)
		}
		get(t, newCache(t, dir, comp), Hit)
	}
}

func TestRefusesForeignPermissions(t *testing.T) {
	comp, _ := fakeCompiler(t)
	dir := t.TempDir()
	c := newCache(t, dir, comp)
	get(t, c, Miss)
	so, _ := c.Paths(c.Key(testSrc))
	shard := filepath.Dir(so)

	if err := os.Chmod(so, 0o722); err != nil {
		t.Fatal(err)
	}
	_, _, err := newCache(t, dir, comp).Get(context.Background(), c.Key(testSrc), testSrc, "test")
	if err == nil || !strings.Contains(err.Error(), "group- or world-writable") {
		t.Errorf("group-writable .so: %v", err)
	}
	if _, err := os.Stat(so); err != nil {
		t.Errorf("refused entry was touched: %v", err)
	}
	os.Chmod(so, 0o700)

	if err := os.Chmod(shard, 0o777); err != nil {
		t.Fatal(err)
	}
	_, _, err = newCache(t, dir, comp).Get(context.Background(), c.Key(testSrc), testSrc, "test")
	if err == nil || !strings.Contains(err.Error(), "refusing to use "+shard) {
		t.Errorf("world-writable shard: %v", err)
	}
	os.Chmod(shard, 0o700)

	link := so + ".link"
	os.Rename(so, link)
	os.Symlink(link, so)
	_, _, err = newCache(t, dir, comp).Get(context.Background(), c.Key(testSrc), testSrc, "test")
	if err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("symlinked .so: %v", err)
	}

	open := filepath.Join(t.TempDir(), "open")
	os.Mkdir(open, 0o777)
	os.Chmod(open, 0o777)
	if _, err := New(Config{Dir: open, Compiler: comp}); err == nil || !strings.Contains(err.Error(), "group- or world-writable") {
		t.Errorf("world-writable cache dir: %v", err)
	}
}

// TestMissingCompiler: a cache whose compiler does not resolve opens (its
// kernels may all be there, or come from a bundle), and a build that
// needs the compiler fails naming it, leaving no entry behind.
func TestMissingCompiler(t *testing.T) {
	dir := t.TempDir()
	c, err := New(Config{Dir: dir, Compiler: cc.Compiler{Path: "xyz-no-cc"}})
	if err != nil {
		t.Fatal(err)
	}
	src := "int f(void) { return 1; }\n"
	_, _, err = c.Get(context.Background(), c.Key(src), src, "op")
	if err == nil || !strings.Contains(err.Error(), `C compiler "xyz-no-cc" not found on PATH (set NEOFLOW_CC to a working compiler)`) {
		t.Errorf("got %v", err)
	}
	if so, _ := c.Paths(c.Key(src)); fileExists(so) {
		t.Errorf("a failed build left %s", so)
	}
}

func TestCompileFailure(t *testing.T) {
	comp, _ := fakeCompiler(t)
	dir := t.TempDir()
	c := newCache(t, dir, comp)
	bad := "this is not C\n"
	_, _, err := c.Get(context.Background(), c.Key(bad), bad, "bad")
	if err == nil || !strings.Contains(err.Error(), "compiling kernel bad") || !strings.Contains(err.Error(), "error") {
		t.Fatalf("got %v", err)
	}
	key := c.Key(bad)
	entries, _ := os.ReadDir(filepath.Join(dir, key[:2]))
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".lock") {
			t.Errorf("left behind after a failed build: %s", e.Name())
		}
	}
}

func TestConcurrentBuilders(t *testing.T) {
	comp, log := fakeCompiler(t)
	dir := t.TempDir()
	const n = 6
	var wg sync.WaitGroup
	errs := make(chan error, n)
	outcomes := make(chan Outcome, n)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := New(Config{Dir: dir, Compiler: comp, Version: "test-1"})
			if err != nil {
				errs <- err
				return
			}
			lib, o, err := c.Get(context.Background(), c.Key(testSrc), testSrc, "test")
			if err == nil {
				_, err = lib.Symbol("nf_test")
			}
			errs <- err
			outcomes <- o
		}()
	}
	wg.Wait()
	close(errs)
	close(outcomes)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	misses := 0
	for o := range outcomes {
		if o == Miss {
			misses++
		}
	}
	if misses != 1 || calls(t, log) != 1 {
		t.Errorf("%d misses and %d compiler runs for %d concurrent builders, want 1 and 1", misses, calls(t, log), n)
	}
}

// TestConcurrentProcesses runs builders of one key in separate processes
// (this test binary re-executed).
func TestConcurrentProcesses(t *testing.T) {
	comp, log := fakeCompiler(t)
	dir := t.TempDir()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	const n = 4
	cmds := make([]*exec.Cmd, n)
	outs := make([]strings.Builder, n)
	for i := range cmds {
		cmd := exec.Command(exe, "-test.run=^TestHelperProcess$", "-test.count=1")
		cmd.Env = append(os.Environ(), "NEOFLOW_CACHE_HELPER_DIR="+dir, "NEOFLOW_CACHE_HELPER_CC="+comp.Path)
		cmd.Stdout, cmd.Stderr = &outs[i], &outs[i]
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds[i] = cmd
	}
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Errorf("process %d: %v\n%s", i, err, outs[i].String())
		}
	}
	if got := calls(t, log); got != 1 {
		t.Errorf("compiler ran %d times for %d processes", got, n)
	}
}

func TestHelperProcess(t *testing.T) {
	dir := os.Getenv("NEOFLOW_CACHE_HELPER_DIR")
	if dir == "" {
		t.Skip("helper for TestConcurrentProcesses")
	}
	c, err := New(Config{Dir: dir, Compiler: cc.Compiler{Path: os.Getenv("NEOFLOW_CACHE_HELPER_CC")}, Version: "test-1"})
	if err != nil {
		t.Fatal(err)
	}
	lib, _, err := c.Get(context.Background(), c.Key(testSrc), testSrc, "test")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lib.Symbol("nf_test"); err != nil {
		t.Fatal(err)
	}
}

// TestEntryWithoutTheSymbol: an entry whose library lacks the symbol the
// caller needs (compiled by a neoflow that named its kernels otherwise,
// under the same key) is corrupt: it is deleted and rebuilt from the
// source, with a report.
func TestEntryWithoutTheSymbol(t *testing.T) {
	var logs []string
	dir := t.TempDir()
	c, err := New(Config{Dir: dir, Logf: func(f string, a ...any) { logs = append(logs, fmt.Sprintf(f, a...)) }})
	if err != nil {
		t.Fatal(err)
	}
	key := c.Key(testSrc)
	lib, _, err := c.Get(context.Background(), key, testSrc, "old")
	if err != nil {
		t.Fatal(err)
	}
	_ = lib.Close()
	renamed := strings.Replace(testSrc, "nf_test", "nf_test_v2", 1)
	lib, outcome, err := c.Get(context.Background(), key, renamed, "new", "nf_test_v2")
	if err != nil {
		t.Fatal(err)
	}
	defer lib.Close()
	if _, err := lib.Symbol("nf_test_v2"); err != nil || outcome != Rebuilt {
		t.Fatalf("outcome %v, symbol: %v", outcome, err)
	}
	if len(logs) != 1 || !strings.Contains(logs[0], "no symbol nf_test_v2") {
		t.Fatalf("reports %q", logs)
	}
}
