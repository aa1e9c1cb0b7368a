package tunedb

import (
	"io/fs"
	"os"

	"github.com/pkg/errors"
	"google.golang.org/protobuf/proto"

	"github.com/neoflow/neoflow/api"
	"github.com/neoflow/neoflow/internal/fsutil"
)

// Get returns the record stored for k. A missing entry is (nil, false,
// nil). A corrupt entry (see the package comment), or one holding a key
// other than k, is reported through logf with its path and the reason,
// moved aside to <id>.corrupt, and reported as missing: corruption is
// never an error.
func (db *DB) Get(k *api.TuneKey) (*api.TuneRecord, bool, error) {
	if k == nil {
		return nil, false, errors.New("tuning database: Get: no key")
	}
	id, err := keyID(k)
	if err != nil {
		return nil, false, err
	}
	r, err := db.load(id, k)
	if err != nil || r == nil {
		return nil, false, err
	}
	return r, true, nil
}

// Put stores r under r.Key unless the valid record already stored for
// that key has a strictly smaller best_seconds: the faster record wins,
// and on a tie r replaces the stored one. A record of no trials (a pick of
// the first build's schedules) never replaces one with trials, which
// always replaces it. The read-compare-write happens
// under the id's file lock, so concurrent Puts from any processes keep the
// fastest record. A corrupt stored record is reported, moved aside and
// replaced. Put fails on a record without a key or without a positive
// finite best_seconds. It returns whether r was stored.
func (db *DB) Put(r *api.TuneRecord) (stored bool, err error) {
	return db.put(r, false)
}

// Replace stores r under r.Key whatever best_seconds the stored record
// has (a tuned record only: a pick never replaces one with trials). It is
// for a choice made by timing more than the kernel alone (the joint tuning
// of a forward kernel with its gradient's, autotune.TuneJointly), which may
// be slower alone than the record it replaces.
func (db *DB) Replace(r *api.TuneRecord) (stored bool, err error) {
	return db.put(r, true)
}

func (db *DB) put(r *api.TuneRecord, replace bool) (stored bool, err error) {
	if problem := checkRecord(r); problem != "" {
		return false, errors.Errorf("tuning database: cannot store the record: %s", problem)
	}
	data, err := frame(r)
	if err != nil {
		return false, err
	}
	if len(data) > maxRecordSize {
		return false, errors.Errorf("tuning database: cannot store the record: %d bytes, more than the limit of %d", len(data), maxRecordSize)
	}
	id := ID(r.Key)
	unlock, err := db.lock(id)
	if err != nil {
		return false, err
	}
	defer unlock()
	old, err := db.loadLocked(id, r.Key)
	if err != nil {
		return false, err
	}
	// A record of no trials is a pick (the first build's measured choice,
	// torchbridge): a tuned record replaces it, it never replaces one.
	switch {
	case old != nil && old.Trials > 0 && r.Trials == 0:
		return false, nil
	case !replace && old != nil && old.BestSeconds < r.BestSeconds && !(old.Trials == 0 && r.Trials > 0):
		return false, nil
	}
	if err := fsutil.WriteFileAtomic(db.path(id), data, 0o600); err != nil {
		return false, errors.Wrap(err, "tuning database: writing record")
	}
	return true, nil
}

// maxRecordSize bounds an entry file; a larger one is refused as corrupt.
const maxRecordSize = 16 << 20

// read reads and verifies the entry of id; want, when set, is the key it
// must hold. An absent entry is (nil, "", nil); a corrupt one returns the
// problem.
func (db *DB) read(id string, want *api.TuneKey) (*api.TuneRecord, string, error) {
	b, err := fsutil.ReadFile(db.path(id), maxRecordSize)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, "", nil
	}
	if errors.Is(err, fsutil.ErrRefused) {
		return nil, err.Error(), nil
	}
	if err != nil {
		return nil, "", errors.Wrap(err, "tuning database")
	}
	r, problem := parseEntry(id, b)
	if r != nil && want != nil && !proto.Equal(r.Key, want) {
		return nil, "its key differs from the one asked for", nil
	}
	return r, problem, nil
}

// load returns the valid record of id, or nil. An entry that looks
// corrupt is read again under the lock (a writer may have just replaced
// it) and, if still corrupt, reported and moved aside.
func (db *DB) load(id string, want *api.TuneKey) (*api.TuneRecord, error) {
	r, problem, err := db.read(id, want)
	if err != nil || problem == "" {
		return r, err
	}
	unlock, err := db.lock(id)
	if err != nil {
		return nil, err
	}
	defer unlock()
	return db.loadLocked(id, want)
}

// loadLocked is load for a caller holding the lock of id.
func (db *DB) loadLocked(id string, want *api.TuneKey) (*api.TuneRecord, error) {
	r, problem, err := db.read(id, want)
	if err != nil || problem == "" {
		return r, err
	}
	db.quarantine(id, problem)
	return nil, nil
}

// quarantine moves the corrupt entry of id aside to <id>.corrupt, or
// deletes it, and reports it; the caller holds the lock.
func (db *DB) quarantine(id, problem string) {
	path := db.path(id)
	aside := path + ".corrupt"
	if err := os.Rename(path, aside); err == nil {
		db.logf("neoflow: tuning database entry %s is corrupt (%s); moved it to %s", path, problem, aside)
	} else if err := os.Remove(path); err == nil || errors.Is(err, fs.ErrNotExist) {
		db.logf("neoflow: tuning database entry %s is corrupt (%s); deleted it", path, problem)
	} else {
		db.logf("neoflow: tuning database entry %s is corrupt (%s); ignoring it (cannot move or delete it: %v)", path, problem, err)
	}
}
