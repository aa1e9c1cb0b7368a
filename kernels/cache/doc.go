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
// Directories are created with mode 0700. Before loading, the shard
// directory and the .so must be owned by the current user and not group-
// or world-writable (and the .so a regular file, not a link); otherwise Get
// fails and touches nothing: a foreign .so is never loaded.
//
// A hit verifies the .so against the checksum in its metadata before
// dlopen and never runs the compiler. A missing or unparsable metadata
// file, a checksum mismatch or a dlopen failure is reported (Config.Logf),
// counted (Stats.Rebuilt), and the entry is deleted and rebuilt.
//
// Builds are safe across processes: a builder takes an exclusive flock on
// the key's lock file, compiles into a temporary file in the shard
// directory, writes the metadata to another, fsyncs both and renames them
// into place, .so first. Readers that see anything inconsistent retry under
// the lock before declaring the entry corrupt, so concurrent builders of
// one key all succeed and compile it once (twice at most on file systems
// without flock). The locking, permission checks and fsyncs are
// internal/fsutil's.
package cache
