package torchbridge

import (
	"sync"

	"github.com/neoflow/neoflow/api"
	"github.com/neoflow/neoflow/autotune"
	"github.com/neoflow/neoflow/autotune/tunedb"
	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/loops"
)

// warmIndex is the tuning database's records that carry a genome, by
// family (autotune.Family), read from the database the first time a
// kernel has no record of its own and kept up to date with the records
// this process stores. A kernel at a new shape starts from the nearest
// shape's record (warmSeeds, warmDefault).
type warmIndex struct {
	mu     sync.Mutex
	loaded bool
	byFam  map[string]map[string]*api.TuneRecord // family -> record id -> record
}

// add indexes rec; the caller holds mu.
func (w *warmIndex) add(rec *api.TuneRecord) {
	if rec.GetFamily() == "" || len(rec.GetGenome()) == 0 {
		return
	}
	if w.byFam == nil {
		w.byFam = map[string]map[string]*api.TuneRecord{}
	}
	m := w.byFam[rec.GetFamily()]
	if m == nil {
		m = map[string]*api.TuneRecord{}
		w.byFam[rec.GetFamily()] = m
	}
	m[tunedb.ID(rec.GetKey())] = rec
}

// stored tells the index of a record this process stored in db (nothing
// when db is no longer the settings' database).
func (r *Runtime) stored(db *tunedb.DB, rec *api.TuneRecord) {
	r.mu.Lock()
	current := r.db == db
	r.mu.Unlock()
	if !current {
		return
	}
	r.warm.mu.Lock()
	defer r.warm.mu.Unlock()
	if r.warm.loaded {
		r.warm.add(rec)
	}
}

// nearestRecord is the record of key's family (spec's kernel at other
// shapes) whose shapes are nearest key's (autotune.ShapeDistance),
// preferring tuned records to picks at equal distance; nil when none.
func (r *Runtime) nearestRecord(spec *ir.Spec, key *api.TuneKey) *api.TuneRecord {
	db, err := r.tuneDB()
	if err != nil {
		return nil
	}
	r.warm.mu.Lock()
	defer r.warm.mu.Unlock()
	if !r.warm.loaded {
		r.warm.loaded = true
		entries, err := db.List()
		if err != nil {
			r.warnf("tuning database unreadable, no warm start from other shapes: %v", err)
		}
		for _, e := range entries {
			r.warm.add(e.Record)
		}
	}
	fam := autotune.Family(spec, Version, key.GetTarget())
	var best *api.TuneRecord
	bestD := 0.0
	for _, rec := range r.warm.byFam[fam] {
		d, ok := autotune.ShapeDistance(key, rec.GetKey())
		if !ok || d == 0 {
			continue
		}
		if rec.GetTrials() == 0 {
			d += 1e-9 // a pick loses a tie to a tuned record
		}
		if best == nil || d < bestD || d == bestD && tunedb.ID(rec.GetKey()) < tunedb.ID(best.GetKey()) {
			best, bestD = rec, d
		}
	}
	return best
}

// WarmGain is how much faster than the default schedules a record's own
// tuned schedules must have been at its shape (its default seconds over
// its best) for a new shape to build with the record's projection before
// anything was measured there; below it the defaults are near tuned speed
// for this kernel, and the projection is only a candidate of the picks
// and a seed of the search. Measured on GEMM and batched GEMM
// (bench/warm.py, 2026-11-26): first builds projected from a shape tuned
// 3-6x over its defaults ran 1.2-9.4x faster than the defaults (geomean
// 3.6x), at 0.87x the speed of each shape's own tuning.
const WarmGain = 1.25

// warmDefault is the warm start's schedules where its record gained
// WarmGain over its defaults, else nil (the defaults).
func (r *Runtime) warmDefault(spec *ir.Spec, key *api.TuneKey, gpu bool) []loops.Schedule {
	rec := r.nearestRecord(spec, key)
	if rec == nil || rec.GetBestSeconds() <= 0 || rec.GetDefaultSeconds() < WarmGain*rec.GetBestSeconds() {
		return nil
	}
	if _, scheds, ok := autotune.WarmStart(spec, rec, gpu); ok {
		return scheds
	}
	return nil
}

// warmSeeds is the warm start's genome (the record of spec's nearest
// tuned shape, projected onto it) as the seeds of a search or the extra
// candidates of a pick, for spec's kernel under key; nil when there is
// none.
func (r *Runtime) warmSeeds(spec *ir.Spec, key *api.TuneKey, gpu bool) [][]int {
	rec := r.nearestRecord(spec, key)
	if rec == nil {
		return nil
	}
	if g, _, ok := autotune.WarmStart(spec, rec, gpu); ok {
		return [][]int{g}
	}
	return nil
}
