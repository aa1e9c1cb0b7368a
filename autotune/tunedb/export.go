package tunedb

import (
	"fmt"
	"io"

	"github.com/pkg/errors"
	"google.golang.org/protobuf/proto"

	"github.com/neoflow/neoflow/api"
)

// maxImport bounds the size of an export file Import reads.
const maxImport = 1 << 30

// Export writes the records with the given full ids (all records, in List
// order, when none are given) to w as one export file: the entry framing
// (see the package comment) around an api.TuneExport. It returns the
// number of records written; a missing id is an error and nothing is
// written.
func (db *DB) Export(w io.Writer, ids ...string) (n int, err error) {
	var recs []*api.TuneRecord
	if len(ids) == 0 {
		entries, err := db.List()
		if err != nil {
			return 0, err
		}
		for _, e := range entries {
			recs = append(recs, e.Record)
		}
	}
	seen := map[string]bool{}
	for _, id := range ids {
		if seen[id] {
			continue
		}
		seen[id] = true
		if !validID(id) {
			return 0, errors.Errorf("tuning database: export: invalid record id %q", id)
		}
		r, err := db.load(id, nil)
		if err != nil {
			return 0, err
		}
		if r == nil {
			return 0, errors.Errorf("tuning database: export: no record %s", id)
		}
		recs = append(recs, r)
	}
	data, err := frame(&api.TuneExport{Records: recs})
	if err != nil {
		return 0, err
	}
	if _, err := w.Write(data); err != nil {
		return 0, errors.Wrap(err, "tuning database: writing the export")
	}
	return len(recs), nil
}

// Has reports whether the database holds record id.
func (db *DB) Has(id string) (bool, error) {
	if !validID(id) {
		return false, errors.Errorf("tuning database: invalid record id %q", id)
	}
	r, err := db.load(id, nil)
	return r != nil, err
}

// Import reads an export file and merges each of its records through Put
// (the faster record wins). The whole file is verified first (framing,
// checksum, every record): if any of it is corrupt Import fails naming the
// problem and imports nothing. It returns the number of records stored.
func (db *DB) Import(r io.Reader) (imported int, err error) {
	data, err := io.ReadAll(io.LimitReader(r, maxImport+1))
	if err != nil {
		return 0, errors.Wrap(err, "tuning database: reading the export")
	}
	if len(data) > maxImport {
		return 0, errors.Errorf("tuning database: import: the export is larger than %d bytes; nothing imported", maxImport)
	}
	corrupt := func(problem string) error {
		return errors.Errorf("tuning database: import: corrupt export file: %s; nothing imported", problem)
	}
	payload, problem := unframe(data)
	if problem != "" {
		return 0, corrupt(problem)
	}
	var ex api.TuneExport
	if err := proto.Unmarshal(payload, &ex); err != nil {
		return 0, corrupt("unparsable: " + err.Error())
	}
	for i, rec := range ex.Records {
		if problem := checkRecord(rec); problem != "" {
			return 0, corrupt(fmt.Sprintf("record %d: %s", i, problem))
		}
	}
	for _, rec := range ex.Records {
		stored, err := db.Put(rec)
		if err != nil {
			return imported, err
		}
		if stored {
			imported++
		}
	}
	return imported, nil
}
