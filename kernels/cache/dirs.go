package cache

import (
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/pkg/errors"

	"github.com/neoflow/neoflow/internal/fsutil"
)

// staleTempAge is how old a temporary file must be before it is taken as
// left by a killed build on a file system without flock (where a live
// builder cannot be told from a dead one).
const staleTempAge = time.Hour

// makeShard creates the shard directory with mode 0700, and the cache
// directory too when it was deleted while the process ran, and checks
// that both are private.
func (c *Cache) makeShard(shard string) error {
	if err := os.MkdirAll(shard, 0o700); err != nil {
		return errors.Wrap(err, "kernel cache: creating directory")
	}
	if err := fsutil.CheckPrivateDir(c.cfg.Dir, true); err != nil {
		return errors.Wrap(err, "kernel cache")
	}
	return errors.Wrap(fsutil.CheckPrivateDir(shard, false), "kernel cache")
}

// removeStaleTemps removes, from every shard directory, the temporary
// files of builds that were killed: those whose key's lock is free (see
// fsutil.RemoveStaleTemps).
func (c *Cache) removeStaleTemps() {
	shards, err := os.ReadDir(c.cfg.Dir)
	if err != nil {
		return
	}
	for _, s := range shards {
		if name := s.Name(); s.IsDir() && len(name) == 2 && validKey(name+strings.Repeat("0", 62)) {
			fsutil.RemoveStaleTemps(filepath.Join(c.cfg.Dir, name), tempLock, staleTempAge)
		}
	}
}

// tempLock is the lock file guarding the temporary file name (a build's
// <key>.*<ext>.tmp, its metadata's <key>.*.json.tmp or the compiler's
// <key>.*.so.tmp.*.c), or "" when name is not a temporary file.
func tempLock(name string) string {
	if len(name) > 65 && name[64] == '.' && validKey(name[:64]) && strings.Contains(name[64:], ".tmp") {
		return name[:64] + ".lock"
	}
	return ""
}
