package fsutil

import (
	"os"
	"syscall"

	"github.com/pkg/errors"
)

// ErrLocked is TryLock's error when another holder has the lock.
var ErrLocked = errors.New("held by another writer")

// Lock takes an exclusive flock on path (created with mode 0600 if
// missing), waiting for other holders, and returns the function that
// releases it. Locks belong to the open file, so two Lock calls in one
// process exclude each other as well. Where the file system does not
// support flock (some network mounts) Lock returns a no-op unlock: callers
// must stay consistent without it (atomic renames), at worst doing
// duplicate work. The lock file is left in place: removing it while
// another process waits on it would let a third one lock a new file.
func Lock(path string) (unlock func(), err error) {
	unlock, _, err = lock(path, syscall.LOCK_EX)
	return unlock, err
}

// TryLock is Lock without waiting: it fails with ErrLocked when another
// holder has the lock. held is false where the file system does not
// support flock (unlock is then a no-op and nothing is excluded).
func TryLock(path string) (unlock func(), held bool, err error) {
	return lock(path, syscall.LOCK_EX|syscall.LOCK_NB)
}

func lock(path string, how int) (unlock func(), held bool, err error) {
	// O_NONBLOCK: opening a lock file that is a FIFO must not wait for a
	// writer (flock still waits unless LOCK_NB is given).
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_NONBLOCK, 0o600)
	if err != nil {
		return nil, false, errors.Wrap(err, "lock")
	}
	for {
		err = syscall.Flock(int(f.Fd()), how)
		if err != syscall.EINTR {
			break
		}
	}
	if err == syscall.ENOLCK || err == syscall.EOPNOTSUPP || err == syscall.ENOSYS {
		f.Close()
		return func() {}, false, nil
	}
	if err == syscall.EWOULDBLOCK {
		f.Close()
		return nil, false, errors.Wrapf(ErrLocked, "lock %s", path)
	}
	if err != nil {
		f.Close()
		return nil, false, errors.Wrapf(err, "lock %s", path)
	}
	return func() {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, true, nil
}
