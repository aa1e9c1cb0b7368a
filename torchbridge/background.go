package torchbridge

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/neoflow/neoflow/api"
	"github.com/neoflow/neoflow/autotune"
	"github.com/neoflow/neoflow/autotune/tunedb"
	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/loops"
	"github.com/neoflow/neoflow/kernels"
	"github.com/neoflow/neoflow/kernels/cc"
)

// Background tuning (NEOFLOW_TUNE=background). A C kernel built for a
// specialization without a tuning record is built with its default
// schedules and returned at once; it is also queued for one worker
// goroutine, which tunes the queued kernels one at a time (the genetic
// search of autotune.Tuner, on its own buffers, never the caller's
// tensors, with the calls' thread count), stores the record, and, when
// the best schedule is faster than the default one, builds that kernel
// and swaps its entry point into the kernel id the calls launch
// (launchable.fn, loaded atomically by every launch): a call never waits
// for tuning, and the kernel changes between two calls. The kernel it
// replaces stays loaded until the id is unloaded. The worker stops when
// its trial budget (backgroundTrials) is spent. Before the search it
// picks the kernel's schedules as the default mode does (picks.go) and
// swaps the picked kernel in, seconds after the first call; the search
// then starts from the pick's genome. Every queued kernel is picked before
// any is searched (nextJob): a search takes a minute or more, and a
// kernel queued behind one waited that long for its pick, seconds' work
// that makes a first build's kernel several times faster where it has
// enough work. In the default mode the worker only picks. CUDA kernels
// are searched by the same worker (background_cuda.go).
//
// The worker runs at a low CPU priority (cc.LowPriority, nice 10): its
// thread, the OpenMP team it times kernels with and the compilers it
// starts (started from a thread at that priority, they and their children
// inherit it). In background mode its compilers run under SCHED_IDLE
// besides (cc.WithIdleCompiles), and while it runs a job the calls'
// launches take one thread fewer (launchThreads), which leaves those
// compilers a core; kernels/cc's priority.go says why, and why the default
// mode's picks do neither. On two cores (bench/results/dynamic-2026-11-27-
// cpu-xeon*.md) that took the worst LLTM step from 16.3 to 9.0 times the
// final median and ended the tuning of LLTM and MI-LSTM at 84 s instead of
// 92 and 112 s; the steps run about twice as long while it works, against
// spikes of 100-290 ms before. At normal priority, with one thread fewer,
// MI-LSTM and subLSTM steps took 2 to 5 times as long until the picks
// landed, and the timings were as noisy.

// backgroundTrials is the trial budget of one kernel tuned in the
// background.
const backgroundTrials = 48

// workerThreads is the thread count background mode's worker times
// kernels with (its picks and searches): the one core that the calls'
// launches and PyTorch's operators leave it while it runs a job
// (launchThreads, neoflow/threadshare.py). Timed with the calls' thread
// count, one of the team's threads shared a core with the training,
// whose thread outranks it (the worker runs at nice 10), and a
// candidate's time said more about when the training left that core
// than about the kernel: LLTM's three kernels searched so (bench size,
// batch 16, 2-core Xeon) ran its training steps at 15.8-16.1 ms in a
// quiet process, against 11.0-12.8 ms with the picks the search started
// from, and the search's own timings had called them 1.06-2.25x faster.
// Searched on one thread they ran at 9.9-12.7 ms. One thread's timings
// barely tell a parallel loop from a serial one, so the search keeps its
// genomes at least as parallel as the pick's (Options.KeepParallel),
// and the calls run them on every thread once the worker is done.
const workerThreads = 1

// background is the queue of kernels to tune and what became of them.
type background struct {
	mu      sync.Mutex
	order   []*bgJob
	byID    map[string]*bgJob // by tuning record id
	queue   []*bgJob
	running bool
	// busy is set while the worker runs a job: launches leave it a core
	// (launchThreads).
	busy atomic.Bool
	// onBusy, when set (OnBusy), is told each change of busy.
	onBusy atomic.Pointer[func(bool)]
	// lastBuild is when a specialization last started or finished building
	// a kernel (waitQuiet).
	lastBuild time.Time
}

// The worker starts a job once no kernel has been built for
// quietAfterBuild, waiting at most quietMax: a training step's first
// kernels are built one after another while it runs (the forward's, then
// at the backward the gradient's), and a pick or a search measured then
// would slow that first step (by about a second, measured on the MI-LSTM
// step on two cores) and be measured on a busy machine.
const (
	quietAfterBuild = 500 * time.Millisecond
	quietMax        = 10 * time.Second
)

// noteBuild records that a kernel build starts or ends now.
func (r *Runtime) noteBuild() {
	r.bg.mu.Lock()
	r.bg.lastBuild = time.Now()
	r.bg.mu.Unlock()
}

// waitQuiet returns once no kernel was built for quietAfterBuild, or
// after quietMax.
func (r *Runtime) waitQuiet() {
	deadline := time.Now().Add(quietMax)
	for {
		r.bg.mu.Lock()
		wait := time.Until(r.bg.lastBuild.Add(quietAfterBuild))
		r.bg.mu.Unlock()
		left := time.Until(deadline)
		if wait <= 0 || left <= 0 {
			return
		}
		time.Sleep(min(wait, left))
	}
}

// bgJob is one kernel tuned in the background. Fields below spec are
// guarded by background.mu.
type bgJob struct {
	name     string
	spec     *ir.Spec
	key      *api.TuneKey
	recordID string
	cacheKey string // the default kernel's, which kernel id runs
	kernelID uint64

	pick bool // a pick (picks.go), not a search
	// picked says that a search's pick is done (or had nothing to pick);
	// seeds are the genomes its search starts from.
	picked bool
	seeds  [][]int
	// db is the tuning database the job was queued under: its record goes
	// there even when the settings have moved to another cache since.
	db *tunedb.DB

	progress autotune.Progress
	swapped  bool
	err      string

	gpu *gpuJob // a CUDA kernel's device (background_cuda.go); nil for a C kernel
	sym *symJob // a size bucket of a kernel with symbolic extents (buckets.go); nil for others
}

// tuneInBackground queues spec's kernel k, launched as kernel id, when k
// is a plain C kernel and the mode is background and no tuned record
// exists, or the mode is default, no record exists and the kernel is one
// whose schedules are picked (autotune.Picks).
func (r *Runtime) tuneInBackground(spec *ir.Spec, k *kernels.Kernel, id uint64) {
	mode := r.config().Tune
	switch {
	case k.Profiled(), mode != TuneBackground && mode != TuneDefault:
		return
	case mode == TuneDefault && !autotune.Picks(spec):
		return // too little work to pick for
	}
	r.enqueue(&bgJob{name: spec.Op.DisplayName(), spec: spec, key: autotune.Key(spec, Version), cacheKey: k.Key(), kernelID: id, pick: mode == TuneDefault})
}

// enqueue queues job for the worker, and starts the worker if none runs,
// unless a job of its record was queued before or the tuning database
// holds its record tuned (or, for a pick, at all): its kernel was built
// with the record's schedules.
func (r *Runtime) enqueue(job *bgJob) {
	job.recordID = tunedb.ID(job.key)
	r.bg.mu.Lock()
	known := r.bg.byID[job.recordID] != nil
	r.bg.mu.Unlock()
	if known {
		return
	}
	db, err := r.tuneDB()
	if err != nil {
		return
	}
	if rec, ok, _ := db.Get(job.key); ok && (job.pick || rec.GetTrials() > 0) {
		return
	}
	job.db = db
	r.bg.mu.Lock()
	defer r.bg.mu.Unlock()
	if r.bg.byID == nil {
		r.bg.byID = map[string]*bgJob{}
	}
	if r.bg.byID[job.recordID] != nil {
		return
	}
	r.bg.byID[job.recordID] = job
	r.bg.order = append(r.bg.order, job)
	r.bg.queue = append(r.bg.queue, job)
	if !r.bg.running {
		r.bg.running = true
		go r.backgroundWorker()
	}
}

// backgroundWorker runs the queued jobs on a thread of its own at a low
// priority (cc.OnOwnThread), which ends when the queue is empty: the
// OpenMP pool it times kernels with, and that pool's priority, end with
// it. While that pool exists the process has more OpenMP threads than
// cores on a machine the training fills, and libgomp makes every team's
// idle threads sleep between parallel regions instead of spinning: on two
// cores that costs the training's steps about a third (LLTM, eager
// PyTorch: 12 -> 16 ms), and it is also what leaves the low-priority
// worker any CPU: timed on threads of their own that ended after each
// timing, the candidates of LLTM's three kernels were still being tuned
// after 150 s, against about 65 s on one thread for the whole queue.
func (r *Runtime) backgroundWorker() {
	cc.OnOwnThread(cc.WithLowPriority(context.Background()), r.runQueue)
}

// runQueue runs the queued jobs until none is left.
func (r *Runtime) runQueue() {
	for {
		r.bg.mu.Lock()
		if len(r.bg.queue) == 0 {
			r.bg.running = false
			r.bg.mu.Unlock()
			return
		}
		r.bg.mu.Unlock()
		r.waitQuiet()
		job := r.nextJob()
		if job == nil { // Shutdown emptied the queue
			continue
		}
		run := r.tuneJob
		switch {
		case job.gpu != nil:
			run = r.tuneCUDAJob
		case job.sym != nil:
			run = r.pickBucketJob
		case job.pick:
			run = r.pickJob
		case !job.picked:
			run = r.searchPick
		}
		// A default mode's pick leaves the calls every thread
		// (cc.WithIdleCompiles); a CUDA kernel's search times on the GPU.
		r.bg.setBusy(!job.pick && job.gpu == nil)
		err := run(job)
		r.bg.setBusy(false)
		if err != nil {
			r.bg.mu.Lock()
			job.err = err.Error()
			job.progress.Done = true
			r.bg.mu.Unlock()
		}
	}
}

// setBusy sets busy and tells onBusy.
func (b *background) setBusy(busy bool) {
	b.busy.Store(busy)
	if f := b.onBusy.Load(); f != nil {
		(*f)(busy)
	}
}

// OnBusy has f told whenever the background worker starts (true) or ends
// (false) a job of background mode, during which the calls' C kernel
// launches take one thread fewer (launchThreads). The library publishes it
// to Python, which lowers PyTorch's own thread count meanwhile
// (neoflow/threadshare.py).
func (r *Runtime) OnBusy(f func(busy bool)) {
	r.bg.onBusy.Store(&f)
}

// nextJob takes the next job off the queue: the first whose pick is to
// be done (a pick job, or a search not yet picked), else the first; nil
// if the queue is empty.
func (r *Runtime) nextJob() *bgJob {
	r.bg.mu.Lock()
	defer r.bg.mu.Unlock()
	if len(r.bg.queue) == 0 {
		return nil
	}
	i := slices.IndexFunc(r.bg.queue, func(j *bgJob) bool { return j.pick || !j.picked })
	i = max(i, 0)
	job := r.bg.queue[i]
	r.bg.queue = slices.Delete(r.bg.queue, i, i+1)
	return job
}

// searchPick is a search job's first part: the pick (seconds, not
// minutes), whose kernel runs while the search goes on, which starts
// from its genome. The job goes back to the end of the queue for its
// search.
func (r *Runtime) searchPick(job *bgJob) error {
	b, err := r.kernelBuilder()
	if err != nil {
		return err
	}
	seeds := r.warmSeeds(job.spec, job.key, false)
	swapped := false
	if autotune.Picks(job.spec) {
		ctx := cc.WithIdleCompiles(context.Background())
		p, err := autotune.PickDefaults(ctx, b, job.spec, workerThreads, seeds)
		if err == nil && p.Schedules != nil {
			if swapped, err = r.swapIn(ctx, b, job, p.Schedules); err != nil {
				return err
			}
			seeds = append([][]int{p.Genome}, seeds...) // first: the search keeps its parallelism (KeepParallel)
		}
	}
	r.bg.mu.Lock()
	defer r.bg.mu.Unlock()
	job.picked, job.seeds, job.swapped = true, seeds, swapped
	r.bg.queue = append(r.bg.queue, job)
	return nil
}

// tuneJob tunes one kernel (after its pick, searchPick), stores its
// record and swaps the faster kernel in.
func (r *Runtime) tuneJob(job *bgJob) error {
	b, err := r.kernelBuilder()
	if err != nil {
		return err
	}
	opts := autotune.Options{Trials: backgroundTrials, Timing: autotune.Timing{Threads: workerThreads}, Version: Version, Seeds: job.seeds,
		KeepParallel: true}
	ctx := cc.WithIdleCompiles(context.Background())
	t, err := autotune.NewTuner(b, job.spec, opts)
	if err != nil {
		return err
	}
	defer t.Close()
	return r.search(ctx, job, t, func(scheds []loops.Schedule) (bool, error) { return r.swapIn(ctx, b, job, scheds) })
}

// search runs job's tuner t to the end of its budget, reporting its
// progress in job, stores its record and, where the search found a best
// schedule, has swap build that kernel and swap it in (swapIn,
// swapInCUDA).
func (r *Runtime) search(ctx context.Context, job *bgJob, t *autotune.Tuner, swap func([]loops.Schedule) (bool, error)) error {
	for {
		p, err := t.Step(ctx)
		if err != nil {
			return err
		}
		r.bg.mu.Lock()
		job.progress = p
		job.progress.Done = false // done once the kernel is swapped in
		r.bg.mu.Unlock()
		if p.Done {
			break
		}
	}
	if rec := t.Record(); rec != nil {
		if _, err := job.db.Put(rec); err != nil {
			return err
		}
		r.stored(job.db, rec)
	}
	p := t.Progress()
	swapped := false
	if p.Best > 0 { // the best may be the defaults where a first build took register tiles
		var err error
		if swapped, err = swap(t.Best()); err != nil {
			return err
		}
	}
	r.bg.mu.Lock()
	job.progress, job.swapped = p, swapped || job.swapped // a search's pick may have swapped one in
	r.bg.mu.Unlock()
	return nil
}

// swapIn builds job's kernel with scheds and makes job's kernel id launch
// it, if the id still runs the default kernel it was queued with.
func (r *Runtime) swapIn(ctx context.Context, b *kernels.Builder, job *bgJob, scheds []loops.Schedule) (bool, error) {
	k, err := b.BuildScheduled(ctx, job.spec, scheds)
	if err != nil {
		return false, err
	}
	if k.Key() == job.cacheKey {
		_ = k.Close() // the kernel that runs already
		return false, nil
	}
	unload := func() { _ = k.Close() }
	if !r.replace(job, func(l *launchable) { l.fn.Store(k.Addr()) }, unload) {
		unload() // unloaded meanwhile: the next specialization builds from the record
		return false, nil
	}
	r.noteKernel(k) // a bundle saved now carries the tuned kernel and the record that builds it
	r.noteRecord(job.recordID)
	return true, nil
}

// replace runs swap on the entry of job's kernel id, whose unloading then
// runs unload too, if the id still runs the kernel job was queued with;
// it reports whether it did.
func (r *Runtime) replace(job *bgJob, swap func(l *launchable), unload func()) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	table := *r.table.Load()
	if job.kernelID >= uint64(len(table)) || table[job.kernelID] == nil || table[job.kernelID].key != job.cacheKey {
		return false
	}
	l := table[job.kernelID]
	swap(l)
	r.publish(job.kernelID, l)
	prev := l.close
	l.close = func() { prev(); unload() }
	return true
}

// TuneStatus reports the kernels tuned in the background.
func (r *Runtime) TuneStatus() *api.TuneStatusResponse {
	r.bg.mu.Lock()
	defer r.bg.mu.Unlock()
	out := &api.TuneStatusResponse{}
	for _, j := range r.bg.order {
		p := progressProto(j.progress)
		p.RecordId = j.recordID
		out.Kernels = append(out.Kernels, &api.BackgroundKernel{Kernel: j.name, RecordId: j.recordID, Progress: p, Swapped: j.swapped, Error: j.err})
		if !j.progress.Done {
			out.Pending++
		}
	}
	return out
}
