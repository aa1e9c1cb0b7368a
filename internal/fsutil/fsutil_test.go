package fsutil

import (
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestLockExcludes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	unlock, err := Lock(path)
	if err != nil {
		t.Fatal(err)
	}
	var got atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		u, err := Lock(path)
		if err != nil {
			t.Error(err)
			return
		}
		got.Store(true)
		u()
	}()
	time.Sleep(50 * time.Millisecond)
	if got.Load() {
		t.Fatal("a second Lock of a held lock file returned")
	}
	unlock()
	<-done
	if !got.Load() {
		t.Error("the waiting Lock never got the lock")
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("lock file: %v %v", fi, err)
	}
}

func TestCheckPrivate(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "d")
	file := filepath.Join(dir, "f")
	link := filepath.Join(root, "link")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		err  error
		want string // "" for no error
	}{
		{"private dir", CheckPrivateDir(dir, false), ""},
		{"private file", CheckPrivateFile(file), ""},
		{"followed link", CheckPrivateDir(link, true), ""},
		{"unfollowed link", CheckPrivateDir(link, false), "symbolic link"},
		{"file as dir", CheckPrivateDir(file, false), "not a directory"},
		{"dir as file", CheckPrivateFile(dir), "not a regular file"},
		{"missing", CheckPrivateFile(filepath.Join(root, "none")), "no such file"},
	} {
		if c.want == "" && c.err != nil || c.want != "" && (c.err == nil || !strings.Contains(c.err.Error(), c.want)) {
			t.Errorf("%s: got %v, want %q", c.name, c.err, c.want)
		}
	}
	for _, mode := range []os.FileMode{0o720, 0o702} {
		os.Chmod(dir, mode)
		err := CheckPrivateDir(dir, false)
		if err == nil || !strings.Contains(err.Error(), "refusing to use "+dir+": mode") || !strings.Contains(err.Error(), "group- or world-writable") {
			t.Errorf("mode %v: %v", mode, err)
		}
	}
	os.Chmod(dir, 0o700)
	os.Chmod(file, 0o620)
	if err := CheckPrivateFile(file); err == nil || !strings.Contains(err.Error(), "group- or world-writable") {
		t.Errorf("group-writable file: %v", err)
	}
}

func TestWriteFileAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	for _, content := range []string{"first", "second, longer"} {
		if err := WriteFileAtomic(path, []byte(content), 0o640); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(path)
		if err != nil || string(b) != content {
			t.Errorf("read %q, %v; want %q", b, err, content)
		}
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o640 {
		t.Errorf("mode: %v %v", fi, err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("files left: %v", entries)
	}
	if err := WriteFileAtomic(filepath.Join(dir, "none", "f"), nil, 0o600); err == nil {
		t.Error("no error writing into a missing directory")
	}
}
