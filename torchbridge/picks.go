package torchbridge

import (
	"context"
	"time"

	"github.com/neoflow/neoflow/api"
	"github.com/neoflow/neoflow/autotune"
	"github.com/neoflow/neoflow/kernels/cc"
)

// Picked schedules (the default mode, NEOFLOW_TUNE unset). A C kernel
// built for a specialization without a tuning record, with enough work
// (autotune.Picks), is built with its default schedules and returned at
// once, and queued for the background worker (background.go), which
// measures the default, register-tiled and the search's seed schedules on
// its own buffers, takes the fastest per statement or fused group
// (autotune.PickDefaults), keeps
// that choice as a record of no trials in the tuning database (a later
// process builds with it at once; tuning replaces it), and swaps the
// picked kernel in where it differs. The first step pays nothing for it:
// the worker waits until no kernel was built for a while (waitQuiet) and
// runs at a low CPU priority (background.go); the pick lands seconds later
// on an idle machine, tens of seconds later behind a training that keeps
// every core busy (a dozen kernels compiled, each launched three times).
// NEOFLOW_TUNE=off turns it off.

// pickJob picks job's schedules, keeps the record and swaps the kernel in.
func (r *Runtime) pickJob(job *bgJob) error {
	b, err := r.kernelBuilder()
	if err != nil {
		return err
	}
	ctx := cc.WithLowPriority(context.Background())
	p, err := autotune.PickDefaults(ctx, b, job.spec, r.config().NumThreads, r.warmSeeds(job.spec, job.key, false))
	if err != nil {
		return err
	}
	progress := autotune.Progress{Trials: p.Candidates, Budget: p.Candidates, Default: p.Default, Best: p.Best, Done: true}
	if p.Best <= 0 {
		r.bg.mu.Lock()
		job.progress = progress
		r.bg.mu.Unlock()
		return nil
	}
	db := job.db
	rec := &api.TuneRecord{Key: job.key, OpName: job.spec.Op.Name, Schedules: autotune.ToProto(p.Decided()),
		BestSeconds: p.Best, DefaultSeconds: p.Default, Created: time.Now().UTC().Format(time.RFC3339),
		Family: autotune.Family(job.spec, Version, job.key.GetTarget()), Genome: autotune.RecordGenome(p.Genome)}
	if _, err := db.Put(rec); err != nil {
		return err
	}
	r.stored(db, rec)
	// The decided schedules replace the kernel's where they differ: the
	// picked ones, or the defaults where they beat the register tiles of
	// a first build (autotune.FirstSchedules).
	swapped, err := r.swapIn(ctx, b, job, p.Decided())
	if err != nil {
		return err
	}
	r.bg.mu.Lock()
	job.progress, job.swapped = progress, swapped
	r.bg.mu.Unlock()
	return nil
}
