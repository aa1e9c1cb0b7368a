package cache

import (
	"os"
	"syscall"

	"github.com/pkg/errors"
)

// checkPrivate refuses a path not owned by the current user or writable by
// group or others. Links are refused unless follow is set (the cache root
// may be a link; shard directories and files may not).
func checkPrivate(path string, dir, follow bool) error {
	stat := os.Lstat
	if follow {
		stat = os.Stat
	}
	fi, err := stat(path)
	if err != nil {
		return errors.Wrap(err, "kernel cache")
	}
	refuse := func(format string, args ...any) error {
		return errors.Errorf("kernel cache: refusing to use %s: "+format, append([]any{path}, args...)...)
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
