package cache

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/neoflow/neoflow/internal/fsutil"
)

// hangLimit bounds a Get that must not block on a damaged entry file. It
// covers a rebuild (running the C compiler) on a loaded machine; a read
// that blocks never returns at all.
const hangLimit = 60 * time.Second

// within runs f and fails the test if it has not returned after d.
func within(t *testing.T, d time.Duration, what string, f func() error) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	case <-time.After(d):
		t.Fatalf("%s did not return within %v: it blocks on a damaged cache file", what, d)
	}
}

// reports collects a Cache's Logf lines.
type reports struct {
	mu    sync.Mutex
	lines []string
}

func (r *reports) logf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lines = append(r.lines, fmt.Sprintf(format, args...))
}

func (r *reports) text() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.lines, "\n")
}

// TestDamagedFilesRebuild replaces an entry's metadata (or its .so) with
// files no build writes: each Get returns at once, reports the entry as
// corrupt naming the problem, and rebuilds it.
func TestDamagedFilesRebuild(t *testing.T) {
	comp, log := fakeCompiler(t)
	dir := t.TempDir()
	c := newCache(t, dir, comp)
	get(t, c, Miss)
	key := c.Key(testSrc)
	so, meta := c.Paths(key)
	good, err := os.ReadFile(meta)
	if err != nil {
		t.Fatal(err)
	}
	for i, damage := range []struct {
		name, file, reason string
		do                 func(path string) error
	}{
		{"metadata is a FIFO", meta, "not a regular file", func(p string) error { return syscall.Mkfifo(p, 0o600) }},
		{"metadata links to /dev/zero", meta, "symbolic link", func(p string) error { return os.Symlink("/dev/zero", p) }},
		{"metadata is a directory", meta, "not a regular file", func(p string) error { return os.Mkdir(p, 0o700) }},
		{"metadata is too large", meta, "more than the limit of 1048576", func(p string) error {
			// Valid metadata padded past the limit: only the limit refuses it.
			return os.WriteFile(p, append(good[:len(good):len(good)], strings.Repeat(" ", maxMetaSize)...), 0o600)
		}},
		{"library is a FIFO", so, "not a regular file", func(p string) error { return syscall.Mkfifo(p, 0o700) }},
	} {
		t.Run(damage.name, func(t *testing.T) {
			// Replace by removing: this process has the library mapped.
			if err := os.Remove(damage.file); err != nil {
				t.Fatal(err)
			}
			if err := damage.do(damage.file); err != nil {
				t.Fatal(err)
			}
			var r reports
			c2, err := New(Config{Dir: dir, Compiler: comp, Version: "test-1", Logf: r.logf})
			if err != nil {
				t.Fatal(err)
			}
			within(t, hangLimit, "Get", func() error {
				_, outcome, err := c2.Get(context.Background(), key, testSrc, "test")
				if err == nil && outcome != Rebuilt {
					err = fmt.Errorf("outcome %v, want rebuilt", outcome)
				}
				return err
			})
			got := r.text()
			t.Log(got)
			if !strings.Contains(got, "is corrupt") || !strings.Contains(got, damage.file) || !strings.Contains(got, damage.reason) {
				t.Errorf("report %q, want one naming %s and %q", got, damage.file, damage.reason)
			}
			if n := calls(t, log); n != i+2 {
				t.Errorf("compiler ran %d times in all, want %d", n, i+2)
			}
			for _, p := range []string{so, meta} {
				if fi, err := os.Lstat(p); err != nil || !fi.Mode().IsRegular() {
					t.Errorf("%s after the rebuild: %v %v", p, fi, err)
				}
			}
			get(t, newCache(t, dir, comp), Hit)
		})
	}
}

// TestDeletedDirRecreated deletes the cache directory under a Cache in
// use: the next build creates it again.
func TestDeletedDirRecreated(t *testing.T) {
	comp, _ := fakeCompiler(t)
	dir := filepath.Join(t.TempDir(), "cache")
	c := newCache(t, dir, comp)
	get(t, c, Miss)
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	get(t, c, Miss)
	so, _ := c.Paths(c.Key(testSrc))
	for _, p := range []string{dir, filepath.Dir(so)} {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o700 {
			t.Errorf("%s: %v %v", p, fi, err)
		}
	}
	get(t, newCache(t, dir, comp), Hit)
}

// TestStaleTempsRemoved leaves the temporary files of a killed build (and
// of a build still running, whose key's lock is held): a new Cache
// removes the first and keeps the second.
func TestStaleTempsRemoved(t *testing.T) {
	comp, _ := fakeCompiler(t)
	dir := t.TempDir()
	c := newCache(t, dir, comp)
	dead, live := c.Key("killed build"), c.Key("running build")
	var stale, kept []string
	for _, key := range []string{dead, live} {
		shard := filepath.Join(dir, key[:2])
		if err := os.MkdirAll(shard, 0o700); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{key + ".123.so.tmp", key + ".123.so.tmp.456.c", key + ".789.json.tmp", key + ".42.cubin.tmp"} {
			p := filepath.Join(shard, name)
			if err := os.WriteFile(p, []byte("partial"), 0o600); err != nil {
				t.Fatal(err)
			}
			if key == dead {
				stale = append(stale, p)
			} else {
				kept = append(kept, p)
			}
		}
	}
	other := filepath.Join(dir, dead[:2], "notes.tmp")
	os.WriteFile(other, nil, 0o600)
	unlock, err := fsutil.Lock(filepath.Join(dir, live[:2], live+".lock"))
	if err != nil {
		t.Fatal(err)
	}
	newCache(t, dir, comp)
	unlock()
	for _, p := range stale {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Errorf("left by a killed build and not removed: %s (%v)", p, err)
		}
	}
	for _, p := range append(kept, other) {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("removed though not stale: %s (%v)", p, err)
		}
	}
}
