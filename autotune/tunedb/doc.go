// Package tunedb is neoflow's persistent tuning database: for each
// TuneKey (a specialized kernel, its buffers' dtypes and shapes, the
// target CPU or GPU and the neoflow version) the fastest TuneRecord found so
// far, one file per key, shared by all processes of the user.
//
// # Layout
//
// The database is a directory, normally <NEOFLOW_CACHE_DIR>/tune, created
// with mode 0700. Open refuses a directory that is not owned by the
// current user or is group- or world-writable (internal/fsutil). In it:
//
//	<id>          a record (mode 0600)
//	<id>.lock     serializes writers of the record (flock; left in place)
//	<id>.corrupt  a record that failed verification, moved aside
//	<id>.*.tmp    a record being written
//
// The id of a key (ID) is the first 32 hex digits of the SHA-256 of the
// key's deterministic protobuf encoding. Every other file is ignored, and
// so is a directory named like an id. A directory deleted while the
// process runs holds no records and is created again by the next write.
// Open removes the temporary files of writers that were killed: those
// whose id's lock it can take at once (where the file system has no
// flock, those older than an hour).
//
// # File format
//
// Entry files and export files share one framing:
//
//	bytes  0..7   magic "NFTUNE1\n"
//	bytes  8..39  SHA-256 of the payload
//	bytes 40..47  payload length, unsigned 64-bit little-endian
//	bytes 48..    payload: a deterministically marshaled api.TuneRecord
//	              (entry files) or api.TuneExport (export files)
//
// A file is valid when the magic matches (a different "NFTUNE" version is
// reported as an unsupported format), the length equals the number of
// bytes after the header, the checksum matches, the payload unmarshals,
// and every record has a key and a positive finite best_seconds. An entry
// file's key must also hash to its file name, and Get additionally
// requires it to equal the key asked for.
//
// # Writing and merging
//
// Records are written to a temporary file in the directory, fsynced,
// renamed over the entry and the directory fsynced, so readers never see
// a partial record. Put is a read-compare-write under the id's lock: the
// stored record is kept when its best_seconds is strictly smaller than the
// new one's (the faster record wins; on a tie the new record replaces it).
// Concurrent Puts from goroutines or processes therefore leave each key
// with the fastest record any of them offered. Import merges through Put.
//
// # Corruption
//
// Entries are read with fsutil.ReadFile: opened without blocking and
// without following a symbolic link, refused unless a regular file owned
// by the current user of at most 16 MiB (Put refuses a larger record). A
// refused entry (a FIFO, a link to /dev/zero, another user's file, a
// larger one) is corrupt.
//
// A corrupt entry (truncated, bad checksum, unknown format, unparsable,
// holding another key, or refused) is never an error: Get, Put, List,
// Find and Export report it through the Open's logf with its path and the
// reason, treat it as missing, and move it aside to <id>.corrupt
// (deleting it if that fails) under the id's lock, so it is reported
// once. A corrupt export file, in contrast, makes Import fail before
// importing anything. An export file is the user's to name: Import reads
// whatever it is given (a pipe included), at most 1 GiB.
//
// Run implements the command line (list, show, clear, export, import).
package tunedb
