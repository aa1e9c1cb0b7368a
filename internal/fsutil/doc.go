// Package fsutil holds the file-system primitives shared by neoflow's
// on-disk stores (the kernel cache, kernels/cache, and the tuning
// database, autotune/tunedb).
//
//   - Lock takes an exclusive flock(2) on a lock file, serializing writers
//     of one entry across goroutines (each call opens its own file) and
//     processes. On file systems without flock it degrades to no locking.
//     TryLock is Lock without waiting.
//   - OpenRegular and ReadFile read a store's files: they open without
//     blocking (O_NONBLOCK) and without following a symbolic link
//     (O_NOFOLLOW), refuse anything but a regular file owned by the
//     current user (a FIFO, device, directory, or a link to /dev/zero is
//     never read), and refuse a file larger than the caller's limit;
//     refusals satisfy errors.Is(err, ErrRefused), so that a store can
//     treat the file as a damaged entry.
//   - RemoveStaleTemps removes the temporary files that killed writers
//     left: those whose writer's lock is free.
//   - CheckPrivateDir and CheckPrivateFile refuse a path that is not owned
//     by the current user, is group- or world-writable, is a symbolic link
//     (a directory may be allowed to be one) or is of the wrong kind.
//   - WriteTemp writes a byte slice to a new temporary file and fsyncs it;
//     WriteFileAtomic then renames such a file over its target and fsyncs
//     the directory, so readers see the old content or the new, never a
//     mix, and the new content survives a crash once it returns.
//   - SyncFile and SyncDir fsync an existing file or directory.
//
// Errors carry no prefix naming the store; callers wrap them with one.
// The package is for Unix-like systems.
package fsutil
