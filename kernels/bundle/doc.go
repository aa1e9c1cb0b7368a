// Package bundle reads and writes kernel bundles: one file holding the
// compiled C kernels a process built, the tuning records that chose their
// schedules, and a manifest, so that another process (a cluster's compute
// node without a C compiler, say) runs the same kernels without compiling.
//
// A bundle is a zip archive:
//
//	manifest.json       Manifest: format, neoflow version, target, entries
//	kernels/<key>.so    one compiled kernel per entry, named by its key
//	tune.records        the tuning records (autotune/tunedb's export form)
//
// A kernel's key is cache.PortableKey of its canonical source: a hash of
// the source (expression, shapes, dtype, schedule), the compiler flags,
// the neoflow version and the host, without the compiler's identity. The
// target is the host description kernels were compiled for (they are
// built with -march=native by default) and the flags. The manifest gives
// each file's SHA-256 and size.
//
// Open refuses, with an error naming the problem, a file that is not a
// bundle, a manifest of another format or neoflow version, a bundle for
// another target (other CPU features or flags), and a member that is
// missing, of the wrong size or checksum: every member is verified before
// Open returns, and again when a kernel is extracted (into a private
// directory) and loaded. A kernel the bundle lacks is simply not found:
// the caller compiles it.
package bundle
