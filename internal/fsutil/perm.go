package fsutil

import (
	"os"
	"syscall"

	"github.com/pkg/errors"
)

// CheckPrivateDir refuses dir unless it is a directory owned by the
// current user and not writable by group or others. A symbolic link to
// such a directory is accepted when followLink is set (a store's root may
// be a link; the directories inside it may not).
func CheckPrivateDir(dir string, followLink bool) error {
	return checkPrivate(dir, true, followLink)
}

// CheckPrivateFile refuses path unless it is a regular file (not a
// symbolic link) owned by the current user and not writable by group or
// others.
func CheckPrivateFile(path string) error {
	return checkPrivate(path, false, false)
}

func checkPrivate(path string, dir, follow bool) error {
	stat := os.Lstat
	if follow {
		stat = os.Stat
	}
	fi, err := stat(path)
	if err != nil {
		return errors.WithStack(err)
	}
	refuse := func(format string, args ...any) error {
		return errors.Errorf("refusing to use %s: "+format, append([]any{path}, args...)...)
	}
	switch {
	case fi.Mode()&os.ModeSymlink != 0:
		return refuse("it is a symbolic link")
	case dir && !fi.IsDir():
		return refuse("not a directory")
	case !dir && !fi.Mode().IsRegular():
		return refuse("not a regular file (mode %v)", fi.Mode())
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		if uid := os.Getuid(); int(st.Uid) != uid {
			return refuse("owned by uid %d, not the current user (uid %d)", st.Uid, uid)
		}
	}
	if fi.Mode().Perm()&0o022 != 0 {
		return refuse("mode %v is group- or world-writable (chmod go-w it, or use a private directory)", fi.Mode())
	}
	return nil
}
