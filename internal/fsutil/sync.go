package fsutil

import (
	"os"
	"path/filepath"

	"github.com/pkg/errors"
)

// SyncFile fsyncs the file at path (one written by another program, such
// as a linker).
func SyncFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return errors.WithStack(err)
	}
	defer f.Close()
	return errors.Wrapf(f.Sync(), "fsync %s", path)
}

// SyncDir fsyncs a directory so that renames into it are durable. Only a
// failure to open it is an error: some file systems cannot fsync
// directories, and the renames are still atomic there.
func SyncDir(dir string) error {
	d, err := os.Open(filepath.Clean(dir))
	if err != nil {
		return errors.WithStack(err)
	}
	defer d.Close()
	d.Sync()
	return nil
}
