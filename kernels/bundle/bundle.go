package bundle

import (
	"archive/zip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"time"

	"github.com/pkg/errors"

	"github.com/neoflow/neoflow/internal/fsutil"
)

// Format is the manifest format this package writes and reads.
const Format = 1

// Limits on what Open reads: the manifest, one kernel, the tuning records.
const (
	maxManifest = 16 << 20
	maxKernel   = 256 << 20
	maxRecords  = 256 << 20
)

const (
	manifestName = "manifest.json"
	recordsName  = "tune.records"
)

// Manifest describes a bundle.
type Manifest struct {
	Format  int     `json:"format"`
	Neoflow string  `json:"neoflow"`
	Target  Target  `json:"target"`
	Created string  `json:"created"`
	Kernels []Entry `json:"kernels"`
	// Tuning is the tuning records' file; nil when there are none.
	Tuning *Records `json:"tuning,omitempty"`
	// FusionRates are the rates the fusion passes weighed their choices
	// with (the runtime's fuse.Machine): a process using the bundle fuses
	// with them, so that it derives the same kernels.
	FusionRates json.RawMessage `json:"fusion_rates,omitempty"`
}

// Contents is what Write puts in a bundle.
type Contents struct {
	Target  Target
	Version string // neoflow's
	Kernels []Kernel
	// Records are tuning records in autotune/tunedb's export form (nil:
	// none), NumRecords of them.
	Records    []byte
	NumRecords int
	// FusionRates is Manifest.FusionRates (nil: none).
	FusionRates json.RawMessage
}

// Target is what the kernels were compiled for: the host (its ID,
// cache.HostID, and the text it hashes, cache.HostDescription) and the
// compiler flags.
type Target struct {
	HostID string   `json:"host_id"`
	Host   string   `json:"host"`
	Flags  []string `json:"flags"`
}

// Entry is one kernel of a bundle.
type Entry struct {
	Key    string `json:"key"`
	Op     string `json:"op"`
	File   string `json:"file"`
	SHA256 string `json:"sha256"`
	Size   int64  `json:"size"`
}

// Records is the tuning records' file of a bundle.
type Records struct {
	File    string `json:"file"`
	SHA256  string `json:"sha256"`
	Size    int64  `json:"size"`
	Records int    `json:"records"`
}

// Kernel is a compiled kernel to write: its key (cache.PortableKey), op
// name and the path of its shared object.
type Kernel struct {
	Key, Op, Path string
}

// Write writes a bundle of c's kernels (each key once) and records to
// path, atomically (a temporary file renamed into place), and returns its
// manifest.
func Write(path string, c Contents) (*Manifest, error) {
	m := &Manifest{Format: Format, Neoflow: c.Version, Target: c.Target, Created: time.Now().UTC().Format(time.RFC3339), FusionRates: c.FusionRates}
	files := map[string][]byte{}
	kernels := slices.Clone(c.Kernels)
	sort.Slice(kernels, func(i, j int) bool { return kernels[i].Key < kernels[j].Key })
	for i, k := range kernels {
		if i > 0 && kernels[i-1].Key == k.Key {
			continue
		}
		if !validKey(k.Key) {
			return nil, errors.Errorf("kernel bundle: invalid kernel key %q", k.Key)
		}
		data, err := fsutil.ReadFile(k.Path, maxKernel)
		if err != nil {
			return nil, errors.Wrapf(err, "kernel bundle: reading kernel %s", k.Op)
		}
		name := "kernels/" + k.Key + ".so"
		files[name] = data
		m.Kernels = append(m.Kernels, Entry{Key: k.Key, Op: k.Op, File: name, SHA256: sum(data), Size: int64(len(data))})
	}
	if len(c.Records) > 0 {
		files[recordsName] = c.Records
		m.Tuning = &Records{File: recordsName, SHA256: sum(c.Records), Size: int64(len(c.Records)), Records: c.NumRecords}
	}
	manifest, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, errors.Wrap(err, "kernel bundle: manifest")
	}
	if err := writeZip(path, manifest, files); err != nil {
		return nil, errors.Wrapf(err, "kernel bundle: writing %s", path)
	}
	return m, nil
}

// writeZip writes the manifest first, then the files in name order, into
// a temporary file next to path that is renamed onto it.
func writeZip(path string, manifest []byte, files map[string][]byte) (err error) {
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	zw := zip.NewWriter(f)
	names := []string{manifestName}
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names[1:])
	files[manifestName] = manifest
	for _, n := range names {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: n, Method: zip.Deflate})
		if err != nil {
			return err
		}
		if _, err := w.Write(files[n]); err != nil {
			return err
		}
	}
	if err := zw.Close(); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

func sum(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

func validKey(key string) bool {
	if len(key) != 64 {
		return false
	}
	b, err := hex.DecodeString(key)
	return err == nil && hex.EncodeToString(b) == key
}
