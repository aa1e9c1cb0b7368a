package cache

import (
	"context"
	"encoding/json"
	"os"
	"time"

	"github.com/pkg/errors"

	"github.com/neoflow/neoflow/internal/fsutil"
	"github.com/neoflow/neoflow/kernels/cc"
)

// load verifies and loads the entry of key. It returns the library on a
// clean hit; nothing (no problem, no error) when the entry is absent; a
// problem describing a corrupt entry; or an error when the entry may not
// be touched at all (it is not ours).
func (c *Cache) load(key, shard string) (lib *cc.Library, problem string, err error) {
	so, meta := c.Paths(key)
	if _, err := os.Lstat(so); os.IsNotExist(err) {
		if _, err := os.Lstat(meta); err == nil {
			return nil, "metadata without a library", nil
		}
		return nil, "", nil
	} else if err != nil {
		return nil, "", errors.Wrap(err, "kernel cache")
	}
	if err := fsutil.CheckPrivateDir(shard, false); err != nil {
		return nil, "", errors.Wrap(err, "kernel cache")
	}
	if err := fsutil.CheckPrivateFile(so); err != nil {
		return nil, "", errors.Wrap(err, "kernel cache")
	}
	data, err := os.ReadFile(meta)
	if os.IsNotExist(err) {
		return nil, "missing metadata", nil
	} else if err != nil {
		return nil, "", errors.Wrap(err, "kernel cache")
	}
	var m Meta
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, "unparsable metadata: " + err.Error(), nil
	}
	if m.Key != key || m.SOSHA256 == "" {
		return nil, "metadata of another entry", nil
	}
	sum, err := sha256File(so)
	if err != nil {
		return nil, "", errors.Wrap(err, "kernel cache")
	}
	if sum != m.SOSHA256 {
		return nil, "checksum mismatch: metadata says " + m.SOSHA256 + ", file is " + sum, nil
	}
	lib, err = cc.Open(so)
	if err != nil {
		return nil, err.Error(), nil
	}
	return lib, "", nil
}

// build compiles source into the entry of key; the caller holds the lock.
func (c *Cache) build(ctx context.Context, key, shard, source, op string) (err error) {
	so, meta := c.Paths(key)
	var temps []string
	defer func() {
		if err != nil {
			for _, t := range temps {
				os.Remove(t)
			}
		}
	}()
	f, err := os.CreateTemp(shard, key+".*.so.tmp")
	if err != nil {
		return errors.Wrap(err, "kernel cache")
	}
	f.Close()
	soTmp := f.Name()
	temps = append(temps, soTmp)
	if err := c.cfg.Compiler.Compile(ctx, source, soTmp); err != nil {
		return errors.Wrapf(err, "compiling kernel %s", op)
	}
	// The linker creates its output with the umask's mode; make it private.
	if err := os.Chmod(soTmp, 0o700); err != nil {
		return errors.Wrap(err, "kernel cache")
	}
	if err := fsutil.SyncFile(soTmp); err != nil {
		return errors.Wrap(err, "kernel cache")
	}
	sum, err := sha256File(soTmp)
	if err != nil {
		return errors.Wrap(err, "kernel cache")
	}
	data, err := json.MarshalIndent(Meta{
		Key: key, SOSHA256: sum, SourceSHA256: sha256Hex([]byte(source)), Op: op,
		Created: time.Now().UTC(), Compiler: c.ident, Flags: c.flags, Version: c.cfg.Version,
	}, "", "  ")
	if err != nil {
		return errors.Wrap(err, "kernel cache")
	}
	metaTmp, err := fsutil.WriteTemp(shard, key+".*.json.tmp", append(data, '\n'), 0o600)
	if err != nil {
		return errors.Wrap(err, "kernel cache: writing metadata")
	}
	temps = append(temps, metaTmp)
	if err := os.Rename(soTmp, so); err != nil {
		return errors.Wrap(err, "kernel cache")
	}
	if err := os.Rename(metaTmp, meta); err != nil {
		return errors.Wrap(err, "kernel cache")
	}
	return errors.Wrap(fsutil.SyncDir(shard), "kernel cache")
}
