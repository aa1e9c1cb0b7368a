package kernels

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/pkg/errors"

	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/loops"
	"github.com/neoflow/neoflow/core/pipeline"
	"github.com/neoflow/neoflow/kernels/cache"
	"github.com/neoflow/neoflow/kernels/cgen"
	"github.com/neoflow/neoflow/kernels/nvrtc"
)

// CUDAKernel is a compiled CUDA kernel of one spec for one architecture:
// a module image and the launches that compute the spec, in order.
type CUDAKernel struct {
	spec     *ir.Spec
	src      string
	key      string
	outcome  cache.Outcome
	target   nvrtc.Target
	image    []byte
	launches []cgen.Launch
	aligned  bool
	// fn is the loop nests the module was rendered from (a kernel with
	// symbolic extents: its sizes and launch guards, Func.Sizes and
	// Func.Guards).
	fn *loops.Func
}

// Spec is the spec the kernel computes.
func (k *CUDAKernel) Spec() *ir.Spec { return k.spec }

// Source is the CUDA C source of the module.
func (k *CUDAKernel) Source() string { return k.src }

// Key is the kernel's cache key.
func (k *CUDAKernel) Key() string { return k.key }

// Outcome says whether the image came from the cache or was compiled.
func (k *CUDAKernel) Outcome() cache.Outcome { return k.outcome }

// Target is the architecture the image is for, CUBIN or PTX.
func (k *CUDAKernel) Target() nvrtc.Target { return k.target }

// Image is the module image (CUBIN, or NUL-terminated PTX text).
func (k *CUDAKernel) Image() []byte { return k.image }

// Aligned says that every pointer passed must be 16-byte aligned: the
// kernel loads 16-byte vectors (cgen.CUDAModule.Aligned).
func (k *CUDAKernel) Aligned() bool { return k.aligned }

// Func is the loop nests the module was rendered from.
func (k *CUDAKernel) Func() *loops.Func { return k.fn }

// Launches are the module's functions with their grid and block sizes,
// to be launched in order on one stream, each with one device pointer
// per entry of Spec().Tensors, then, for a kernel with symbolic extents,
// its sizes' values (Func().Sizes) as long long parameters.
func (k *CUDAKernel) Launches() []cgen.Launch { return k.launches }

// nvrtcOnce opens NVRTC for a Builder on first use.
type nvrtcOnce struct {
	once sync.Once
	dirs []string
	lib  *nvrtc.Library
	err  error
}

func (n *nvrtcOnce) get() (*nvrtc.Library, error) {
	n.once.Do(func() {
		var p string
		if p, n.err = nvrtc.Find(n.dirs); n.err == nil {
			n.lib, n.err = nvrtc.Open(p)
		}
	})
	return n.lib, n.err
}

// BuildCUDA builds spec for a device of compute capability arch (times
// ten) with one schedule per statement (nil: the GPU defaults), from the
// cache or compiled with NVRTC (found in Options.NVRTCDirs).
func (b *Builder) BuildCUDA(ctx context.Context, spec *ir.Spec, scheds []loops.Schedule, arch int) (*CUDAKernel, error) {
	if _, err := b.nvrtc.get(); err != nil {
		return nil, err // before lowering: without NVRTC nothing builds
	}
	fn, err := lowerFunc(spec, scheds, pipeline.GPU, b.dump)
	if err != nil {
		return nil, err
	}
	return b.BuildCUDAFunc(ctx, fn, arch)
}

// BuildCUDAFunc builds the CUDA kernel of loop nests a caller lowered (the
// pipeline's Build plan, for the GPU target) for a device of compute
// capability arch, from the cache or compiled with NVRTC.
func (b *Builder) BuildCUDAFunc(ctx context.Context, fn *loops.Func, arch int) (*CUDAKernel, error) {
	spec := fn.Spec
	lib, err := b.nvrtc.get()
	if err != nil {
		return nil, err
	}
	target, err := lib.TargetFor(arch)
	if err != nil {
		return nil, err
	}
	ma, mi, err := lib.Version()
	if err != nil {
		return nil, err
	}
	canonical, err := renderCUDA(fn, PlaceholderSymbol)
	if err != nil {
		return nil, err
	}
	compiler := fmt.Sprintf("nvrtc %d.%d %s %s", ma, mi, target, strings.Join(nvrtc.Options, " "))
	key := b.cache.ImageKey(canonical.Source, compiler)
	mod, err := renderCUDA(fn, Symbol(spec.Op.Name, key))
	if err != nil {
		return nil, err
	}
	ext := ".cubin"
	if target.PTX {
		ext = ".ptx"
	}
	img, outcome, err := b.cache.GetImage(ctx, key, ext, mod.Source, spec.Op.DisplayName(), compiler, func() ([]byte, error) {
		img, log, err := lib.Compile(mod.Source, spec.Op.DisplayName()+".cu", target)
		if err == nil && log != "" && b.logf != nil {
			b.logf("neoflow: NVRTC warnings for kernel %s:\n%s", spec.Op.DisplayName(), log)
		}
		return img, err
	})
	if err != nil {
		return nil, errors.Wrapf(err, "building CUDA kernel %s", spec.Op.DisplayName())
	}
	return &CUDAKernel{spec: spec, src: mod.Source, key: key, outcome: outcome, target: target, image: img, launches: mod.Launches, aligned: mod.Aligned, fn: fn}, nil
}

// BuildCUDATuned is BuildCUDA with tuned schedules (nil: none) that,
// when they fail to build, are reported to Options.Logf and replaced by
// the GPU defaults, as Build does with Options.Schedules.
func (b *Builder) BuildCUDATuned(ctx context.Context, spec *ir.Spec, tuned []loops.Schedule, arch int) (*CUDAKernel, error) {
	return tunedOrDefault(b, ctx, spec, tuned, func(scheds []loops.Schedule) (*CUDAKernel, error) {
		return b.BuildCUDA(ctx, spec, scheds, arch)
	})
}

// CUDASource lowers spec with one schedule per statement (nil: the GPU
// defaults, loops.GPUSchedule) and renders it as a CUDA module whose
// functions are named after symbol.
func CUDASource(spec *ir.Spec, scheds []loops.Schedule, symbol string) (*cgen.CUDAModule, error) {
	fn, err := lowerFunc(spec, scheds, pipeline.GPU, nil)
	if err != nil {
		return nil, err
	}
	return renderCUDA(fn, symbol)
}

// CUDAFuncSource renders loop nests lowered for the GPU target as a CUDA
// module whose functions are named after symbol.
func CUDAFuncSource(fn *loops.Func, symbol string) (*cgen.CUDAModule, error) {
	return renderCUDA(fn, symbol)
}

func renderCUDA(fn *loops.Func, symbol string) (*cgen.CUDAModule, error) {
	mod, err := cgen.RenderCUDA(fn, symbol)
	if err != nil {
		return nil, errors.Wrapf(err, "kernel %s", fn.Spec.Op.DisplayName())
	}
	return mod, nil
}
