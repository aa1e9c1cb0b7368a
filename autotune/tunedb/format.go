package tunedb

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math"

	"github.com/pkg/errors"
	"google.golang.org/protobuf/proto"

	"github.com/neoflow/neoflow/api"
)

// magic starts every entry and export file; its digit is the format
// version.
const magic = "NFTUNE1\n"

// headerLen is the size of magic, checksum and length.
const headerLen = len(magic) + sha256.Size + 8

var marshal = proto.MarshalOptions{Deterministic: true}

// frame marshals m deterministically and prepends the header.
func frame(m proto.Message) ([]byte, error) {
	payload, err := marshal.Marshal(m)
	if err != nil {
		return nil, errors.Wrap(err, "tuning database: encoding")
	}
	b := make([]byte, headerLen, headerLen+len(payload))
	copy(b, magic)
	sum := sha256.Sum256(payload)
	copy(b[len(magic):], sum[:])
	binary.LittleEndian.PutUint64(b[len(magic)+sha256.Size:], uint64(len(payload)))
	return append(b, payload...), nil
}

// unframe verifies the header of a framed file and returns its payload,
// or a problem saying why the file is not valid.
func unframe(b []byte) (payload []byte, problem string) {
	switch {
	case len(b) == 0:
		return nil, "empty file"
	case len(b) < len(magic) && bytes.HasPrefix([]byte(magic), b):
		return nil, fmt.Sprintf("truncated to %d bytes", len(b))
	case !bytes.HasPrefix(b, []byte(magic)):
		first := b[:min(len(b), len(magic))]
		if bytes.HasPrefix(b, []byte(magic[:6])) {
			return nil, fmt.Sprintf("unsupported format %q (this neoflow reads %q)", first, magic)
		}
		return nil, fmt.Sprintf("bad magic %q, not a tuning database file", first)
	case len(b) < headerLen:
		return nil, fmt.Sprintf("truncated to %d bytes, inside the %d-byte header", len(b), headerLen)
	}
	n := binary.LittleEndian.Uint64(b[len(magic)+sha256.Size:])
	payload = b[headerLen:]
	if n != uint64(len(payload)) {
		if n > uint64(len(payload)) {
			return nil, fmt.Sprintf("truncated: the header says %d payload bytes, %d are present", n, len(payload))
		}
		return nil, fmt.Sprintf("wrong length: the header says %d payload bytes, %d follow", n, len(payload))
	}
	if sum := sha256.Sum256(payload); !bytes.Equal(sum[:], b[len(magic):len(magic)+sha256.Size]) {
		return nil, "checksum mismatch"
	}
	return payload, ""
}

// checkRecord returns what makes r unstorable, or "".
func checkRecord(r *api.TuneRecord) string {
	switch {
	case r == nil:
		return "no record"
	case r.Key == nil:
		return "the record has no key"
	case !(r.BestSeconds > 0) || math.IsInf(r.BestSeconds, 1):
		return fmt.Sprintf("best_seconds %v is not a positive finite time", r.BestSeconds)
	}
	if _, err := keyID(r.Key); err != nil {
		return errors.Cause(err).Error()
	}
	return ""
}

// parseEntry verifies the content of the entry file of id.
func parseEntry(id string, b []byte) (*api.TuneRecord, string) {
	payload, problem := unframe(b)
	if problem != "" {
		return nil, problem
	}
	r := new(api.TuneRecord)
	if err := proto.Unmarshal(payload, r); err != nil {
		return nil, "unparsable record: " + err.Error()
	}
	if problem := checkRecord(r); problem != "" {
		return nil, problem
	}
	if kid := ID(r.Key); kid != id {
		return nil, fmt.Sprintf("it holds the record of id %s (op %q), not of its file name", kid, r.OpName)
	}
	return r, ""
}
