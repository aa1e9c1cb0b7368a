package torchbridge

import (
	"fmt"
	"sort"
	"strings"

	"github.com/pkg/errors"

	"github.com/neoflow/neoflow/api"
	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/loops"
	"github.com/neoflow/neoflow/core/pipeline"
	"github.com/neoflow/neoflow/kernels"
	"github.com/neoflow/neoflow/kernels/cache"
)

// Specialize fixes an op's input shapes and dtype, infers every other shape,
// proves the accesses in bounds and builds (or finds) the kernel. With
// shapes_only it stops after inference, with source_only after generating
// the C source.
func (r *Runtime) Specialize(req *api.SpecializeRequest) (*api.SpecializeResponse, error) {
	if req.GetBucketOf() != 0 {
		return r.specializeBucket(req)
	}
	op, in, err := r.opInputs(req.GetOpId(), req.GetInputs())
	if err != nil {
		return nil, err
	}
	if len(req.GetLike()) > 0 {
		return r.specializeSymbolic(req, op, in)
	}
	key := r.specializationKey(req.GetInputs(), req.GetSizes(), req.GetCudaDevice())
	if !req.GetSourceOnly() && !req.GetShapesOnly() {
		r.mu.Lock()
		cached := r.specs[req.GetOpId()][key]
		if cached != nil && r.acquire(cached.GetKernelId()) {
			r.mu.Unlock()
			return cached, nil // one more holder of the kernel, as for a fresh build
		}
		r.mu.Unlock()
	}
	cpu := req.GetCudaDevice() == 0
	last, pick := pipeline.Build, r.firstSchedules // the tuning database's schedules, else the first ones
	switch {
	case req.GetShapesOnly():
		last, pick = pipeline.Kernel, nil
	case req.GetSourceOnly() && cpu:
		pick = r.untunedSchedules
	case req.GetSourceOnly():
		pick = nil // the GPU defaults
	case !cpu:
		if pick, err = r.cudaPick(req); err != nil {
			return nil, err
		}
	}
	u, explained, err := r.plan(op, in, req.GetSizes(), cpu, key, last, pick)
	if err != nil {
		return nil, err
	}
	spec := u.Spec
	resp := &api.SpecializeResponse{Dtype: in.dtype.String(), Fusion: explained}
	for _, t := range spec.Tensors {
		resp.Buffers = append(resp.Buffers, &api.Buffer{Name: t.Name, Role: t.Role.String(), Shape: t.Shape,
			Dtype: spec.ElemType(t).String(), Limit: t.Limit})
	}
	switch {
	case req.GetShapesOnly():
		return resp, nil
	case !cpu:
		return r.specializeCUDA(req, u, resp, key)
	case req.GetSourceOnly():
		resp.CSource, err = kernels.FuncSource(u.Func)
		return resp, err
	}
	builder, err := r.kernelBuilder()
	if err != nil {
		return nil, err
	}
	r.noteBuild()
	k, err := builder.BuildFunc(r.buildContext(), u.Func)
	if err != nil && u.Picked != nil && r.buildContext().Err() == nil {
		r.warnf("the tuned schedules of kernel %s failed to build, using the default ones: %v", op.DisplayName(), err)
		k, err = builder.BuildScheduled(r.buildContext(), spec, nil)
	}
	r.noteBuild()
	resp.Warnings = r.takeWarnings()
	if err != nil {
		return nil, err
	}
	resp.CSource = k.Source()
	resp.CacheHit = k.Outcome() == cache.Hit || k.Outcome() == cache.Bundled
	r.noteKernel(k)
	l := &launchable{nbufs: k.NumBufs(), close: func() { _ = k.Close() }}
	l.fn.Store(k.Addr())
	resp.KernelId = r.registerKernel(k.Key(), l)
	r.tuneInBackground(spec, k, resp.KernelId)
	r.remember(req, key, resp)
	return resp, nil
}

// plan runs one plan of the pipeline (core/pipeline) for a specialization
// request of op for the inputs' dtype and shapes: through last, Kernel
// (specialize; with fusion on save-or-recompute and the fusion passes,
// weighed with this machine's rates, machineRates; for a C kernel, cpu,
// merge-axes, so that the builder and the tuner see the merged axes) or
// Build (on to the loop nests, with the schedules pick gives for the
// fused spec, nil: the target's defaults). What Kernel makes is kept per
// op and request (specialized): a request after the first runs Build from
// it, or nothing. It returns the unit and the explanation of the fusion
// (explainFusion). Should the picked schedules fail to lower, the
// defaults are used, and the failure reported.
func (r *Runtime) plan(op *ir.Op, in typedInputs, sizes map[string]int64, cpu bool, key, last string, pick func(*ir.Spec) []loops.Schedule) (*pipeline.Unit, string, error) {
	cfg := r.config()
	target := pipeline.CPU
	if !cpu {
		target = pipeline.GPU
	}
	if s, ok := r.specialized.get(op, key); ok {
		u := pipeline.FromSpec(s.spec)
		u.Target, u.Pick, u.Dump = target, pick, cfg.Dump
		if last == pipeline.Kernel {
			return u, s.explained, nil
		}
		return u, s.explained, r.runBuild(u)
	}
	r.mu.Lock()
	keepNone := r.keepNone[op]
	r.mu.Unlock()
	u := &pipeline.Unit{Op: op, DType: in.dtype, Shapes: in.shapes, Ints: in.ints, Sizes: sizes, Dump: cfg.Dump,
		Fusion: cfg.Fusion, KeepSaved: !keepNone, MergeAxes: cpu, Target: target, Pick: pick}
	if cfg.Fusion {
		u.Machine = r.machineRates()
	}
	err := pipeline.Run(u, last)
	if err != nil && (u.Failed == "" || pipeline.Within(u.Failed, pipeline.Kernel)) {
		return nil, "", err
	}
	s := specialized{u.Spec, explainFusion(u, cfg.Fusion)}
	r.specialized.put(op, key, s)
	if err != nil { // in the build passes
		return u, s.explained, r.retryDefaults(u, err)
	}
	return u, s.explained, nil
}

// runBuild runs the Build plan on u, a unit at the Kernel plan's end.
func (r *Runtime) runBuild(u *pipeline.Unit) error {
	if err := pipeline.Run(u, pipeline.Build); err != nil {
		return r.retryDefaults(u, err)
	}
	return nil
}

// retryDefaults is the answer to err, a failure of the build passes on
// u: with picked schedules it reports err and lowers u's spec again with
// the target's defaults, else it is err.
func (r *Runtime) retryDefaults(u *pipeline.Unit, err error) error {
	if u.Picked == nil {
		return err
	}
	r.warnf("the tuned schedules of kernel %s failed to lower, using the default ones: %v", u.Op.DisplayName(), err)
	d := pipeline.FromSpec(u.Spec)
	d.Target, d.Dump = u.Target, u.Dump
	if err := pipeline.Run(d, pipeline.Build); err != nil {
		return err
	}
	u.Schedules, u.Func, u.Picked = d.Schedules, d.Func, nil
	return nil
}

// specialize is the spec of op that plan's Kernel plan makes, and the
// explanation of its fusion.
func (r *Runtime) specialize(op *ir.Op, in typedInputs, sizes map[string]int64, cpu bool, key string) (*ir.Spec, string, error) {
	u, explained, err := r.plan(op, in, sizes, cpu, key, pipeline.Kernel, nil)
	if err != nil {
		return nil, "", err
	}
	return u.Spec, explained, nil
}

// remember keeps a specialization's response for the next request.
func (r *Runtime) remember(req *api.SpecializeRequest, key string, resp *api.SpecializeResponse) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.specs[req.GetOpId()] == nil {
		r.specs[req.GetOpId()] = map[string]*api.SpecializeResponse{}
	}
	r.specs[req.GetOpId()][key] = resp
}

// typedInputs are the types of a call's inputs: the floating-point dtype
// they share, each input's shape, and the element types of the integer
// inputs by name.
type typedInputs struct {
	dtype  ir.DType
	shapes [][]int64
	ints   map[string]ir.DType
}

// opInputs finds a registered op and checks its inputs' types.
func (r *Runtime) opInputs(id uint64, ins []*api.TensorType) (*ir.Op, typedInputs, error) {
	op, err := r.op(id)
	if err != nil {
		return nil, typedInputs{}, err
	}
	in, err := inputTypes(op, ins)
	return op, in, err
}

// inputTypes checks that the floating-point inputs share one supported
// dtype; integer inputs (int32, int64, bool) may stand beside them. An op
// whose inputs are all integers computes in float32.
func inputTypes(op *ir.Op, ins []*api.TensorType) (typedInputs, error) {
	if len(ins) != len(op.Inputs) {
		return typedInputs{}, errors.Errorf("op %s takes %d inputs (%s), got %d",
			op.DisplayName(), len(op.Inputs), strings.Join(op.Inputs, ", "), len(ins))
	}
	t := typedInputs{shapes: make([][]int64, len(ins))}
	first := ""
	index := indexInputs(op)
	for i, in := range ins {
		d, err := ir.ParseDType(in.GetDtype())
		if err != nil {
			return typedInputs{}, errors.Wrapf(err, "input %s", op.Inputs[i])
		}
		if index[op.Inputs[i]] && !d.Integer() {
			return typedInputs{}, errors.Errorf("op %s: %s is read as an index, so it must be an int32 or int64 tensor, got %s",
				op.DisplayName(), op.Inputs[i], d)
		}
		t.shapes[i] = in.GetShape()
		if d.Integer() {
			if t.ints == nil {
				t.ints = map[string]ir.DType{}
			}
			t.ints[op.Inputs[i]] = d
			continue
		}
		if first != "" && d != t.dtype {
			return typedInputs{}, errors.Errorf("floating-point inputs of op %s must share one dtype: %s is %s but %s is %s",
				op.DisplayName(), first, t.dtype, op.Inputs[i], d)
		}
		first, t.dtype = op.Inputs[i], d
	}
	if t.dtype == ir.InvalidDType {
		t.dtype = ir.Float32
	}
	return t, nil
}

// indexInputs lists the tensors op reads as an index (E[I[b], d]'s I).
func indexInputs(op *ir.Op) map[string]bool {
	out := map[string]bool{}
	for _, s := range op.Stmts {
		ir.Walk(s.RHS, func(e ir.Expr) bool {
			if a, ok := e.(*ir.Access); ok && a.Indirect {
				out[a.Tensor] = true
			}
			return true
		})
	}
	return out
}

// specializationKey identifies a specialization of one op under the
// current settings: requestKey, and whether fusion is on (a kernel built
// before fusion was turned on or off is not the one asked for) and CUDA
// kernels deterministic. Specialize and TuneBegin key the kept
// specializations (specialized) and responses with it.
func (r *Runtime) specializationKey(ins []*api.TensorType, sizes map[string]int64, cudaDevice int32) string {
	cfg := r.config()
	key := requestKey(ins, sizes, cudaDevice)
	if cfg.Fusion {
		key += "|fused"
	}
	if cfg.Deterministic && cudaDevice != 0 {
		key += "|deterministic"
	}
	return key
}

// requestKey identifies a specialization of one op: its inputs' types, the
// sizes given and the CUDA device (1 + its ordinal; 0 for the CPU).
func requestKey(ins []*api.TensorType, sizes map[string]int64, cudaDevice int32) string {
	var b strings.Builder
	for _, in := range ins {
		fmt.Fprintf(&b, "|%s%v", in.GetDtype(), in.GetShape())
	}
	names := make([]string, 0, len(sizes))
	for n := range sizes {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(&b, "|%s=%d", n, sizes[n])
	}
	if d := cudaDevice; d != 0 {
		fmt.Fprintf(&b, "|cuda:%d", d-1)
	}
	return b.String()
}
