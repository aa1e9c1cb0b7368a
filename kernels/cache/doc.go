// Package cache is neoflow's on-disk cache of compiled kernels.
//
// Entries are content-addressed: the key is the SHA-256 of the generated C
// source (which encodes the expression, shapes, dtype and schedule), the
// compiler identity (cc.Compiler.Identity: resolved path, size, mtime), the
// compiler flags, the neoflow version string and the host (OS,
// architecture and CPU model and features, since the default flags include
// -march=native). The layout under the cache directory is
//
//	<dir>/<key[:2]>/<key>.so    the compiled kernel
//	<dir>/<key[:2]>/<key>.json  Meta: the .so's SHA-256, the source's SHA-256,
//	                            op name, creation time, compiler, flags, version
//	<dir>/<key[:2]>/<key>.lock  serializes builds of the key (flock)
//
// Directories are created with mode 0700; a cache directory deleted while
// the process runs is created again by the next build. Before loading, the
// shard directory and the .so must be owned by the current user and not
// group- or world-writable (and the .so not a symbolic link); otherwise Get
// fails and touches nothing: a foreign .so is never loaded.
//
// Entry files are read with fsutil.ReadFile/OpenRegular: opened without
// blocking and without following a symbolic link, and refused unless they
// are a regular file owned by the current user of at most 1 MiB (the
// metadata) or 256 MiB (a .so, .cubin or .ptx). So a metadata file that is
// a FIFO, a directory, a link (to /dev/zero, say), another user's file or
// too large never blocks or exhausts a process: like an artifact that is a
// FIFO, socket, device or directory, it makes the entry corrupt.
//
// A hit verifies the .so against the checksum in its metadata before
// dlopen and never runs the compiler. A missing, unparsable or refused
// metadata file, a refused or damaged artifact, a checksum mismatch or a
// dlopen failure is reported (Config.Logf), counted (Stats.Rebuilt), and
// the entry is deleted and rebuilt.
//
// Builds are safe across processes: a builder takes an exclusive flock on
// the key's lock file, compiles into a temporary file in the shard
// directory, writes the metadata to another, fsyncs both and renames them
// into place, .so first. Readers that see anything inconsistent retry under
// the lock before declaring the entry corrupt, so concurrent builders of
// one key all succeed and compile it once (twice at most on file systems
// without flock). The locking, permission checks and fsyncs are
// internal/fsutil's.
//
// Temporary files (names starting <key>. and holding ".tmp": the
// artifact's, the metadata's and the compiler's .c source) exist only
// while their builder holds the key's lock. New removes those whose key's
// lock it can take at once, the leftovers of a killed build; where the
// file system has no flock, only those older than an hour.
package cache
