package torchbridge

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"

	"github.com/pkg/errors"

	"github.com/neoflow/neoflow/api"
	"github.com/neoflow/neoflow/autotune/tunedb"
	"github.com/neoflow/neoflow/core/fuse"
	"github.com/neoflow/neoflow/kernels"
	"github.com/neoflow/neoflow/kernels/bundle"
	"github.com/neoflow/neoflow/kernels/cache"
)

// Kernel bundles (kernels/bundle): SaveBundle writes the C kernels this
// process launched, the tuning records that chose their schedules and the
// fusion rates into one file; a process started with that file
// (InitRequest.bundle, NEOFLOW_BUNDLE) loads those kernels from it instead
// of compiling them, imports the records into its tuning database and
// fuses with the bundle's rates, so that it derives the same kernels. A
// kernel the bundle lacks is compiled as usual. CUDA kernels are not
// bundled: NVRTC, which compiles them, comes with PyTorch's CUDA wheels.

// bundleState is the runtime's bundle in use and what it has launched.
type bundleState struct {
	open *bundle.Bundle // the bundle in use, nil without one
	// kernels are the C kernels launched, by portable key; records the
	// ids of the tuning records whose schedules they were built with.
	kernels map[string]bundle.Kernel
	records map[string]bool
}

// bundleTarget is what the runtime compiles C kernels for under cfg.
func bundleTarget(cfg Config) bundle.Target {
	return bundle.Target{HostID: cache.HostID(), Host: cache.HostDescription(), Flags: cfg.Compiler.EffectiveFlags()}
}

// openBundle opens cfg.Bundle for cfg, imports its tuning records into
// the database under cfg.CacheDir and decodes its fusion rates (nil when
// it has none). It returns nil, 0 without a bundle.
func openBundle(cfg Config, logf func(string, ...any)) (*bundle.Bundle, int, *fuse.Machine, error) {
	if cfg.Bundle == "" {
		return nil, 0, nil, nil
	}
	b, err := bundle.Open(cfg.Bundle, bundleTarget(cfg), Version, filepath.Join(cfg.CacheDir, "bundles"))
	if err != nil {
		return nil, 0, nil, err
	}
	var rates *fuse.Machine
	if raw := b.Manifest().FusionRates; len(raw) > 0 {
		rates = &fuse.Machine{}
		if err := json.Unmarshal(raw, rates); err != nil {
			return nil, 0, nil, errors.Wrapf(err, "kernel bundle %s: fusion rates", cfg.Bundle)
		}
	}
	n := 0
	if recs := b.Records(); len(recs) > 0 {
		db, err := tunedb.Open(filepath.Join(cfg.CacheDir, "tune"), logf)
		if err != nil {
			return nil, 0, nil, err
		}
		if n, err = db.Import(bytes.NewReader(recs)); err != nil {
			return nil, 0, nil, errors.Wrapf(err, "kernel bundle %s: importing its tuning records", cfg.Bundle)
		}
	}
	return b, n, rates, nil
}

// noteKernel records a C kernel launched for an op, for SaveBundle.
func (r *Runtime) noteKernel(k *kernels.Kernel) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.bundled.kernels == nil {
		r.bundled.kernels = map[string]bundle.Kernel{}
	}
	r.bundled.kernels[k.PortableKey()] = bundle.Kernel{Key: k.PortableKey(), Op: k.Spec().Op.Name, Path: k.Path()}
}

// noteRecord records the id of a tuning record a kernel was built with.
func (r *Runtime) noteRecord(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.bundled.records == nil {
		r.bundled.records = map[string]bool{}
	}
	r.bundled.records[id] = true
}

// SaveBundle writes the bundle of what this process launched.
func (r *Runtime) SaveBundle(req *api.BundleSaveRequest) (*api.BundleSaveResponse, error) {
	path := req.GetPath()
	if path == "" {
		return nil, errors.New("kernel bundle: no path given")
	}
	db, err := r.tuneDB()
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	cfg := r.cfg
	var ks, gone []bundle.Kernel
	for _, k := range r.bundled.kernels {
		if _, err := os.Stat(k.Path); os.IsNotExist(err) {
			gone = append(gone, k)
			continue
		}
		ks = append(ks, k)
	}
	var ids []string
	for id := range r.bundled.records {
		ids = append(ids, id)
	}
	r.mu.Unlock()
	for _, k := range gone {
		r.warnf("kernel bundle: kernel %s is no longer in the cache (%s was removed since it ran): not bundled", k.Op, k.Path)
	}
	sort.Strings(ids)
	ids = r.presentRecords(db, ids)
	c := bundle.Contents{Target: bundleTarget(cfg), Version: Version, Kernels: ks}
	if len(ids) > 0 {
		var buf bytes.Buffer
		if c.NumRecords, err = db.Export(&buf, ids...); err != nil {
			return nil, errors.Wrap(err, "kernel bundle: exporting tuning records")
		}
		c.Records = buf.Bytes()
	}
	if cfg.Fusion {
		if c.FusionRates, err = json.Marshal(r.machineRates()); err != nil {
			return nil, errors.Wrap(err, "kernel bundle: fusion rates")
		}
	}
	m, err := bundle.Write(path, c)
	if err != nil {
		return nil, err
	}
	text, _ := json.MarshalIndent(m, "", "  ")
	return &api.BundleSaveResponse{Kernels: int32(len(m.Kernels)), Records: int32(c.NumRecords), Manifest: string(text), Warnings: r.takeWarnings()}, nil
}

// presentRecords is ids without the records the tuning database no longer
// holds (cleared since their kernels were built), each named in a warning:
// the bundle then carries those kernels without their records.
func (r *Runtime) presentRecords(db *tunedb.DB, ids []string) []string {
	var out []string
	for _, id := range ids {
		ok, err := db.Has(id)
		switch {
		case err != nil:
			r.warnf("kernel bundle: tuning record %s: %v; the bundle leaves it out", id, err)
		case !ok:
			r.warnf("kernel bundle: tuning record %s is no longer in the tuning database (cleared?); the bundle carries its kernel without it", id)
		default:
			out = append(out, id)
		}
	}
	return out
}
