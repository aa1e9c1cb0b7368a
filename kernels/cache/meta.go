package cache

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"time"

	"github.com/neoflow/neoflow/internal/fsutil"
)

// Meta is the metadata stored next to a cached artifact (a .so, or a
// CUDA kernel's .cubin or .ptx).
type Meta struct {
	Key string `json:"key"`
	// SOSHA256 is the SHA-256 of the artifact, checked before every load.
	SOSHA256 string `json:"so_sha256"`
	// SourceSHA256 is the SHA-256 of the C source it was compiled from.
	SourceSHA256 string    `json:"source_sha256"`
	Op           string    `json:"op"`
	Created      time.Time `json:"created"`
	Compiler     string    `json:"compiler"`
	Flags        []string  `json:"flags"`
	Version      string    `json:"version"`
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// Size limits of the files an entry holds; a larger file is refused and
// the entry rebuilt.
const (
	maxMetaSize     = 1 << 20   // metadata (.json)
	maxArtifactSize = 256 << 20 // compiled kernel (.so, .cubin, .ptx)
)

// sha256File hashes the artifact at path, read as fsutil.OpenRegular
// reads it (a refusal satisfies errors.Is(err, fsutil.ErrRefused)).
func sha256File(path string) (string, error) {
	f, err := fsutil.OpenRegular(path, maxArtifactSize)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// notAFile describes the entry file at path when it exists but is of a
// kind no build writes (a FIFO, socket, device or directory): damage to
// rebuild, never to open. A symbolic link is left to
// fsutil.CheckPrivateFile, which refuses it without touching the entry.
func notAFile(path string) string {
	fi, err := os.Lstat(path)
	if err != nil || fi.Mode().IsRegular() || fi.Mode()&fs.ModeSymlink != 0 {
		return ""
	}
	return fmt.Sprintf("%s is not a regular file (mode %v)", path, fi.Mode())
}
