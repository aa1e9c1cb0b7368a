package torchbridge

import (
	"fmt"
	"unsafe"

	"github.com/pkg/errors"

	"github.com/neoflow/neoflow/api"
	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/loops"
	"github.com/neoflow/neoflow/kernels"
	"github.com/neoflow/neoflow/kernels/cache"
	"github.com/neoflow/neoflow/kernels/cudadrv"
)

// specializeCUDA builds the CUDA kernel of spec for the device the
// request names (cuda_device = ordinal + 1) and loads it there. With
// source_only it renders the CUDA source and compiles nothing.
func (r *Runtime) specializeCUDA(req *api.SpecializeRequest, spec *ir.Spec, resp *api.SpecializeResponse, key string) (*api.SpecializeResponse, error) {
	ord := int(req.GetCudaDevice()) - 1
	if ord < 0 {
		return nil, errors.Errorf("cuda_device %d: want a device ordinal + 1", req.GetCudaDevice())
	}
	if req.GetSourceOnly() {
		mod, err := kernels.CUDASource(spec, nil, kernels.PlaceholderSymbol)
		if err != nil {
			return nil, err
		}
		resp.CudaSource = mod.Source
		return resp, nil
	}
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
	var scheds []loops.Schedule // the GPU defaults, or the tuning database's
	if r.config().Tune != TuneOff {
		key, err := r.tuneKey(spec, ord)
		if err != nil {
			return nil, err
		}
		scheds = r.recordSchedules(spec, key, true)
	}
	if r.config().Deterministic {
		scheds = deterministic(spec, scheds)
	}
	k, err := builder.BuildCUDATuned(r.buildContext(), spec, scheds, gpu.arch)
	resp.Warnings = r.takeWarnings()
	if err != nil {
		return nil, err
	}
	resp.CudaSource = k.Source()
	resp.Aligned = k.Aligned()
	resp.CacheHit = k.Outcome() == cache.Hit
	loadKey := cudaLoadKey(k, ord)
	if resp.KernelId = r.acquireKey(loadKey); resp.KernelId == 0 {
		m, err := cudadrv.Load(ord, k.Image(), k.Launches())
		if err != nil {
			return nil, errors.Wrapf(err, "kernel %s", spec.Op.DisplayName())
		}
		l := &launchable{nbufs: len(spec.Tensors), device: ord, aligned: k.Aligned(), close: func() { _ = m.Unload() }}
		l.cuda.Store(m)
		resp.KernelId = r.registerKernel(loadKey, l)
	}
	r.tuneCUDAInBackground(spec, k, ord, gpu.arch, resp.KernelId)
	r.remember(req, key, resp)
	return resp, nil
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
// an array of them, in the order of the SpecializeResponse's buffers) on
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
		for i, p := range ptrs {
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
