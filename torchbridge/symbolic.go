package torchbridge

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/pkg/errors"

	"github.com/neoflow/neoflow/api"
	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/loops"
	"github.com/neoflow/neoflow/core/pipeline"
	"github.com/neoflow/neoflow/kernels/cache"
)

// specializeSymbolic answers a request with like set: one kernel for
// every value of the input dimensions where like differs from the inputs
// (pipeline.Symbolic), each distinct pair of values a size variable s0,
// s1, ... in the order the inputs meet them: a C kernel, or with
// cuda_device a CUDA kernel loaded on that device. The op is specialized
// fused as its other kernels are (fusedUnit), or unfused where the fused
// op is refused; its schedules are the defaults, a C kernel's picked per
// size bucket later (buckets.go). Its buffers carry their size variables
// (Buffer.sizes) and their shapes at the inputs' values.
func (r *Runtime) specializeSymbolic(req *api.SpecializeRequest, op *ir.Op, in typedInputs) (*api.SpecializeResponse, error) {
	if req.GetSourceOnly() || req.GetShapesOnly() {
		return nil, errors.New("symbolic extents: a kernel for every size is built, not its source or shapes alone (like with source_only or shapes_only)")
	}
	other, err := inputTypes(op, req.GetLike())
	if err != nil {
		return nil, errors.Wrap(err, "symbolic extents: like")
	}
	sizes, err := sizePairs(op, in, other)
	if err != nil {
		return nil, err
	}
	byPair, err := loops.CheckSizes(sizes)
	if err != nil {
		return nil, err
	}
	sizeOf, err := explicitSizes(req.GetSizes(), req.GetLikeSizes(), byPair)
	if err != nil {
		return nil, err
	}
	var build func(pipeline.SpecAt) (*api.SpecializeResponse, *loops.Func, error)
	if req.GetCudaDevice() != 0 {
		build, err = r.symbolicCUDA(req, sizes)
	} else {
		build, err = r.symbolicC(op, sizes)
	}
	if err != nil {
		return nil, err
	}
	r.noteBuild()
	var resp *api.SpecializeResponse
	var fn *loops.Func
	if fused := r.fusedUnit(op); fused != nil { // fused as the op's other kernels are, where the proof allows
		resp, fn, err = build(specAt(fused, in, other, req.GetSizes(), sizeOf, byPair))
	}
	if resp == nil {
		resp, fn, err = build(specAt(&pipeline.Unit{Op: op}, in, other, req.GetSizes(), sizeOf, byPair))
	}
	r.noteBuild()
	if err != nil {
		return nil, errors.Wrapf(err, "op %s", op.DisplayName())
	}
	resp.Dtype, resp.SizeNames, resp.SizeOf, resp.Warnings = in.dtype.String(), sizeNames(fn.Sizes), sizeOf, r.takeWarnings()
	for _, g := range fn.Guards {
		pg := &api.SizeGuard{Coef: map[string]int64{}, Constant: g.Const}
		for s, c := range g.Coef {
			pg.Coef[strings.TrimPrefix(s, loops.SizePrefix)] = c
		}
		resp.SizeGuards = append(resp.SizeGuards, pg)
	}
	for _, t := range fn.Spec.Tensors {
		resp.Buffers = append(resp.Buffers, &api.Buffer{Name: t.Name, Role: t.Role.String(), Shape: t.Shape,
			Dtype: fn.Spec.ElemType(t).String(), Limit: t.Limit, Sizes: sizeNames(t.Sizes)})
	}
	return resp, nil
}

// symbolicC builds and loads the C kernel of a specialization (SpecAt)
// for every value of sizes, registered for its size buckets
// (keepSymbolic): the response's kernel id, source and cache outcome.
func (r *Runtime) symbolicC(op *ir.Op, sizes []loops.Size) (func(pipeline.SpecAt) (*api.SpecializeResponse, *loops.Func, error), error) {
	builder, err := r.kernelBuilder()
	if err != nil {
		return nil, err
	}
	return func(at pipeline.SpecAt) (*api.SpecializeResponse, *loops.Func, error) {
		k, err := builder.BuildSymbolic(r.buildContext(), at, sizes)
		if err != nil {
			return nil, nil, err
		}
		resp := &api.SpecializeResponse{CSource: k.Source(), CacheHit: k.Outcome() == cache.Hit || k.Outcome() == cache.Bundled}
		r.noteKernel(k)
		l := &launchable{nbufs: k.NumBufs(), close: func() { _ = k.Close() }}
		l.fn.Store(k.Addr())
		resp.KernelId = r.registerKernel(k.Key(), l)
		r.keepSymbolic(resp.KernelId, op.DisplayName(), at, sizes, k, resp)
		return resp, k.Func(), nil
	}, nil
}

// symbolicCUDA builds the CUDA kernel of a specialization for every
// value of sizes and loads it on the request's device (cuda_device =
// ordinal + 1): the response's kernel id, CUDA source, alignment and cache
// outcome. Its launches take the sizes' values after the tensors'
// pointers (launchable.sizes).
func (r *Runtime) symbolicCUDA(req *api.SpecializeRequest, sizes []loops.Size) (func(pipeline.SpecAt) (*api.SpecializeResponse, *loops.Func, error), error) {
	ord := int(req.GetCudaDevice()) - 1
	if err := requireCUDA("a CUDA tensor"); err != nil {
		return nil, err
	}
	gpu, err := r.gpu(ord)
	if err != nil {
		return nil, err
	}
	builder, err := r.kernelBuilder()
	if err != nil {
		return nil, err
	}
	return func(at pipeline.SpecAt) (*api.SpecializeResponse, *loops.Func, error) {
		k, err := builder.BuildSymbolicCUDA(r.buildContext(), at, sizes, gpu.arch)
		if err != nil {
			return nil, nil, err
		}
		resp := &api.SpecializeResponse{CudaSource: k.Source(), Aligned: k.Aligned(), CacheHit: k.Outcome() == cache.Hit}
		if resp.KernelId, err = r.loadCUDA(k, ord); err != nil {
			return nil, nil, err
		}
		return resp, k.Func(), nil
	}, nil
}

// sizePairs are the size variables of a symbolic request: each distinct
// pair of an input dimension's values in a and b, where they differ,
// named s0, s1, ... in input order.
func sizePairs(op *ir.Op, a, b typedInputs) ([]loops.Size, error) {
	if a.dtype != b.dtype {
		return nil, errors.Errorf("symbolic extents: the inputs are %s, like's %s", a.dtype, b.dtype)
	}
	var out []loops.Size
	seen := map[[2]int64]bool{}
	for i, sa := range a.shapes {
		sb := b.shapes[i]
		if len(sa) != len(sb) || a.ints[op.Inputs[i]] != b.ints[op.Inputs[i]] {
			return nil, errors.Errorf("symbolic extents: input %s has another rank or dtype in like", op.Inputs[i])
		}
		for d := range sa {
			pair := [2]int64{sa[d], sb[d]}
			if pair[0] == pair[1] || seen[pair] {
				continue
			}
			seen[pair] = true
			out = append(out, loops.Size{Name: fmt.Sprintf("s%d", len(out)), A: pair[0], B: pair[1]})
		}
	}
	if len(out) == 0 {
		return nil, errors.New("symbolic extents: like has the inputs' shapes")
	}
	return out, nil
}

// explicitSizes maps each explicit extent of a symbolic request whose
// value differs between the two calls (sizes, like) to the size variable
// of that pair of values (byPair, loops.CheckSizes); the two calls must
// name the same extents.
func explicitSizes(sizes, like map[string]int64, byPair map[[2]int64]string) (map[string]string, error) {
	if len(sizes) != len(like) {
		return nil, errors.Errorf("symbolic extents: the call gives %d explicit extents, like %d", len(sizes), len(like))
	}
	var out map[string]string
	for name, a := range sizes {
		b, ok := like[name]
		if !ok {
			return nil, errors.Errorf("symbolic extents: like gives no extent %s", name)
		}
		if a == b {
			continue
		}
		size, ok := byPair[[2]int64{a, b}]
		if !ok {
			return nil, errors.Errorf("symbolic extents: extent %s is %d and %d, no input dimension's values", name, a, b)
		}
		if out == nil {
			out = map[string]string{}
		}
		out[name] = size
	}
	return out, nil
}

// fusedUnit is the unit settings under which op's kernels are fused
// (fusion on, this machine's rates, the temporaries a saving gradient
// reads kept), nil with fusion off.
func (r *Runtime) fusedUnit(op *ir.Op) *pipeline.Unit {
	if !r.config().Fusion {
		return nil
	}
	r.mu.Lock()
	keepNone := r.keepNone[op]
	r.mu.Unlock()
	return &pipeline.Unit{Op: op, Fusion: true, KeepSaved: !keepNone, Machine: r.machineRates()}
}

// specAt specializes the op of base (with its fusion settings) at given
// values of the sizes of a symbolic request, to the Kernel plan: each
// input dimension where in and other differ takes the value of the size
// of that pair of values (byPair), each explicit extent that is a size's
// (sizeOf) too; the others stay as in.
func specAt(base *pipeline.Unit, in, other typedInputs, extents map[string]int64, sizeOf map[string]string, byPair map[[2]int64]string) pipeline.SpecAt {
	return func(values map[string]int64) (*ir.Spec, error) {
		shapes := make([][]int64, len(in.shapes))
		for i, sa := range in.shapes {
			shapes[i] = slices.Clone(sa)
			for d := range sa {
				if name, ok := byPair[[2]int64{sa[d], other.shapes[i][d]}]; ok && sa[d] != other.shapes[i][d] {
					shapes[i][d] = values[name]
				}
			}
		}
		fixed := maps.Clone(extents)
		for name, s := range sizeOf {
			fixed[name] = values[s]
		}
		u := &pipeline.Unit{Op: base.Op, DType: in.dtype, Shapes: shapes, Ints: in.ints, Sizes: fixed,
			Fusion: base.Fusion, KeepSaved: base.KeepSaved, Machine: base.Machine}
		if err := pipeline.Run(u, pipeline.Kernel); err != nil {
			return nil, err
		}
		return u.Spec, nil
	}
}

// sizeNames are size variables as a response names them, without
// loops.SizePrefix ("" stays "").
func sizeNames(sizes []string) []string {
	out := make([]string, len(sizes))
	for i, s := range sizes {
		out[i] = strings.TrimPrefix(s, loops.SizePrefix)
	}
	if sizes == nil {
		return nil
	}
	return out
}
