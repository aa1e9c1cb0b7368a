package torchbridge

import (
	"bytes"
	"context"
	"path/filepath"
	"time"

	"github.com/pkg/errors"

	"github.com/neoflow/neoflow/api"
	"github.com/neoflow/neoflow/autotune"
	"github.com/neoflow/neoflow/autotune/tunedb"
	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/loops"
)

// Tune modes (NEOFLOW_TUNE): what happens on first use of a new shape.
const (
	// TuneOff ignores the tuning database: default schedules only.
	TuneOff = "off"
	// TuneDefault applies the database's best schedules when it has a
	// record, the default schedules otherwise; nothing is tuned unless
	// asked (neoflow.tune).
	TuneDefault = "default"
	// TuneFull tunes every kernel without a record on first use (Python
	// drives the session) and stores the result.
	TuneFull = "full"
	// TuneBackground builds the default schedule of a kernel without a
	// record and tunes it behind the calls, swapping the faster kernel in
	// (background.go).
	TuneBackground = "background"
)

// session is one kernel being tuned.
type session struct {
	op    *ir.Op // the op registered, whose specialization's kernel is tuned
	tuner *autotune.Tuner
	ctx   context.Context
	stop  context.CancelFunc
}

// tuneDB opens the tuning database under the cache directory.
func (r *Runtime) tuneDB() (*tunedb.DB, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cfgErr != nil {
		return nil, r.cfgErr
	}
	if r.db == nil {
		db, err := tunedb.Open(filepath.Join(r.cfg.CacheDir, "tune"), r.warnf)
		if err != nil {
			return nil, err
		}
		r.db = db
	}
	return r.db, nil
}

// firstSchedules is the Pick of a CPU kernel's build: unless NEOFLOW_TUNE
// is off, the database's schedules for spec's CPU kernel on this machine
// (tuned, or picked, picks.go), else those of its nearest shape's record
// projected onto it (warm.go); without either, untunedSchedules.
func (r *Runtime) firstSchedules(spec *ir.Spec) []loops.Schedule {
	if r.config().Tune != TuneOff {
		if s := r.recordSchedules(spec, autotune.Key(spec, Version), false); s != nil {
			return s
		}
	}
	return r.untunedSchedules(spec)
}

// untunedSchedules is the schedules of a CPU kernel without a record: the
// defaults (nil), which compile fastest, where the background picks them
// over (NEOFLOW_TUNE=default: a first step of the MI-LSTM workload took
// 1.0 s so, 1.6 s with the register tiles below, whose kernels take longer
// to compile), and the register tiles of autotune.FirstSchedules with
// NEOFLOW_TUNE=off, where nothing is picked (float32 GEMM 1024^3 14 ms
// against the defaults' 115 ms; 2-core Xeon), and with background, whose
// training runs on one thread fewer while the worker picks and searches:
// LLTM's steps of its first seconds took 24-25 ms with the defaults, 18-19
// ms with the tiles, its first step 0.74-0.79 s against 0.97-1.05 s.
func (r *Runtime) untunedSchedules(spec *ir.Spec) []loops.Schedule {
	if t := r.config().Tune; t != TuneOff && t != TuneBackground {
		return nil
	}
	return autotune.FirstSchedules(spec)
}

// recordSchedules is the schedules of the database's record under key,
// else of the warm start from its nearest shape (the CUDA space when
// gpu), or nil. A record that does not fit the spec is reported and
// ignored.
func (r *Runtime) recordSchedules(spec *ir.Spec, key *api.TuneKey, gpu bool) []loops.Schedule {
	db, err := r.tuneDB()
	if err != nil {
		r.warnf("tuning database unavailable, using default schedules: %v", err)
		return nil
	}
	rec, ok, err := db.Get(key)
	if err != nil {
		return nil
	}
	if !ok {
		return r.warmDefault(spec, key, gpu)
	}
	scheds, err := autotune.FromProto(rec.GetSchedules())
	if err == nil && len(scheds) != len(spec.Stmts) {
		err = errors.Errorf("%d schedules for %d statements", len(scheds), len(spec.Stmts))
	}
	if err != nil {
		r.warnf("tuning record of kernel %s ignored: %v", spec.Op.Name, err)
		return nil
	}
	r.noteRecord(tunedb.ID(key))
	return scheds
}

// gpuInfo is what the runtime keeps of a CUDA device: its tuning target
// (autotune.GPUTarget) and its architecture (compute capability × 10).
type gpuInfo struct {
	target string
	arch   int
}

// gpu is CUDA device ordinal's gpuInfo, asked of the driver once.
func (r *Runtime) gpu(ordinal int) (gpuInfo, error) {
	r.mu.Lock()
	g, ok := r.gpus[ordinal]
	r.mu.Unlock()
	if ok {
		return g, nil
	}
	t, arch, err := autotune.CUDATarget(ordinal)
	if err != nil {
		return g, err
	}
	g = gpuInfo{target: t, arch: arch}
	r.mu.Lock()
	r.gpus[ordinal] = g
	r.mu.Unlock()
	return g, nil
}

// tuneKey is the database key of spec's kernel on CUDA device ordinal,
// or of its CPU kernel when ordinal is negative.
func (r *Runtime) tuneKey(spec *ir.Spec, ordinal int) (*api.TuneKey, error) {
	if ordinal < 0 {
		return autotune.Key(spec, Version), nil
	}
	g, err := r.gpu(ordinal)
	if err != nil {
		return nil, err
	}
	return autotune.KeyFor(spec, Version, g.target), nil
}

// TuneBegin starts a tuning session for the kernel of a specialization.
func (r *Runtime) TuneBegin(req *api.TuneRequest) (*api.TuneResponse, error) {
	op, in, err := r.opInputs(req.GetOpId(), req.GetInputs())
	if err != nil {
		return nil, err
	}
	ord := int(req.GetCudaDevice()) - 1
	skey := r.specializationKey(req.GetInputs(), req.GetSizes(), req.GetCudaDevice()) // the kernel's spec, kept
	spec, _, err := r.specialize(op, in, req.GetSizes(), ord < 0, skey)
	if err != nil {
		return nil, err
	}
	resp := &api.TuneResponse{Kernel: op.DisplayName()}
	if ord >= 0 {
		if err := requireCUDA("tuning a CUDA kernel"); err != nil {
			return nil, err
		}
	}
	key, err := r.tuneKey(spec, ord)
	if err != nil {
		return nil, err
	}
	db, err := r.tuneDB()
	if err != nil {
		return nil, err
	}
	if !req.GetForce() {
		if rec, ok, _ := db.Get(key); ok && rec.GetTrials() > 0 { // a pick is not tuned
			resp.Already = true
			resp.Progress = &api.TuneProgress{Trials: rec.GetTrials(), BestSeconds: rec.GetBestSeconds(), DefaultSeconds: rec.GetDefaultSeconds(), Done: true}
			return resp, nil
		}
	}
	b, err := r.kernelBuilder()
	if err != nil {
		return nil, err
	}
	threads := int(req.GetNumThreads())
	if threads < 1 {
		threads = r.config().NumThreads
	}
	opts := autotune.Options{
		Trials:  int(req.GetTrials()),
		Time:    time.Duration(req.GetSeconds() * float64(time.Second)),
		Seed:    req.GetSeed(),
		Timing:  autotune.Timing{Threads: threads},
		Version: Version,
		Seeds:   r.warmSeeds(spec, key, ord >= 0),
	}
	var t *autotune.Tuner
	if ord >= 0 {
		var gpu autotune.GPU
		if gpu, err = autotune.NewCUDAGPU(b, ord); err == nil {
			t, err = autotune.NewGPUTuner(gpu, spec, opts)
		}
	} else {
		t, err = autotune.NewTuner(b, spec, opts)
	}
	if err != nil {
		return nil, err
	}
	ctx, stop := context.WithCancel(context.Background())
	r.mu.Lock()
	r.nextSession++
	id := r.nextSession
	r.sessions[id] = &session{op: op, tuner: t, ctx: ctx, stop: stop}
	r.mu.Unlock()
	resp.SessionId = id
	resp.Budget = int32(max(req.GetTrials(), 0))
	if resp.Budget == 0 {
		resp.Budget = autotune.DefaultTrials
	}
	return resp, nil
}

func (r *Runtime) session(id uint64) (*session, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.sessions[id]
	if s == nil {
		return nil, errors.Errorf("no tuning session %d", id)
	}
	return s, nil
}

// TuneStep measures one configuration of a session.
func (r *Runtime) TuneStep(req *api.TuneStepRequest) (*api.TuneProgress, error) {
	s, err := r.session(req.GetSessionId())
	if err != nil {
		return nil, err
	}
	p, err := s.tuner.Step(s.ctx)
	if err != nil {
		return nil, err
	}
	return progressProto(p), nil
}

// TuneEnd closes a session, storing its best schedules when asked. The
// next specialization of that kernel builds with them. A saved CPU
// gradient kernel is first tuned jointly with its forward kernel when that
// was tuned lately (joint.go); a saved CPU kernel of any other op is kept
// for that.
func (r *Runtime) TuneEnd(req *api.TuneStepRequest) (*api.TuneProgress, error) {
	s, err := r.session(req.GetSessionId())
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	delete(r.sessions, req.GetSessionId())
	r.mu.Unlock()
	s.stop()
	kept := false
	defer func() {
		if !kept {
			s.tuner.Close()
		}
	}()
	if !req.GetSave() || s.tuner.Record() == nil {
		return progressProto(s.tuner.Progress()), nil
	}
	db, err := r.tuneDB()
	if err != nil {
		return nil, err
	}
	joint, err := r.tuneWithForward(db, s.op, s.tuner)
	if err != nil { // the kernel's own search stands: store it
		r.warnf("tuning %s together with its forward kernel failed, keeping the choices made apart: %v", s.op.DisplayName(), err)
		joint = autotune.Joint{}
	}
	out := progressProto(s.tuner.Progress())
	out.Joint, out.JointBeforeSeconds, out.JointAfterSeconds = joint.String(), joint.Before, joint.After
	rec := s.tuner.Record()
	put := db.Put
	if joint.Changed {
		put = db.Replace // the pair's choice, though maybe slower alone than a record's
	}
	stored, err := put(rec)
	if err != nil {
		return nil, err
	}
	r.stored(db, rec)
	out.RecordId, out.Stored = tunedb.ID(rec.GetKey()), stored
	kept = r.keepForward(s.op, s.tuner)
	r.forgetSpecs() // rebuild with the record
	return out, nil
}

// TuneDB runs a tuning-database command.
func (r *Runtime) TuneDB(req *api.TuneDBRequest) (*api.TuneDBResponse, error) {
	db, err := r.tuneDB()
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	r.takeWarnings() // reports of earlier builds belong to those builds
	err = tunedb.Run(db, req.GetArgs(), &out)
	warns := r.takeWarnings()
	if err != nil {
		return nil, err
	}
	if len(req.GetArgs()) > 0 && req.GetArgs()[0] != "list" && req.GetArgs()[0] != "show" && req.GetArgs()[0] != "export" {
		r.forgetSpecs()
	}
	return &api.TuneDBResponse{Output: out.String(), Warnings: warns}, nil
}

// forgetSpecs drops the cached specializations, so that the next call of
// each rebuilds its kernel (finding the tuning database's record).
func (r *Runtime) forgetSpecs() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.specs = map[uint64]map[string]*api.SpecializeResponse{}
}

func progressProto(p autotune.Progress) *api.TuneProgress {
	return &api.TuneProgress{
		Trials:         int32(p.Trials),
		Budget:         int32(p.Budget),
		Failed:         int32(p.Failed),
		Generation:     int32(p.Generation),
		BestSeconds:    p.Best,
		DefaultSeconds: p.Default,
		ElapsedSeconds: p.Elapsed.Seconds(),
		Done:           p.Done,
	}
}
