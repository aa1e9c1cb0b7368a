package bundle

import (
	"archive/zip"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/pkg/errors"

	"github.com/neoflow/neoflow/internal/fsutil"
	"github.com/neoflow/neoflow/kernels/cc"
)

// Bundle is an opened, verified bundle.
type Bundle struct {
	path     string
	manifest Manifest
	byKey    map[string]Entry
	dir      string // where kernels are extracted
	records  []byte

	mu        sync.Mutex
	extracted map[string]bool
}

// Open reads the bundle at path and verifies it for a process that
// builds for target with neoflow version: the manifest, the target, and
// every member's size and checksum. Kernels are extracted on first use
// into a directory under dir (created 0700) named for the manifest's
// checksum.
func Open(path string, target Target, version string, dir string) (*Bundle, error) {
	zr, err := zip.OpenReader(path)
	if err != nil {
		return nil, errors.Wrapf(err, "kernel bundle %s: not a readable bundle", path)
	}
	defer zr.Close()
	b := &Bundle{path: path, byKey: map[string]Entry{}, extracted: map[string]bool{}}
	members := byName(zr)
	raw, err := readMember(members, manifestName, maxManifest)
	if err != nil {
		return nil, errors.Wrapf(err, "kernel bundle %s", path)
	}
	if err := json.Unmarshal(raw, &b.manifest); err != nil {
		return nil, errors.Wrapf(err, "kernel bundle %s: unreadable manifest", path)
	}
	if err := b.check(target, version); err != nil {
		return nil, errors.Wrapf(err, "kernel bundle %s", path)
	}
	for _, e := range b.manifest.Kernels {
		if _, err := verified(members, e.File, e.Size, e.SHA256, maxKernel); err != nil {
			return nil, errors.Wrapf(err, "kernel bundle %s: kernel %s", path, e.Op)
		}
		b.byKey[e.Key] = e
	}
	if t := b.manifest.Tuning; t != nil {
		if b.records, err = verified(members, t.File, t.Size, t.SHA256, maxRecords); err != nil {
			return nil, errors.Wrapf(err, "kernel bundle %s: tuning records", path)
		}
	}
	b.dir = filepath.Join(dir, sum(raw)[:16])
	return b, nil
}

// check refuses a manifest of another format, version or target, and
// entries with invalid keys or file names.
func (b *Bundle) check(target Target, version string) error {
	m := &b.manifest
	if m.Format != Format {
		return errors.Errorf("manifest format %d, this neoflow reads format %d", m.Format, Format)
	}
	if m.Neoflow != version {
		return errors.Errorf("made by neoflow %s, this is neoflow %s: save the bundle again with this version", m.Neoflow, version)
	}
	if m.Target.HostID != target.HostID {
		return errors.Errorf("built for another target; its kernels would not run here.\nbundle target:\n%s\nthis machine:\n%s",
			indent(m.Target.Host), indent(target.Host))
	}
	if !slices.Equal(m.Target.Flags, target.Flags) {
		return errors.Errorf("compiled with flags %q, this process compiles with %q (NEOFLOW_CFLAGS): its kernels would differ",
			strings.Join(m.Target.Flags, " "), strings.Join(target.Flags, " "))
	}
	for _, e := range m.Kernels {
		if !validKey(e.Key) || e.File != "kernels/"+e.Key+".so" {
			return errors.Errorf("manifest entry %q (%s) is malformed", e.Key, e.File)
		}
	}
	return nil
}

func indent(text string) string {
	return "  " + strings.ReplaceAll(strings.TrimSpace(text), "\n", "\n  ")
}

// byName indexes an archive's members by name.
func byName(zr *zip.ReadCloser) map[string]*zip.File {
	out := make(map[string]*zip.File, len(zr.File))
	for _, f := range zr.File {
		out[f.Name] = f
	}
	return out
}

// readMember reads member name of at most limit bytes.
func readMember(members map[string]*zip.File, name string, limit int64) ([]byte, error) {
	f, ok := members[name]
	if !ok {
		return nil, errors.Errorf("no %s in it (not a neoflow kernel bundle?)", name)
	}
	if f.UncompressedSize64 > uint64(limit) {
		return nil, errors.Errorf("%s is %d bytes, more than %d", name, f.UncompressedSize64, limit)
	}
	r, err := f.Open()
	if err != nil {
		return nil, errors.Wrapf(err, "reading %s", name)
	}
	defer r.Close()
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, errors.Wrapf(err, "reading %s (the bundle is corrupt)", name)
	}
	return data, nil
}

// verified reads member name and checks its size and checksum.
func verified(members map[string]*zip.File, name string, size int64, sha string, limit int64) ([]byte, error) {
	data, err := readMember(members, name, limit)
	if err != nil {
		return nil, err
	}
	if int64(len(data)) != size || sum(data) != sha {
		return nil, errors.Errorf("%s does not match its checksum in the manifest (the bundle is corrupt)", name)
	}
	return data, nil
}

// Manifest is the bundle's manifest.
func (b *Bundle) Manifest() Manifest { return b.manifest }

// Path is the bundle's file.
func (b *Bundle) Path() string { return b.path }

// Len is the number of kernels.
func (b *Bundle) Len() int { return len(b.byKey) }

// Records are the tuning records (autotune/tunedb's export form), nil
// when the bundle has none.
func (b *Bundle) Records() []byte { return b.records }

// Library loads the kernel of key (one cc.Open, for the caller to
// Close), extracting it on first use; ok is false when the bundle has no
// such kernel. path is the file extracted.
func (b *Bundle) Library(key string) (lib *cc.Library, path string, ok bool, err error) {
	e, ok := b.byKey[key]
	if !ok {
		return nil, "", false, nil
	}
	path = filepath.Join(b.dir, key+".so")
	b.mu.Lock()
	if !b.extracted[key] {
		if err := b.extract(e, path); err != nil {
			b.mu.Unlock()
			return nil, "", true, errors.Wrapf(err, "kernel bundle %s: kernel %s", b.path, e.Op)
		}
		b.extracted[key] = true
	}
	b.mu.Unlock()
	lib, err = cc.Open(path)
	if err != nil {
		return nil, "", true, errors.Wrapf(err, "kernel bundle %s: loading kernel %s", b.path, e.Op)
	}
	return lib, path, true, nil
}

// extract writes entry e's kernel to path unless a file with its checksum
// is there already (another process extracted it), reading it from the
// bundle and checking it again.
func (b *Bundle) extract(e Entry, path string) error {
	if data, err := fsutil.ReadFile(path, maxKernel); err == nil && sum(data) == e.SHA256 {
		return nil
	}
	zr, err := zip.OpenReader(b.path)
	if err != nil {
		return errors.Wrap(err, "reopening the bundle")
	}
	defer zr.Close()
	members := byName(zr)
	data, err := verified(members, e.File, e.Size, e.SHA256, maxKernel)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(b.dir, 0o700); err != nil {
		return err
	}
	if err := fsutil.CheckPrivateDir(b.dir, true); err != nil {
		return err
	}
	return errors.Wrap(fsutil.WriteFileAtomic(path, data, 0o700), "extracting")
}
