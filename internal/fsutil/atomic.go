package fsutil

import (
	"os"
	"path/filepath"

	"github.com/pkg/errors"
)

// WriteTemp writes data to a new file in dir named after pattern (as in
// os.CreateTemp), sets its mode to perm, fsyncs and closes it, and returns
// its name. On failure the file is removed.
func WriteTemp(dir, pattern string, data []byte, perm os.FileMode) (name string, err error) {
	f, err := os.CreateTemp(dir, pattern)
	if err != nil {
		return "", errors.WithStack(err)
	}
	name = f.Name()
	err = f.Chmod(perm)
	if err == nil {
		_, err = f.Write(data)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(name)
		return "", errors.WithStack(err)
	}
	return name, nil
}

// WriteFileAtomic replaces path with data (mode perm): it writes a
// temporary file next to path (named <base>.*.tmp), fsyncs it, renames it
// over path and fsyncs the directory. Readers see either the old file or
// the complete new one.
func WriteFileAtomic(path string, data []byte, perm os.FileMode) error {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	tmp, err := WriteTemp(dir, base+".*.tmp", data, perm)
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return errors.WithStack(err)
	}
	return SyncDir(dir)
}
