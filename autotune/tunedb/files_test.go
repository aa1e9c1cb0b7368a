package tunedb

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/neoflow/neoflow/internal/fsutil"
)

// within runs f and fails the test if it has not returned within d.
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
		t.Fatalf("%s did not return within %v: it blocks on a damaged entry file", what, d)
	}
}

// TestDamagedEntryFiles replaces an entry with files Put never writes:
// List, Get and Put return at once, report the entry as corrupt with its
// path and the problem, move it aside, and Put stores a new record.
func TestDamagedEntryFiles(t *testing.T) {
	k := key("victim")
	huge := record(k, "victim", 1e-3)
	huge.Failures[0].Error = strings.Repeat("x", maxRecordSize)
	hugeFile, err := frame(huge)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, reason string
		make         func(path string) error
	}{
		{"FIFO", "not a regular file", func(p string) error { return syscall.Mkfifo(p, 0o600) }},
		{"link to /dev/zero", "symbolic link", func(p string) error { return os.Symlink("/dev/zero", p) }},
		{"link to a record", "symbolic link", func(p string) error {
			valid, _ := frame(record(k, "victim", 1e-3))
			if err := os.WriteFile(p+".elsewhere", valid, 0o600); err != nil {
				return err
			}
			return os.Symlink(p+".elsewhere", p)
		}},
		{"too large", fmt.Sprintf("more than the limit of %d", maxRecordSize), func(p string) error { return os.WriteFile(p, hugeFile, 0o600) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			db, l := openDB(t, dir)
			path := filepath.Join(dir, ID(k))
			damage := func() {
				t.Helper()
				os.Remove(path)
				os.Remove(path + ".corrupt")
				if err := c.make(path); err != nil {
					t.Fatal(err)
				}
			}
			warned := func(what string) {
				t.Helper()
				w := l.take()
				if len(w) != 1 || !strings.Contains(w[0], path) || !strings.Contains(w[0], c.reason) || !strings.Contains(w[0], "corrupt") {
					t.Errorf("%s: warnings %q, want one naming %s and %q", what, w, path, c.reason)
				}
				if _, err := os.Lstat(path + ".corrupt"); err != nil {
					t.Errorf("%s: not moved aside: %v", what, err)
				}
			}

			damage()
			within(t, 10*time.Second, "List", func() error {
				entries, err := db.List()
				if err == nil && len(entries) != 0 {
					err = fmt.Errorf("listed %d records", len(entries))
				}
				return err
			})
			warned("List")

			damage()
			within(t, 10*time.Second, "Get", func() error {
				r, ok, err := db.Get(k)
				if err == nil && (r != nil || ok) {
					err = fmt.Errorf("got a record (op %q)", r.GetOpName())
				}
				return err
			})
			warned("Get")

			damage()
			within(t, 10*time.Second, "Put", func() error {
				_, err := db.Put(record(k, "victim", 2e-3))
				return err
			})
			warned("Put")
			if got := mustGet(t, db, k); got.BestSeconds != 2e-3 {
				t.Errorf("after Put: %v", got)
			}
		})
	}
}

func TestPutRefusesTooLarge(t *testing.T) {
	db, _ := openDB(t, t.TempDir())
	r := record(key("k"), "op", 1)
	r.Failures[0].Error = strings.Repeat("x", maxRecordSize)
	if _, err := db.Put(r); err == nil || !strings.Contains(err.Error(), "more than the limit") {
		t.Errorf("Put of a record over the limit: %v", err)
	}
}

// TestDeletedDirRecreated deletes the database directory under an open
// DB: it then holds no records, and the next Put creates it again.
func TestDeletedDirRecreated(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tune")
	db, _ := openDB(t, dir)
	k := key("k")
	mustPut(t, db, record(k, "op", 1), true)
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if r, ok, err := db.Get(k); r != nil || ok || err != nil {
		t.Errorf("Get: %v %v %v", r, ok, err)
	}
	if entries, err := db.List(); len(entries) != 0 || err != nil {
		t.Errorf("List: %v %v", entries, err)
	}
	if n, err := db.Clear(); n != 0 || err != nil {
		t.Errorf("Clear: %v %v", n, err)
	}
	mustPut(t, db, record(k, "op", 1), true)
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("%s: %v %v", dir, fi, err)
	}
	mustGet(t, db, k)
}

// TestStaleTempsRemoved leaves the temporary file of a killed writer
// and of a writer still running (its id's lock held): Open removes the
// first and keeps the second.
func TestStaleTempsRemoved(t *testing.T) {
	dir := t.TempDir()
	dead, live := ID(key("dead")), ID(key("live"))
	stale, kept := filepath.Join(dir, dead+".123.tmp"), filepath.Join(dir, live+".456.tmp")
	other := filepath.Join(dir, "notes.tmp")
	for _, p := range []string{stale, kept, other} {
		if err := os.WriteFile(p, []byte("partial"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	unlock, err := fsutil.Lock(filepath.Join(dir, live+".lock"))
	if err != nil {
		t.Fatal(err)
	}
	openDB(t, dir)
	unlock()
	if _, err := os.Lstat(stale); !os.IsNotExist(err) {
		t.Errorf("left by a killed writer and not removed: %s (%v)", stale, err)
	}
	for _, p := range []string{kept, other} {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("removed though not stale: %s (%v)", p, err)
		}
	}
}
