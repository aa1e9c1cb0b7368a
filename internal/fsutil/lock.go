package fsutil

import (
	"os"
	"syscall"

	"github.com/pkg/errors"
)

// Lock takes an exclusive flock on path (created with mode 0600 if
// missing), waiting for other holders, and returns the function that
// releases it. Locks belong to the open file, so two Lock calls in one
// process exclude each other as well. Where the file system does not
// support flock (some network mounts) Lock returns a no-op unlock: callers
// must stay consistent without it (atomic renames), at worst doing
// duplicate work. The lock file is left in place: removing it while
// another process waits on it would let a third one lock a new file.
func Lock(path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, errors.Wrap(err, "lock")
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if err != syscall.EINTR {
			break
		}
	}
	if err == syscall.ENOLCK || err == syscall.EOPNOTSUPP || err == syscall.ENOSYS {
		f.Close()
		return func() {}, nil
	}
	if err != nil {
		f.Close()
		return nil, errors.Wrapf(err, "lock %s", path)
	}
	return func() {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
