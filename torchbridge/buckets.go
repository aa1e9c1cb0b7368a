package torchbridge

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/pkg/errors"
	"google.golang.org/protobuf/proto"

	"github.com/neoflow/neoflow/api"
	"github.com/neoflow/neoflow/autotune"
	"github.com/neoflow/neoflow/autotune/tunedb"
	"github.com/neoflow/neoflow/core/loops"
	"github.com/neoflow/neoflow/core/pipeline"
	"github.com/neoflow/neoflow/kernels"
	"github.com/neoflow/neoflow/kernels/cache"
	"github.com/neoflow/neoflow/kernels/cc"
)

// Size buckets of kernels with symbolic extents. A kernel built for every
// size (symbolic.go) runs its default schedules at first. A call then
// asks, once per size bucket (autotune.Bucket: each size rounded up to a
// power of two), for the kernel id of its bucket (SpecializeRequest.
// bucket_of, with the sizes' values). When the tuning database holds the
// bucket's record (autotune.BucketKey), the kernel is built with its
// schedules and that id runs it. When it holds none and the kernel has
// enough work at the bucket's sizes to pick for (autotune.Picks, as a
// kernel built per shape: below that, two more builds cost more than it
// can gain, and timings of microseconds behind a training mislead), the id
// runs the default kernel while the background worker picks the bucket's
// schedules (autotune.PickSymbolic), keeps the record, and swaps the
// fastest kernel in, in every mode but NEOFLOW_TUNE=off. Otherwise the
// bucket's id is the kernel's own. A size of a bucket met later, in this
// process or another, runs the bucket's kernel at once.

// symbolicKernel is what a kernel with symbolic extents was built from,
// kept by its kernel id for its buckets. ids is guarded by Runtime.mu.
type symbolicKernel struct {
	name  string
	at    pipeline.SpecAt
	sizes []loops.Size
	fn    *loops.Func             // lowered with the default schedules
	sized [][]string              // per tensor, per dimension: its size variable or ""
	resp  *api.SpecializeResponse // the kernel's own response, completed before its id is handed out
	ids   map[string]uint64       // the kernel id of each bucket met, by bucketLabel
}

// symJob is a bucket's pick (bgJob.sym): the kernel, and the bucket's
// sizes' values in the kernel's size order.
type symJob struct {
	kernel     *symbolicKernel
	values     []int64
	defaultKey string // the default kernel's cache key
}

// keepSymbolic registers k, a kernel with symbolic extents launched as
// kernel id, for the bucket requests of its calls.
func (r *Runtime) keepSymbolic(id uint64, name string, at pipeline.SpecAt, sizes []loops.Size, k *kernels.Kernel, resp *api.SpecializeResponse) {
	sk := &symbolicKernel{name: name, at: at, sizes: sizes, fn: k.Func(), resp: resp, ids: map[string]uint64{}}
	for _, t := range k.Spec().Tensors {
		sk.sized = append(sk.sized, sizeNames(t.Sizes))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.symbolic == nil {
		r.symbolic = map[uint64]*symbolicKernel{}
	}
	if r.symbolic[id] == nil {
		r.symbolic[id] = sk
	}
}

// bucketLabel names a bucket by its sizes' values ("s0=32,s1=8").
func bucketLabel(sizes []loops.Size, values []int64) string {
	parts := make([]string, len(sizes))
	for i, s := range sizes {
		parts[i] = fmt.Sprintf("%s=%d", s.Name, values[i])
	}
	return strings.Join(parts, ",")
}

// specializeBucket answers a request with bucket_of set: the kernel id
// that runs kernel bucket_of for the bucket of the sizes' values
// (size_values), held once more for the caller.
func (r *Runtime) specializeBucket(req *api.SpecializeRequest) (*api.SpecializeResponse, error) {
	sk, bucket, err := r.bucketOf(req)
	if err != nil {
		return nil, err
	}
	own := func() (*api.SpecializeResponse, error) {
		r.mu.Lock()
		defer r.mu.Unlock()
		if !r.acquire(req.GetBucketOf()) {
			return nil, errors.Errorf("size bucket: kernel %d is not loaded", req.GetBucketOf())
		}
		return sk.response(req.GetBucketOf()), nil
	}
	if r.config().Tune == TuneOff { // the defaults, whatever was picked before
		return own()
	}
	label := bucketLabel(sk.sizes, bucket)
	r.mu.Lock()
	id, ok := sk.ids[label]
	ok = ok && r.acquire(id)
	r.mu.Unlock()
	if ok {
		return sk.response(id), nil
	}
	values := map[string]int64{}
	for i, s := range sk.sizes {
		values[s.Name] = bucket[i]
	}
	spec, err := sk.at(values)
	if err != nil {
		return own() // no specialization at the bucket's sizes: the kernel's own id serves them
	}
	key := autotune.BucketKey(spec, sk.sized, Version)
	fn := r.bucketRecord(sk, key)
	if fn != nil {
		r.noteRecord(tunedb.ID(key)) // a bundle saved now carries the record that builds the bucket's kernel
	}
	tune := fn == nil && autotune.Picks(spec)
	if fn == nil && !tune {
		return own()
	}
	if fn == nil {
		fn = sk.fn // the default kernel, loaded once more, until the pick swaps another in
	}
	b, err := r.kernelBuilder()
	if err != nil {
		return nil, err
	}
	k, err := b.BuildFunc(r.buildContext(), fn)
	if err != nil {
		return nil, errors.Wrapf(err, "op %s, size bucket %s", sk.name, label)
	}
	defaultKey := k.Key()
	l := &launchable{nbufs: k.NumBufs(), close: func() { _ = k.Close() }}
	l.fn.Store(k.Addr())
	id = r.registerKernel(k.Key()+"#"+label, l)
	r.noteKernel(k)
	r.mu.Lock()
	sk.ids[label] = id
	r.mu.Unlock()
	if tune {
		r.enqueue(&bgJob{name: sk.name + " [" + label + "]", spec: spec, key: key, cacheKey: defaultKey + "#" + label, kernelID: id, pick: true,
			sym: &symJob{kernel: sk, values: bucket, defaultKey: defaultKey}})
	}
	resp := sk.response(id)
	resp.CSource, resp.CacheHit = k.Source(), k.Outcome() == cache.Hit || k.Outcome() == cache.Bundled
	return resp, nil
}

// bucketOf is the kernel with symbolic extents a bucket request names and
// its bucket's sizes' values.
func (r *Runtime) bucketOf(req *api.SpecializeRequest) (*symbolicKernel, []int64, error) {
	r.mu.Lock()
	sk := r.symbolic[req.GetBucketOf()]
	r.mu.Unlock()
	if sk == nil {
		return nil, nil, errors.Errorf("size bucket: kernel %d is not a loaded kernel with symbolic extents", req.GetBucketOf())
	}
	values := req.GetSizeValues()
	if len(values) != len(sk.sizes) {
		return nil, nil, errors.Errorf("size bucket: kernel %d takes %d sizes, the request gives %d", req.GetBucketOf(), len(sk.sizes), len(values))
	}
	bucket := make([]int64, len(values))
	for i, v := range values {
		if v < 1 {
			return nil, nil, errors.Errorf("size bucket: size %s is %d", sk.sizes[i].Name, v)
		}
		bucket[i] = autotune.Bucket(v)
	}
	return sk, bucket, nil
}

// response is the kernel's response for kernel id (its own or a bucket's).
func (sk *symbolicKernel) response(id uint64) *api.SpecializeResponse {
	resp := proto.Clone(sk.resp).(*api.SpecializeResponse)
	resp.KernelId, resp.Warnings = id, nil
	return resp
}

// bucketRecord is the kernel's loop nests under the schedules of the
// tuning database's record for a bucket (key), or nil when there is none
// or they do not lower (reported).
func (r *Runtime) bucketRecord(sk *symbolicKernel, key *api.TuneKey) *loops.Func {
	db, err := r.tuneDB()
	if err != nil {
		return nil
	}
	rec, ok, err := db.Get(key)
	if err != nil || !ok {
		return nil
	}
	scheds, err := autotune.FromProto(rec.GetSchedules())
	var fn *loops.Func
	if err == nil {
		var plan *pipeline.SymbolicPlan
		if plan, err = pipeline.PrepareSymbolic(sk.at, sk.sizes, pipeline.CPU); err == nil {
			fn, err = plan.Lower(scheds)
		}
	}
	if err != nil {
		r.warnf("tuning record of kernel %s ignored: %v", sk.name, err)
		return nil
	}
	return fn
}

// pickBucketJob picks the schedules of a kernel with symbolic extents for
// a bucket (autotune.PickSymbolic), keeps the record and swaps the
// fastest kernel into the bucket's id where it is not the default.
func (r *Runtime) pickBucketJob(job *bgJob) error {
	b, err := r.kernelBuilder()
	if err != nil {
		return err
	}
	sym := job.sym
	plan, err := pipeline.PrepareSymbolic(sym.kernel.at, sym.kernel.sizes, pipeline.CPU)
	if err != nil {
		return err
	}
	ctx := cc.WithLowPriority(context.Background())
	p, err := autotune.PickSymbolic(ctx, b, plan, job.spec, sym.values, r.config().NumThreads)
	if err != nil {
		return err
	}
	rec := &api.TuneRecord{Key: job.key, OpName: job.spec.Op.Name, Schedules: autotune.ToProto(p.Schedules),
		BestSeconds: p.Best, DefaultSeconds: p.Default, Created: time.Now().UTC().Format(time.RFC3339)}
	if _, err := job.db.Put(rec); err != nil {
		p.Kernel.Close()
		return err
	}
	swapped := false
	if k := p.Kernel; k.Key() != sym.defaultKey {
		unload := func() { _ = k.Close() }
		if swapped = r.replace(job, func(l *launchable) { l.fn.Store(k.Addr()) }, unload); !swapped {
			unload()
		} else {
			r.noteKernel(k) // a bundle saved now carries the picked kernel and the record that builds it
			r.noteRecord(job.recordID)
		}
	} else {
		_ = k.Close()
	}
	r.bg.mu.Lock()
	job.progress = autotune.Progress{Trials: p.Candidates, Budget: p.Candidates, Default: p.Default, Best: p.Best, Done: true}
	job.swapped = swapped
	r.bg.mu.Unlock()
	return nil
}
