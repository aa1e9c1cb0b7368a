package tunedb

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/pkg/errors"
	"google.golang.org/protobuf/proto"

	"github.com/neoflow/neoflow/api"
	"github.com/neoflow/neoflow/internal/fsutil"
)

// idLen is the length of a record id in hex digits.
const idLen = 32

// DB is a tuning database directory. It is safe for concurrent use, and
// several DBs (in one process or many) may share a directory.
type DB struct {
	dir  string
	logf func(format string, args ...any)
}

// Entry is a record with its id.
type Entry struct {
	ID     string
	Record *api.TuneRecord
}

// Open opens the database directory dir (e.g. <NEOFLOW_CACHE_DIR>/tune),
// creating it with mode 0700 if missing. It fails if the directory is not
// owned by the current user or is group- or world-writable. logf receives
// warnings about corrupt entries; nil discards them.
func Open(dir string, logf func(format string, args ...any)) (*DB, error) {
	if dir == "" {
		return nil, errors.New("tuning database: no directory given")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, errors.Wrapf(err, "tuning database: directory %s", dir)
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return nil, errors.Wrap(err, "tuning database: creating directory")
	}
	if err := fsutil.CheckPrivateDir(abs, true); err != nil {
		return nil, errors.Wrap(err, "tuning database")
	}
	if logf == nil {
		logf = func(string, ...any) {}
	}
	fsutil.RemoveStaleTemps(abs, tempLock, staleTempAge)
	return &DB{dir: abs, logf: logf}, nil
}

// Dir is the database directory (absolute).
func (db *DB) Dir() string { return db.dir }

// ID is the record id of k: the first 32 hex digits of the SHA-256 of k's
// deterministic protobuf encoding. It names k's entry file.
func ID(k *api.TuneKey) string {
	id, _ := keyID(k)
	return id
}

// keyID is ID, with the error that makes k unstorable (a string that is
// not valid UTF-8). Such a key's id hashes a description of it instead,
// so that it differs from every storable key's.
func keyID(k *api.TuneKey) (string, error) {
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(k)
	if err != nil {
		err = errors.Wrap(err, "tuning database: invalid key")
		b = fmt.Appendf(nil, "invalid key\x00%q\x00%q\x00%q\x00%q", k.GetKernel(), k.GetTensors(), k.GetTarget(), k.GetVersion())
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])[:idLen], err
}

// validID reports whether s is a full record id (32 lowercase hex digits).
func validID(s string) bool {
	if len(s) != idLen {
		return false
	}
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

func (db *DB) path(id string) string { return filepath.Join(db.dir, id) }

// lock takes the lock of id, creating the directory again (mode 0700)
// if it was deleted while the process ran.
func (db *DB) lock(id string) (unlock func(), err error) {
	if err := os.MkdirAll(db.dir, 0o700); err != nil {
		return nil, errors.Wrap(err, "tuning database: creating directory")
	}
	if err := fsutil.CheckPrivateDir(db.dir, true); err != nil {
		return nil, errors.Wrap(err, "tuning database")
	}
	unlock, err = fsutil.Lock(db.path(id) + ".lock")
	return unlock, errors.Wrap(err, "tuning database")
}

// staleTempAge is how old a temporary file must be before Open takes it
// as left by a killed writer on a file system without flock.
const staleTempAge = time.Hour

// tempLock is the lock file guarding the temporary file name
// (<id>.*.tmp), or "" when name is not a writer's temporary file.
func tempLock(name string) string {
	if len(name) > idLen+1 && name[idLen] == '.' && validID(name[:idLen]) && strings.HasSuffix(name, ".tmp") {
		return name[:idLen] + ".lock"
	}
	return ""
}
