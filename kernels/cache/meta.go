package cache

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"time"
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

func sha256File(path string) (string, error) {
	f, err := os.Open(path)
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
