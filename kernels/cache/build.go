package cache

import (
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"time"

	"github.com/pkg/errors"

	"github.com/neoflow/neoflow/internal/fsutil"
)

// load verifies and loads the entry of key. It returns the library on a
// clean hit; nothing (no problem, no error) when the entry is absent; a
// problem describing a corrupt entry; or an error when the entry may not
// be touched at all (it is not ours).
func (c *Cache) load(key, shard string, a artifact) (v any, problem string, err error) {
	so, meta := c.paths(key, a.ext)
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
	if problem := notAFile(so); problem != "" {
		return nil, problem, nil
	}
	if err := fsutil.CheckPrivateFile(so); err != nil {
		return nil, "", errors.Wrap(err, "kernel cache")
	}
	data, err := fsutil.ReadFile(meta, maxMetaSize)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, "missing metadata", nil
	} else if errors.Is(err, fsutil.ErrRefused) {
		return nil, "metadata: " + err.Error(), nil
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
	if errors.Is(err, fsutil.ErrRefused) {
		return nil, err.Error(), nil
	} else if err != nil {
		return nil, "", errors.Wrap(err, "kernel cache")
	}
	if sum != m.SOSHA256 {
		return nil, "checksum mismatch: metadata says " + m.SOSHA256 + ", file is " + sum, nil
	}
	v, err = a.open(so)
	if err != nil {
		return nil, err.Error(), nil
	}
	return v, "", nil
}

// build builds the artifact of key into its entry; the caller holds the
// lock.
func (c *Cache) build(ctx context.Context, key, shard string, a artifact) (err error) {
	so, meta := c.paths(key, a.ext)
	var temps []string
	defer func() {
		if err != nil {
			for _, t := range temps {
				os.Remove(t)
			}
		}
	}()
	f, err := os.CreateTemp(shard, key+".*"+a.ext+".tmp")
	if err != nil {
		return errors.Wrap(err, "kernel cache")
	}
	f.Close()
	soTmp := f.Name()
	temps = append(temps, soTmp)
	if err := a.build(ctx, soTmp); err != nil {
		return err
	}
	if err := fsutil.SyncFile(soTmp); err != nil {
		return errors.Wrap(err, "kernel cache")
	}
	sum, err := sha256File(soTmp)
	if err != nil {
		return errors.Wrap(err, "kernel cache")
	}
	m := a.meta
	m.Key, m.SOSHA256, m.Created, m.Version = key, sum, time.Now().UTC(), c.cfg.Version
	data, err := json.MarshalIndent(m, "", "  ")
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
