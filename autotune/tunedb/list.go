package tunedb

import (
	"io/fs"
	"os"
	"sort"
	"strings"

	"github.com/pkg/errors"
)

// minPrefix is the shortest id prefix Find accepts.
const minPrefix = 4

// ids lists the ids of the entry files, sorted; other files are ignored.
// An entry that is not a regular file (a FIFO, a symbolic link) is
// listed, to be reported as corrupt when read; a directory is not. A
// directory deleted while the process ran holds no entries.
func (db *DB) ids() ([]string, error) {
	entries, err := os.ReadDir(db.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, errors.Wrap(err, "tuning database")
	}
	var ids []string
	for _, e := range entries {
		if validID(e.Name()) && !e.IsDir() {
			ids = append(ids, e.Name())
		}
	}
	return ids, nil
}

// List returns the valid records, sorted by op name, then id. Corrupt
// entries are reported through logf, moved aside and left out.
func (db *DB) List() ([]Entry, error) {
	ids, err := db.ids()
	if err != nil {
		return nil, err
	}
	var out []Entry
	for _, id := range ids {
		r, err := db.load(id, nil)
		if err != nil {
			return nil, err
		}
		if r != nil {
			out = append(out, Entry{ID: id, Record: r})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if a, b := out[i].Record.OpName, out[j].Record.OpName; a != b {
			return a < b
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}

// Find returns the entry whose id starts with prefix (at least 4 hex
// digits, case-insensitive). It fails when no entry or more than one
// matches, or when the only match is corrupt (which is then reported and
// moved aside).
func (db *DB) Find(prefix string) (Entry, error) {
	p := strings.ToLower(prefix)
	if len(p) < minPrefix {
		return Entry{}, errors.Errorf("tuning database: id prefix %q is too short (give at least %d hex digits)", prefix, minPrefix)
	}
	if len(p) > idLen || !validID(p+strings.Repeat("0", idLen-len(p))) {
		return Entry{}, errors.Errorf("tuning database: %q is not an id prefix (ids are %d hex digits)", prefix, idLen)
	}
	ids, err := db.ids()
	if err != nil {
		return Entry{}, err
	}
	var matches []string
	for _, id := range ids {
		if strings.HasPrefix(id, p) {
			matches = append(matches, id)
		}
	}
	switch len(matches) {
	case 0:
		return Entry{}, errors.Errorf("tuning database: no record with id prefix %q", prefix)
	case 1:
		r, err := db.load(matches[0], nil)
		if err != nil {
			return Entry{}, err
		}
		if r == nil {
			return Entry{}, errors.Errorf("tuning database: no record with id prefix %q (the entry %s was corrupt)", prefix, matches[0])
		}
		return Entry{ID: matches[0], Record: r}, nil
	}
	return Entry{}, errors.Errorf("tuning database: id prefix %q is ambiguous: it matches %d records (%s)", prefix, len(matches), strings.Join(matches, ", "))
}
