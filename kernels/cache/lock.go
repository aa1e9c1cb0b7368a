package cache

import (
	"os"
	"syscall"

	"github.com/pkg/errors"
)

// lockFile takes an exclusive flock on path (created if missing), waiting
// for other holders, and returns the function that releases it. Locks are
// per open file, so they also exclude other Caches in this process.
func lockFile(path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, errors.Wrap(err, "kernel cache: lock")
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if err != syscall.EINTR {
			break
		}
	}
	if err == syscall.ENOLCK || err == syscall.EOPNOTSUPP || err == syscall.ENOSYS {
		// No locking on this file system (some network mounts): go on
		// unlocked; the atomic renames keep entries consistent, at the
		// cost of duplicate compilations.
		f.Close()
		return func() {}, nil
	}
	if err != nil {
		f.Close()
		return nil, errors.Wrapf(err, "kernel cache: lock %s", path)
	}
	return func() {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
