package torchbridge

import (
	"context"

	"github.com/neoflow/neoflow/autotune"
	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/loops"
	"github.com/neoflow/neoflow/kernels"
	"github.com/neoflow/neoflow/kernels/cc"
	"github.com/neoflow/neoflow/kernels/cudadrv"
)

// Background tuning of CUDA kernels (NEOFLOW_TUNE=background). A CUDA
// kernel loaded for a specialization without a tuned record of its device
// is queued for the worker as a C kernel is (background.go), and searched
// the same way: the GPU tuner (autotune.NewGPUTuner on
// autotune.NewCUDAGPU) builds each candidate with NVRTC and times it on
// device buffers of its own and a private stream, never the caller's
// tensors or PyTorch's streams. The record goes into the tuning database
// under the device's key; when the best schedule differs from the running
// one, the worker loads that kernel on the device and swaps its module
// into the kernel id (launchable.cuda, loaded atomically by every launch).
// The module it replaces stays loaded until the id is unloaded: kernels
// launched from it may still be queued on PyTorch's stream.
//
// Unlike a C kernel's, a CUDA kernel's search has no pick before it (the
// GPU defaults are not picked), does not take a thread from the calls'
// C launches (it times on the GPU, which the training shares with it), and
// does not run in the default mode or for deterministic kernels (whose
// scatters must not use atomic adds). A tuned kernel that loads 16-byte
// vectors where the running one did not is stored but not swapped in: the
// calls pass the pointers the running kernel's SpecializeResponse allowed
// (aligned), and the next specialization of that shape builds it.

// gpuJob is the device of a CUDA kernel tuned in the background.
type gpuJob struct {
	ordinal int
	arch    int  // compute capability × 10
	aligned bool // the running kernel loads 16-byte vectors
}

// tuneCUDAInBackground queues spec's CUDA kernel k, loaded on device ord
// (of compute capability arch) as kernel id, when the mode is background,
// the kernels are not deterministic (tuned schedules may scatter with
// atomic adds) and no tuned record of that device exists.
func (r *Runtime) tuneCUDAInBackground(spec *ir.Spec, k *kernels.CUDAKernel, ord, arch int, id uint64) {
	if cfg := r.config(); cfg.Tune != TuneBackground || cfg.Deterministic {
		return
	}
	key, err := r.tuneKey(spec, ord)
	if err != nil {
		return
	}
	r.enqueue(&bgJob{name: spec.Op.DisplayName(), spec: spec, key: key, cacheKey: cudaLoadKey(k, ord), kernelID: id,
		picked: true, gpu: &gpuJob{ordinal: ord, arch: arch, aligned: k.Aligned()}})
}

// tuneCUDAJob searches a CUDA kernel's schedules, stores its record and
// swaps the best kernel in.
func (r *Runtime) tuneCUDAJob(job *bgJob) error {
	b, err := r.kernelBuilder()
	if err != nil {
		return err
	}
	gpu, err := autotune.NewCUDAGPU(b, job.gpu.ordinal)
	if err != nil {
		return err
	}
	opts := autotune.Options{Trials: backgroundTrials, Version: Version, Seeds: r.warmSeeds(job.spec, job.key, true)}
	t, err := autotune.NewGPUTuner(gpu, job.spec, opts)
	if err != nil {
		gpu.Close()
		return err
	}
	defer t.Close()
	ctx := cc.WithLowPriority(context.Background())
	return r.search(ctx, job, t, func(scheds []loops.Schedule) (bool, error) { return r.swapInCUDA(ctx, b, job, scheds) })
}

// swapInCUDA builds job's CUDA kernel with scheds, loads it on its device
// and makes job's kernel id launch it, if the id still runs the kernel it
// was queued with and the new one needs no alignment that one did not.
func (r *Runtime) swapInCUDA(ctx context.Context, b *kernels.Builder, job *bgJob, scheds []loops.Schedule) (bool, error) {
	k, err := b.BuildCUDATuned(ctx, job.spec, scheds, job.gpu.arch)
	if err != nil {
		return false, err
	}
	if cudaLoadKey(k, job.gpu.ordinal) == job.cacheKey || (k.Aligned() && !job.gpu.aligned) {
		return false, nil
	}
	m, err := cudadrv.Load(job.gpu.ordinal, k.Image(), k.Launches())
	if err != nil {
		return false, err
	}
	unload := func() { _ = m.Unload() }
	if !r.replace(job, func(l *launchable) { l.cuda.Store(m) }, unload) {
		unload() // unloaded meanwhile: the next specialization builds from the record
		return false, nil
	}
	r.noteRecord(job.recordID)
	return true, nil
}
