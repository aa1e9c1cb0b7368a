package torchbridge

import (
	"fmt"
	"unsafe"

	"github.com/pkg/errors"

	"github.com/neoflow/neoflow/api"
	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/loops"
	"github.com/neoflow/neoflow/core/pipeline"
	"github.com/neoflow/neoflow/kernels"
	"github.com/neoflow/neoflow/kernels/cache"
	"github.com/neoflow/neoflow/kernels/cudadrv"
)

// cudaPick is the Pick of a CUDA kernel's build (cuda_device = ordinal +
// 1): the tuning database's schedules for the fused spec (none with
// NEOFLOW_TUNE=off: the GPU defaults), made non-atomic with
// NEOFLOW_DETERMINISTIC=1. It checks first that this library and machine
// have CUDA and the device.
func (r *Runtime) cudaPick(req *api.SpecializeRequest) (func(*ir.Spec) []loops.Schedule, error) {
	ord := int(req.GetCudaDevice()) - 1
	if ord < 0 {
		return nil, errors.Errorf("cuda_device %d: want a device ordinal + 1", req.GetCudaDevice())
	}
	if err := requireCUDA("a CUDA tensor"); err != nil {
		return nil, err
	}
	if _, err := r.gpu(ord); err != nil {
		return nil, err
	}
	cfg := r.config()
	return func(spec *ir.Spec) []loops.Schedule {
		var scheds []loops.Schedule // the GPU defaults, or the tuning database's
		if cfg.Tune != TuneOff {
			if key, err := r.tuneKey(spec, ord); err == nil {
				scheds = r.recordSchedules(spec, key, true)
			}
		}
		if cfg.Deterministic {
			scheds = deterministic(spec, scheds)
		}
		return scheds
	}, nil
}

// specializeCUDA builds the CUDA kernel of u (lowered for the GPU: the
// pipeline's Build plan) for the device the request names (cuda_device =
// ordinal + 1) and loads it there. With source_only it renders the CUDA
// source and compiles nothing.
func (r *Runtime) specializeCUDA(req *api.SpecializeRequest, u *pipeline.Unit, resp *api.SpecializeResponse, key string) (*api.SpecializeResponse, error) {
	spec := u.Spec
	ord := int(req.GetCudaDevice()) - 1
	if ord < 0 {
		return nil, errors.Errorf("cuda_device %d: want a device ordinal + 1", req.GetCudaDevice())
	}
	if req.GetSourceOnly() {
		mod, err := kernels.CUDAFuncSource(u.Func, kernels.PlaceholderSymbol)
		if err != nil {
			return nil, err
		}
		resp.CudaSource = mod.Source
		return resp, nil
	}
	gpu, err := r.gpu(ord)
	if err != nil {
		return nil, err
	}
	builder, err := r.kernelBuilder()
	if err != nil {
		return nil, err
	}
	k, err := builder.BuildCUDAFunc(r.buildContext(), u.Func, gpu.arch)
	if err != nil && u.Picked != nil && r.buildContext().Err() == nil {
		r.warnf("the tuned schedules of CUDA kernel %s failed to build, using the default ones: %v", spec.Op.DisplayName(), err)
		var scheds []loops.Schedule
		if r.config().Deterministic {
			scheds = deterministic(spec, nil)
		}
		k, err = builder.BuildCUDA(r.buildContext(), spec, scheds, gpu.arch)
	}
	resp.Warnings = r.takeWarnings()
	if err != nil {
		return nil, err
	}
	resp.CudaSource = k.Source()
	resp.Aligned = k.Aligned()
	resp.CacheHit = k.Outcome() == cache.Hit
	if resp.KernelId, err = r.loadCUDA(k, ord); err != nil {
		return nil, err
	}
	r.tuneCUDAInBackground(spec, k, ord, gpu.arch, resp.KernelId)
	r.remember(req, key, resp)
	return resp, nil
}

// loadCUDA loads CUDA kernel k on device ord, or holds the one loaded
// there already once more, and returns its kernel id. Its launches take
// one device pointer per tensor, then, for a kernel with symbolic
// extents, its sizes' values (launchable.sizes).
func (r *Runtime) loadCUDA(k *kernels.CUDAKernel, ord int) (uint64, error) {
	loadKey := cudaLoadKey(k, ord)
	if id := r.acquireKey(loadKey); id != 0 {
		return id, nil
	}
	m, err := cudadrv.Load(ord, k.Image(), k.Launches())
	if err != nil {
		return 0, errors.Wrapf(err, "kernel %s", k.Spec().Op.DisplayName())
	}
	n := len(k.Func().Sizes)
	l := &launchable{nbufs: len(k.Spec().Tensors) + n, sizes: n, device: ord, aligned: k.Aligned(), close: func() { _ = m.Unload() }}
	l.cuda.Store(m)
	return r.registerKernel(loadKey, l), nil
}

// cudaLoadKey is the key CUDA kernel k is loaded under on device ord.
func cudaLoadKey(k *kernels.CUDAKernel, ord int) string {
	return fmt.Sprintf("%s@cuda:%d", k.Key(), ord)
}

// requireCUDA is the error for what (a CUDA tensor, tuning a CUDA kernel)
// in the CPU-only build of the library, nil in the CUDA build.
func requireCUDA(what string) error {
	if cudadrv.Available() {
		return nil
	}
	return errors.New(what + ", but this neoflow library was built without CUDA support: reinstall neoflow where CUDA headers are found (see the README's CUDA section)")
}

// LaunchCUDA runs CUDA kernel id on nbufs device pointers (bufs points to
// an array of them, in the order of the SpecializeResponse's buffers,
// followed for a kernel with symbolic extents by its sizes' values) on
// stream, a CUstream handle: PyTorch's current stream on the kernel's
// device. It neither synchronizes nor allocates device memory.
func (r *Runtime) LaunchCUDA(id uint64, bufs unsafe.Pointer, nbufs int, stream uintptr) error {
	l, err := r.launchable(id, nbufs)
	if err != nil {
		return err
	}
	m := l.cuda.Load()
	if m == nil {
		return errors.Errorf("kernel %d is a CPU kernel: launch it with nf_launch", id)
	}
	ptrs := unsafe.Slice((*uintptr)(bufs), nbufs)
	if l.aligned {
		for i, p := range ptrs[:nbufs-l.sizes] { // a sized kernel's sizes follow its pointers
			if p%16 != 0 {
				return errors.Errorf("kernel %d loads 16-byte vectors, but buffer %d (%#x) is not 16-byte aligned", id, i, p)
			}
		}
	}
	return m.Launch(stream, ptrs)
}

// deterministic is scheds (the GPU defaults when nil) with every scatter
// made non-atomic: its points run in statement order, in parallel only
// over blocks of its free axes (core/loops), so that its sums do not
// depend on the order in which atomic adds land.
func deterministic(spec *ir.Spec, scheds []loops.Schedule) []loops.Schedule {
	out := make([]loops.Schedule, len(spec.Stmts))
	for i := range out {
		if scheds != nil {
			out[i] = scheds[i]
		} else {
			out[i] = loops.GPUSchedule(spec, i)
		}
		out[i].Atomic = false
	}
	return out
}
