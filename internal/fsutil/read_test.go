package fsutil

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	at := func(name string) string { return filepath.Join(dir, name) }
	os.WriteFile(at("ok"), []byte("12345"), 0o600)
	os.WriteFile(at("big"), []byte("123456"), 0o600)
	if err := syscall.Mkfifo(at("fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	os.Symlink("/dev/zero", at("zero"))
	os.Symlink(at("ok"), at("link"))
	os.Mkdir(at("dir"), 0o700)
	for _, c := range []struct {
		name, want string // want "" for no error
	}{
		{"ok", ""},
		{"big", "it is 6 bytes, more than the limit of 5"},
		{"fifo", "not a regular file (mode p"},
		{"zero", "it is a symbolic link"},
		{"link", "it is a symbolic link"},
		{"dir", "not a regular file (mode d"},
	} {
		done := make(chan struct{})
		var b []byte
		var err error
		go func() { defer close(done); b, err = ReadFile(at(c.name), 5) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: ReadFile blocked", c.name)
		}
		switch {
		case c.want == "" && (err != nil || string(b) != "12345"):
			t.Errorf("%s: %q %v", c.name, b, err)
		case c.want != "" && (err == nil || !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "refusing to read "+at(c.name)+": "+c.want)):
			t.Errorf("%s: got %v, want a refusal %q", c.name, err, c.want)
		}
	}
	if _, err := ReadFile(at("none"), 5); !errors.Is(err, fs.ErrNotExist) || errors.Is(err, ErrRefused) {
		t.Errorf("missing file: %v", err)
	}
}

func TestTryLockAndStaleTemps(t *testing.T) {
	dir := t.TempDir()
	unlock, err := Lock(filepath.Join(dir, "a.lock"))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := TryLock(filepath.Join(dir, "a.lock")); !errors.Is(err, ErrLocked) {
		t.Errorf("TryLock of a held lock: %v", err)
	}
	for _, n := range []string{"a.1.tmp", "b.1.tmp", "b.2.tmp", "c"} {
		os.WriteFile(filepath.Join(dir, n), nil, 0o600)
	}
	lockOf := func(name string) string {
		if strings.HasSuffix(name, ".tmp") {
			return name[:1] + ".lock"
		}
		return ""
	}
	removed := RemoveStaleTemps(dir, lockOf, time.Hour)
	want := []string{filepath.Join(dir, "b.1.tmp"), filepath.Join(dir, "b.2.tmp")}
	if strings.Join(removed, " ") != strings.Join(want, " ") {
		t.Errorf("removed %q, want %q", removed, want)
	}
	unlock()
	if removed := RemoveStaleTemps(dir, lockOf, time.Hour); len(removed) != 1 {
		t.Errorf("after unlocking removed %q", removed)
	}
	if _, err := os.Stat(filepath.Join(dir, "c")); err != nil {
		t.Error(err)
	}
}
