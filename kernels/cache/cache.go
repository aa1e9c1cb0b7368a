package cache

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"

	"github.com/pkg/errors"

	"github.com/neoflow/neoflow/internal/fsutil"
	"github.com/neoflow/neoflow/kernels/cc"
)

// Config configures a Cache.
type Config struct {
	// Dir is the cache directory; it is created (0700) if missing.
	Dir string
	// Compiler builds missing kernels.
	Compiler cc.Compiler
	// Version is neoflow's version string; it is part of every key.
	Version string
	// Logf receives reports of corrupt entries; nil discards them.
	Logf func(format string, args ...any)
}

// Outcome says how Get obtained a kernel.
type Outcome int

// Outcomes.
const (
	Hit     Outcome = iota // loaded from the cache
	Miss                   // compiled: no entry
	Rebuilt                // compiled: the entry was corrupt and was deleted
	Bundled                // loaded from a kernel bundle (kernels/bundle), not the cache
)

func (o Outcome) String() string { return [...]string{"hit", "miss", "rebuilt", "bundle"}[o] }

// Stats counts the outcomes of a Cache's Get calls.
type Stats struct {
	Hits, Misses, Rebuilt int64
}

// Cache is a kernel cache directory with the compiler that fills it. It
// is safe for concurrent use, and several Caches (in one process or many)
// may share a directory.
type Cache struct {
	cfg     Config
	ident   string
	flags   []string
	host    string
	hits    atomic.Int64
	misses  atomic.Int64
	rebuilt atomic.Int64
}

// DefaultDir is os.UserCacheDir()/neoflow.
func DefaultDir() (string, error) {
	d, err := os.UserCacheDir()
	if err != nil {
		return "", errors.Wrap(err, "kernel cache: no default cache directory (set NEOFLOW_CACHE_DIR)")
	}
	return filepath.Join(d, "neoflow"), nil
}

// New opens the cache directory cfg.Dir, creating it with mode 0700, and
// resolves the compiler's identity (without running it). A compiler that
// does not resolve fails the first build that needs it, not New: a
// process whose kernels all come from the cache or a bundle needs none.
func New(cfg Config) (*Cache, error) {
	if cfg.Dir == "" {
		return nil, errors.New("kernel cache: no directory given")
	}
	dir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return nil, errors.Wrapf(err, "kernel cache: directory %s", cfg.Dir)
	}
	cfg.Dir = dir
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, errors.Wrap(err, "kernel cache: creating directory")
	}
	if err := fsutil.CheckPrivateDir(dir, true); err != nil {
		return nil, errors.Wrap(err, "kernel cache")
	}
	ident, err := cfg.Compiler.Identity()
	if err != nil {
		// No entry is ever built under this identity: compiling fails.
		ident = "unresolved compiler: " + err.Error()
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	c := &Cache{cfg: cfg, ident: ident, flags: cfg.Compiler.EffectiveFlags(), host: HostID()}
	c.removeStaleTemps()
	return c, nil
}

// Dir is the cache directory (absolute).
func (c *Cache) Dir() string { return c.cfg.Dir }

// Stats returns the counts so far.
func (c *Cache) Stats() Stats {
	return Stats{Hits: c.hits.Load(), Misses: c.misses.Load(), Rebuilt: c.rebuilt.Load()}
}

// Key is the cache key of a kernel source: a 64-digit hex SHA-256 over the
// source, the compiler identity, the flags, the version and the host.
// The leading tag changes when what an entry holds changes for the same
// source: v2 names the kernel's symbol for its portable key (kernels'
// Symbol), so a v1 entry, whose symbol is named for its cache key, is
// never found.
func (c *Cache) Key(source string) string {
	return hashFields("neoflow kernel cache v2", source, c.ident, strings.Join(c.flags, "\x00"), c.cfg.Version, c.host)
}

// PortableKey is a C kernel's key in a kernel bundle: a SHA-256 over the
// source, the flags, the version and the host, like Key but without the
// compiler's identity, so that a process without the compiler (or with
// another build of it) finds the kernels a bundle carries.
func (c *Cache) PortableKey(source string) string {
	return hashFields("neoflow kernel bundle v1", source, strings.Join(c.flags, "\x00"), c.cfg.Version, c.host)
}

// ImageKey is the cache key of a device kernel's source compiled by the
// compiler described by compiler (its version, options and target
// architecture): a SHA-256 over those and the version. The host's CPU
// and C compiler do not enter it.
func (c *Cache) ImageKey(source, compiler string) string {
	return hashFields("neoflow device kernel cache v1", source, compiler, c.cfg.Version)
}

// hashFields is the hex SHA-256 of the fields, each length-prefixed.
func hashFields(fields ...string) string {
	h := sha256.New()
	for _, s := range fields {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Paths are the files of an entry of a C kernel.
func (c *Cache) Paths(key string) (so, meta string) { return c.paths(key, ".so") }

// paths are the files of an entry whose artifact has extension ext.
func (c *Cache) paths(key, ext string) (file, meta string) {
	base := filepath.Join(c.cfg.Dir, key[:2], key)
	return base + ext, base + ".json"
}

func validKey(key string) bool {
	if len(key) != 64 {
		return false
	}
	_, err := hex.DecodeString(key)
	return err == nil && strings.ToLower(key) == key
}

// Get returns the loaded library of key, compiling source (the kernel of
// op, a name for the metadata) when the entry is missing or corrupt. The
// source compiled under a key must be a function of what the key covers.
// An entry whose library lacks one of symbols (made by a neoflow that
// named them otherwise) is corrupt too: it is deleted and rebuilt.
func (c *Cache) Get(ctx context.Context, key, source, op string, symbols ...string) (*cc.Library, Outcome, error) {
	a := artifact{
		ext: ".so",
		build: func(ctx context.Context, tmp string) error {
			if err := c.cfg.Compiler.Compile(ctx, source, tmp); err != nil {
				return errors.Wrapf(err, "compiling kernel %s", op)
			}
			// The linker creates its output with the umask's mode; make it private.
			return errors.Wrap(os.Chmod(tmp, 0o700), "kernel cache")
		},
		open: func(path string) (any, error) { return openWith(path, symbols) },
		meta: Meta{SourceSHA256: sha256Hex([]byte(source)), Op: op, Compiler: c.ident, Flags: c.flags},
	}
	v, outcome, err := c.get(ctx, key, a)
	if err != nil {
		return nil, 0, err
	}
	return v.(*cc.Library), outcome, nil
}

// openWith loads the library at path and checks that it defines symbols.
func openWith(path string, symbols []string) (*cc.Library, error) {
	lib, err := cc.Open(path)
	if err != nil {
		return nil, err
	}
	for _, s := range symbols {
		if _, err := lib.Symbol(s); err != nil {
			_ = lib.Close()
			return nil, errors.Errorf("no symbol %s in it", s)
		}
	}
	return lib, nil
}

// GetImage returns the device code image of key, stored with extension
// ext (".cubin", ".ptx"), calling compile for it when the entry is
// missing or corrupt. compiler describes the compiler and options for
// the metadata.
func (c *Cache) GetImage(ctx context.Context, key, ext, source, op, compiler string, compile func() ([]byte, error)) ([]byte, Outcome, error) {
	a := artifact{
		ext: ext,
		build: func(ctx context.Context, tmp string) error {
			img, err := compile()
			if err != nil {
				return errors.Wrapf(err, "compiling kernel %s", op)
			}
			return errors.Wrap(os.WriteFile(tmp, img, 0o600), "kernel cache")
		},
		open: func(path string) (any, error) { return fsutil.ReadFile(path, maxArtifactSize) },
		meta: Meta{SourceSHA256: sha256Hex([]byte(source)), Op: op, Compiler: compiler},
	}
	v, outcome, err := c.get(ctx, key, a)
	if err != nil {
		return nil, 0, err
	}
	return v.([]byte), outcome, nil
}

// artifact is what an entry holds: a file with extension ext that build
// writes and open loads, and the metadata describing how it was made.
type artifact struct {
	ext   string
	build func(ctx context.Context, tmp string) error
	open  func(path string) (any, error)
	meta  Meta
}

// get returns the loaded artifact of key, building it when the entry is
// missing or corrupt.
func (c *Cache) get(ctx context.Context, key string, a artifact) (any, Outcome, error) {
	if !validKey(key) {
		return nil, 0, errors.Errorf("kernel cache: invalid key %q", key)
	}
	shard := filepath.Join(c.cfg.Dir, key[:2])
	// Fast path without the lock. Anything but a clean hit (a miss, or an
	// entry that looks corrupt, maybe because a builder is between its
	// renames) is decided again under the lock.
	if v, _, err := c.load(key, shard, a); err != nil {
		return nil, 0, err
	} else if v != nil {
		c.hits.Add(1)
		return v, Hit, nil
	}
	if cc.Stopped() {
		return nil, 0, errors.New("kernel cache: the process is exiting: no kernel is built")
	}
	if err := c.makeShard(shard); err != nil {
		return nil, 0, err
	}
	unlock, err := fsutil.Lock(filepath.Join(shard, key+".lock"))
	if err != nil {
		return nil, 0, errors.Wrap(err, "kernel cache")
	}
	defer unlock()
	// Another builder may have finished while we waited.
	v, problem, err := c.load(key, shard, a)
	if err != nil {
		return nil, 0, err
	}
	if v != nil {
		c.hits.Add(1)
		return v, Hit, nil
	}
	outcome := Miss
	file, meta := c.paths(key, a.ext)
	if problem != "" {
		outcome = Rebuilt
		c.rebuilt.Add(1)
		c.cfg.Logf("neoflow: kernel cache entry %s is corrupt (%s); deleting and rebuilding", file, problem)
		for _, p := range []string{file, meta} {
			// RemoveAll: a damaged entry may be a directory.
			if err := os.RemoveAll(p); err != nil {
				return nil, 0, errors.Wrap(err, "kernel cache: deleting corrupt entry")
			}
		}
	} else {
		c.misses.Add(1)
	}
	if err := c.build(ctx, key, shard, a); err != nil {
		return nil, 0, err
	}
	v, problem, err = c.load(key, shard, a)
	if err != nil {
		return nil, 0, err
	}
	if v == nil {
		return nil, 0, errors.Errorf("kernel cache: freshly built %s is unusable: %s", file, problem)
	}
	return v, outcome, nil
}
