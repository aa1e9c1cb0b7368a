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
	op, dtype, shapes, err := r.opInputs(req.GetOpId(), req.GetInputs())
	if err != nil {
		return nil, err
	}
	key := specKey(req)
	if r.config().Fusion {
		key += "|fused" // a kernel built before fusion was turned on or off is not the one asked for
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
	spec, explained, err := r.specialize(op, dtype, shapes, req.GetSizes())
	if err != nil {
		return nil, err
	}
	resp := &api.SpecializeResponse{Dtype: dtype.String(), Fusion: explained}
	for _, t := range spec.Tensors {
		resp.Buffers = append(resp.Buffers, &api.Buffer{Name: t.Name, Role: t.Role.String(), Shape: t.Shape})
	}
	if req.GetShapesOnly() {
		return resp, nil
	}
	if req.GetCudaDevice() != 0 {
		return r.specializeCUDA(req, spec, resp, key)
	}
	if req.GetSourceOnly() {
		resp.CSource, err = kernels.Source(spec)
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

// specialize runs the pipeline's specialize pass (core/pipeline) on op
// for the inputs' dtype and shapes, then, with fusion on, the fusion
// passes (fuseSpec), weighed with this machine's rates (machineRates),
// passes (fuse), whose explanation it also returns.
func (r *Runtime) specialize(op *ir.Op, dtype ir.DType, shapes [][]int64, sizes map[string]int64) (*ir.Spec, string, error) {
	cfg := r.config()
	u := &pipeline.Unit{Op: op, DType: dtype, Shapes: shapes, Sizes: sizes, Dump: cfg.Dump}
	if err := pipeline.Run(u, "specialize"); err != nil {
		return nil, "", err
	}
	r.mu.Lock()
	saving := r.saving[op]
	r.mu.Unlock()
	return fuseSpec(u.Spec, cfg, saving, r.machineRates)
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

// opInputs finds a registered op and checks its inputs' types.
func (r *Runtime) opInputs(id uint64, ins []*api.TensorType) (*ir.Op, ir.DType, [][]int64, error) {
	op, err := r.op(id)
	if err != nil {
		return nil, 0, nil, err
	}
	dtype, shapes, err := inputTypes(op, ins)
	return op, dtype, shapes, err
}

// inputTypes checks that all inputs share one supported dtype.
func inputTypes(op *ir.Op, ins []*api.TensorType) (ir.DType, [][]int64, error) {
	if len(ins) != len(op.Inputs) {
		return 0, nil, errors.Errorf("op %s takes %d inputs (%s), got %d",
			opName(op), len(op.Inputs), strings.Join(op.Inputs, ", "), len(ins))
	}
	var dtype ir.DType
	shapes := make([][]int64, len(ins))
	for i, in := range ins {
		d, err := ir.ParseDType(in.GetDtype())
		if err != nil {
			return 0, nil, errors.Wrapf(err, "input %s", op.Inputs[i])
		}
		if i > 0 && d != dtype {
			return 0, nil, errors.Errorf("inputs of op %s must share one dtype: %s is %s but %s is %s",
				opName(op), op.Inputs[0], dtype, op.Inputs[i], d)
		}
		dtype = d
		shapes[i] = in.GetShape()
	}
	return dtype, shapes, nil
}

func opName(op *ir.Op) string {
	if op.Name == "" {
		return "<anonymous>"
	}
	return op.Name
}

// specKey identifies a specialization request of one op.
func specKey(req *api.SpecializeRequest) string {
	var b strings.Builder
	for _, in := range req.GetInputs() {
		fmt.Fprintf(&b, "|%s%v", in.GetDtype(), in.GetShape())
	}
	names := make([]string, 0, len(req.GetSizes()))
	for n := range req.GetSizes() {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(&b, "|%s=%d", n, req.GetSizes()[n])
	}
	if d := req.GetCudaDevice(); d != 0 {
		fmt.Fprintf(&b, "|cuda:%d", d-1)
	}
	return b.String()
}
