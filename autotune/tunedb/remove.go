package tunedb

import (
	"io/fs"
	"os"
	"strings"

	"github.com/pkg/errors"
)

// Remove deletes the record with the full id (and a moved-aside corrupt
// entry of that id). It fails if there is no such record.
func (db *DB) Remove(id string) error {
	if !validID(id) {
		return errors.Errorf("tuning database: invalid record id %q (want %d lowercase hex digits)", id, idLen)
	}
	existed, err := db.remove(id)
	if err == nil && !existed {
		err = errors.Errorf("tuning database: no record %s", id)
	}
	return err
}

// Clear deletes every record and every moved-aside corrupt entry, and
// returns the number of records (entry files, valid or not) deleted. Lock
// files and the temporary files of writers in progress are left alone.
func (db *DB) Clear() (removed int, err error) {
	entries, err := os.ReadDir(db.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, errors.Wrap(err, "tuning database")
	}
	for _, e := range entries {
		name := e.Name()
		switch {
		case validID(name):
			existed, err := db.remove(name)
			if err != nil {
				return removed, err
			}
			if existed {
				removed++
			}
		case validID(strings.TrimSuffix(name, ".corrupt")):
			if err := os.Remove(db.path(name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return removed, errors.Wrap(err, "tuning database")
			}
		}
	}
	return removed, nil
}

// remove deletes the entry of id and its .corrupt file under the lock and
// reports whether the entry existed.
func (db *DB) remove(id string) (existed bool, err error) {
	unlock, err := db.lock(id)
	if err != nil {
		return false, err
	}
	defer unlock()
	path := db.path(id)
	if err := os.Remove(path + ".corrupt"); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, errors.Wrap(err, "tuning database")
	}
	err = os.Remove(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return err == nil, errors.Wrap(err, "tuning database")
}
