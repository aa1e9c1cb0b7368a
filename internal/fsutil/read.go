package fsutil

import (
	"io"
	"os"
	"syscall"

	"github.com/pkg/errors"
)

// ErrRefused marks the errors of OpenRegular and ReadFile that are about
// the file itself (not a regular file, a symbolic link, another user's,
// too large): a store treats such a file as a damaged entry. Test with
// errors.Is.
var ErrRefused = errors.New("refused")

// refusedError names the path and why it was refused; it is ErrRefused.
type refusedError struct{ path, why string }

func (e *refusedError) Error() string        { return "refusing to read " + e.path + ": " + e.why }
func (e *refusedError) Is(target error) bool { return target == ErrRefused }

func refused(path, format string, args ...any) error {
	return &refusedError{path, errors.Errorf(format, args...).Error()}
}

// OpenRegular opens path for reading without blocking and without
// following a symbolic link, and refuses (ErrRefused) anything but a
// regular file owned by the current user of at most limit bytes. The file
// is Lstat'ed before it is opened, so a FIFO, socket or device is never
// opened, and the open file is checked again (it may have been replaced
// in between). A missing file gives an error satisfying
// errors.Is(err, fs.ErrNotExist).
func OpenRegular(path string, limit int64) (*os.File, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, errors.WithStack(err)
	}
	if err := checkRegular(path, fi, limit); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOFOLLOW|syscall.O_NOCTTY, 0)
	if errors.Is(err, syscall.ELOOP) {
		return nil, refused(path, "it is a symbolic link")
	}
	if err != nil {
		return nil, errors.WithStack(err)
	}
	ofi, err := f.Stat()
	if err == nil {
		err = checkRegular(path, ofi, limit)
	}
	if err == nil && !os.SameFile(fi, ofi) {
		err = refused(path, "it was replaced while being opened")
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// checkRegular refuses fi (of path) unless it is a regular file owned by
// the current user of at most limit bytes.
func checkRegular(path string, fi os.FileInfo, limit int64) error {
	switch {
	case fi.Mode()&os.ModeSymlink != 0:
		return refused(path, "it is a symbolic link")
	case !fi.Mode().IsRegular():
		return refused(path, "not a regular file (mode %v)", fi.Mode())
	case fi.Size() > limit:
		return refused(path, "it is %d bytes, more than the limit of %d", fi.Size(), limit)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		if uid := os.Getuid(); int(st.Uid) != uid {
			return refused(path, "owned by uid %d, not the current user (uid %d)", st.Uid, uid)
		}
	}
	return nil
}

// ReadFile reads the file at path as OpenRegular opens it: never more
// than limit bytes (a file that grows past it while being read is
// refused too), never blocking on a FIFO or device, never following a
// symbolic link.
func ReadFile(path string, limit int64) ([]byte, error) {
	f, err := OpenRegular(path, limit)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, errors.Wrapf(err, "reading %s", path)
	}
	if int64(len(data)) > limit {
		return nil, refused(path, "it grew past the limit of %d bytes while being read", limit)
	}
	return data, nil
}
