package torchbridge

import (
	"fmt"
	"sort"
	"strings"

	"github.com/pkg/errors"

	"github.com/neoflow/neoflow/api"
	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/pipeline"
	"github.com/neoflow/neoflow/kernels"
	"github.com/neoflow/neoflow/kernels/cache"
)

// Specialize fixes an op's input shapes and dtype, infers every other shape,
// proves the accesses in bounds and builds (or finds) the kernel. With
// shapes_only it stops after inference, with source_only after generating
// the C source.
func (r *Runtime) Specialize(req *api.SpecializeRequest) (*api.SpecializeResponse, error) {
	op, in, err := r.opInputs(req.GetOpId(), req.GetInputs())
	if err != nil {
		return nil, err
	}
	key := specKey(req)
	if r.config().Fusion {
		key += "|fused" // a kernel built before fusion was turned on or off is not the one asked for
	}
	if r.config().Deterministic && req.GetCudaDevice() != 0 {
		key += "|deterministic"
	}
	if !req.GetSourceOnly() && !req.GetShapesOnly() {
		r.mu.Lock()
		cached := r.specs[req.GetOpId()][key]
		if cached != nil && r.acquire(cached.GetKernelId()) {
			r.mu.Unlock()
			return cached, nil // one more holder of the kernel, as for a fresh build
		}
		r.mu.Unlock()
	}
	spec, explained, err := r.specialize(op, in, req.GetSizes(), req.GetCudaDevice() == 0, key)
	if err != nil {
		return nil, err
	}
	resp := &api.SpecializeResponse{Dtype: in.dtype.String(), Fusion: explained}
	for _, t := range spec.Tensors {
		resp.Buffers = append(resp.Buffers, &api.Buffer{Name: t.Name, Role: t.Role.String(), Shape: t.Shape,
			Dtype: spec.ElemType(t).String(), Limit: t.Limit})
	}
	if req.GetShapesOnly() {
		return resp, nil
	}
	if req.GetCudaDevice() != 0 {
		return r.specializeCUDA(req, spec, resp, key)
	}
	if req.GetSourceOnly() {
		resp.CSource, err = kernels.ScheduledSource(spec, r.untunedSchedules(spec))
		return resp, err
	}
	builder, err := r.kernelBuilder()
	if err != nil {
		return nil, err
	}
	r.noteBuild()
	k, err := builder.BuildContext(r.buildContext(), spec)
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

// specialize runs the pipeline's Kernel plan (core/pipeline) on op for
// the inputs' dtype and shapes: specialize, with fusion on the
// save-or-recompute decision and the fusion passes, weighed with this
// machine's rates (machineRates), and for a C kernel (cpu) merge-axes,
// so that the builder and the tuner see the merged axes. It returns the
// spec the kernel is built from and the explanation (explainFusion). The
// result is kept per op and request (specialized): the shapes request
// that comes before a first build, and the build, share one run.
func (r *Runtime) specialize(op *ir.Op, in typedInputs, sizes map[string]int64, cpu bool, key string) (*ir.Spec, string, error) {
	if s, ok := r.specialized.get(op, key); ok {
		return s.spec, s.explained, nil
	}
	cfg := r.config()
	r.mu.Lock()
	keepNone := r.keepNone[op]
	r.mu.Unlock()
	u := &pipeline.Unit{Op: op, DType: in.dtype, Shapes: in.shapes, Ints: in.ints, Sizes: sizes, Dump: cfg.Dump,
		Fusion: cfg.Fusion, KeepSaved: !keepNone, MergeAxes: cpu}
	if cfg.Fusion {
		u.Machine = r.machineRates()
	}
	if err := pipeline.Run(u, pipeline.Kernel); err != nil {
		return nil, "", err
	}
	s := specialized{u.Spec, explainFusion(u, cfg.Fusion)}
	r.specialized.put(op, key, s)
	return s.spec, s.explained, nil
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

// specKey identifies a specialization request of one op.
func specKey(req *api.SpecializeRequest) string {
	return requestKey(req.GetInputs(), req.GetSizes(), req.GetCudaDevice())
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
