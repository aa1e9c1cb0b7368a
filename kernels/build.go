package kernels

import (
	"context"
	"strings"

	"github.com/pkg/errors"

	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/loops"
	"github.com/neoflow/neoflow/core/pipeline"
	"github.com/neoflow/neoflow/kernels/bundle"
	"github.com/neoflow/neoflow/kernels/cache"
	"github.com/neoflow/neoflow/kernels/cc"
	"github.com/neoflow/neoflow/kernels/cgen"
)

// PlaceholderSymbol names the kernel function in Source and in the text
// the cache key is computed over.
const PlaceholderSymbol = "nf_kernel"

// Options configure building kernels. Library code reads no environment:
// the caller maps NEOFLOW_CC to Compiler.Path and NEOFLOW_CACHE_DIR to
// CacheDir.
type Options struct {
	// Compiler compiles kernels; the zero value is "cc" with
	// cc.DefaultFlags.
	Compiler cc.Compiler
	// CacheDir holds compiled kernels; empty means cache.DefaultDir()
	// (os.UserCacheDir()/neoflow).
	CacheDir string
	// Version is neoflow's version string, part of every cache key.
	Version string
	// Logf receives reports of corrupt cache entries; nil discards them.
	Logf func(format string, args ...any)
	// NVRTCDirs are searched in order for the NVRTC library that CUDA
	// kernels are compiled with (nvrtc.Find); the Python side lists
	// PyTorch's CUDA libraries and CUDA_HOME.
	NVRTCDirs []string
	// Schedules, when set, is asked for the schedules of a spec that Build
	// is given without any (the tuning database's best); it returns nil
	// for the default schedule.
	Schedules func(spec *ir.Spec) []loops.Schedule
	// Dump, when set, receives the IR after the pipeline's passes of every
	// kernel built (NEOFLOW_DUMP).
	Dump *pipeline.Dumper
	// Bundle, when set, supplies C kernels before the cache: a kernel
	// whose portable key (cache.PortableKey) it holds is loaded from it
	// and never compiled (kernels/bundle).
	Bundle *bundle.Bundle
}

// Builder builds kernels with one cache. It is safe for concurrent use;
// keep one per process to accumulate Stats.
type Builder struct {
	cache     *cache.Cache
	schedules func(spec *ir.Spec) []loops.Schedule
	logf      func(format string, args ...any)
	nvrtc     *nvrtcOnce
	dump      *pipeline.Dumper
	bundle    *bundle.Bundle
}

// NewBuilder opens the cache directory and resolves the compiler.
func NewBuilder(opts Options) (*Builder, error) {
	dir := opts.CacheDir
	if dir == "" {
		d, err := cache.DefaultDir()
		if err != nil {
			return nil, err
		}
		dir = d
	}
	c, err := cache.New(cache.Config{Dir: dir, Compiler: opts.Compiler, Version: opts.Version, Logf: opts.Logf})
	if err != nil {
		return nil, err
	}
	return &Builder{cache: c, schedules: opts.Schedules, logf: opts.Logf, nvrtc: &nvrtcOnce{dirs: opts.NVRTCDirs}, dump: opts.Dump, bundle: opts.Bundle}, nil
}

// Stats are the cache outcomes of this Builder's builds.
func (b *Builder) Stats() cache.Stats { return b.cache.Stats() }

// Build returns the kernel of spec, from the cache or freshly compiled.
func Build(spec *ir.Spec, opts Options) (*Kernel, error) {
	b, err := NewBuilder(opts)
	if err != nil {
		return nil, err
	}
	return b.Build(spec)
}

// Build returns the kernel of spec, from the cache or freshly compiled.
func (b *Builder) Build(spec *ir.Spec) (*Kernel, error) {
	return b.BuildContext(context.Background(), spec)
}

// BuildContext is Build with a context that can cancel compilation. The
// schedules come from Options.Schedules, or are the default ones; when
// the given ones fail to build, the failure goes to Options.Logf and the
// default schedules are used.
func (b *Builder) BuildContext(ctx context.Context, spec *ir.Spec) (*Kernel, error) {
	var tuned []loops.Schedule
	if b.schedules != nil && spec != nil && spec.Op != nil {
		tuned = b.schedules(spec)
	}
	return tunedOrDefault(b, ctx, spec, tuned, func(scheds []loops.Schedule) (*Kernel, error) {
		return b.BuildScheduled(ctx, spec, scheds)
	})
}

// tunedOrDefault builds with the tuned schedules (nil: none) and, when
// they fail to build, reports that to Options.Logf and builds with the
// default schedules.
func tunedOrDefault[K any](b *Builder, ctx context.Context, spec *ir.Spec, tuned []loops.Schedule, build func([]loops.Schedule) (K, error)) (K, error) {
	if tuned != nil {
		k, err := build(tuned)
		if err == nil || ctx.Err() != nil {
			return k, err
		}
		if b.logf != nil {
			b.logf("tuned schedules of kernel %s failed, using the default ones: %v", spec.Op.DisplayName(), err)
		}
	}
	return build(nil)
}

// BuildScheduled builds spec with one schedule per statement; nil means
// the default schedules.
func (b *Builder) BuildScheduled(ctx context.Context, spec *ir.Spec, scheds []loops.Schedule) (*Kernel, error) {
	return b.build(ctx, spec, scheds, false)
}

// BuildProfiled is BuildScheduled with per-statement timing (see
// cgen.RenderProfiled): the kernel takes len(spec.Tensors)+1 buffers, the
// last a float64 array of len(spec.Stmts) to which each launch adds the
// seconds each statement took. It is cached apart from the plain kernel.
func (b *Builder) BuildProfiled(ctx context.Context, spec *ir.Spec, scheds []loops.Schedule) (*Kernel, error) {
	return b.build(ctx, spec, scheds, true)
}

func (b *Builder) build(ctx context.Context, spec *ir.Spec, scheds []loops.Schedule, profile bool) (*Kernel, error) {
	fn, canonical, err := lower(spec, scheds, profile, b.dump)
	if err != nil {
		return nil, err
	}
	return b.buildFunc(ctx, fn, canonical, profile)
}

// BuildFunc builds the kernel of loop nests a caller lowered (the
// pipeline's Build plan, for the CPU target), from the cache or freshly
// compiled.
func (b *Builder) BuildFunc(ctx context.Context, fn *loops.Func) (*Kernel, error) {
	canonical, err := FuncSource(fn)
	if err != nil {
		return nil, err
	}
	return b.buildFunc(ctx, fn, canonical, false)
}

// FuncSource is the C source of loop nests, the function named
// PlaceholderSymbol: the text the cache key is computed over.
func FuncSource(fn *loops.Func) (string, error) {
	src, err := render(fn, PlaceholderSymbol, false)
	if err != nil {
		return "", errors.Wrapf(err, "kernel %s", fn.Spec.Op.DisplayName())
	}
	return src, nil
}

// buildFunc renders fn under its cache key's symbol and loads it, from
// the bundle, the cache, or compiled; canonical is its source under
// PlaceholderSymbol.
func (b *Builder) buildFunc(ctx context.Context, fn *loops.Func, canonical string, profile bool) (*Kernel, error) {
	spec := fn.Spec
	// The symbol is named for the portable key, the same in a process
	// whose compiler differs (or is missing) and loads a bundle.
	key, pkey := b.cache.Key(canonical), b.cache.PortableKey(canonical)
	sym := Symbol(spec.Op.Name, pkey)
	src, err := render(fn, sym, profile)
	if err != nil {
		return nil, errors.Wrapf(err, "kernel %s", spec.Op.DisplayName())
	}
	lib, path, outcome, err := b.load(ctx, key, pkey, src, spec, profile)
	if err != nil {
		return nil, err
	}
	nbufs := len(spec.Tensors)
	if len(fn.Sizes) > 0 {
		nbufs++
	}
	if profile {
		nbufs++
	}
	k, err := lib.Kernel(sym, nbufs)
	if err != nil {
		return nil, errors.Wrapf(err, "kernel %s", spec.Op.DisplayName())
	}
	return &Kernel{spec: spec, src: src, key: key, portable: pkey, path: path, outcome: outcome, k: k, sizes: fn.Sizes, guards: fn.Guards, fn: fn}, nil
}

// load loads the library of a C kernel: from the bundle when it has the
// portable key pkey, else from the cache under key, compiling src on a
// miss. path is the library's file.
func (b *Builder) load(ctx context.Context, key, pkey, src string, spec *ir.Spec, profile bool) (*cc.Library, string, cache.Outcome, error) {
	if b.bundle != nil && !profile {
		lib, path, ok, err := b.bundle.Library(pkey)
		if err != nil || ok {
			return lib, path, cache.Bundled, err
		}
	}
	lib, outcome, err := b.cache.Get(ctx, key, src, spec.Op.DisplayName(), Symbol(spec.Op.Name, pkey))
	if err != nil {
		return nil, "", 0, errors.Wrapf(err, "building kernel %s", spec.Op.DisplayName())
	}
	so, _ := b.cache.Paths(key)
	return lib, so, outcome, nil
}

// Source is the C source of spec's kernel, with the function named
// PlaceholderSymbol, without compiling anything.
func Source(spec *ir.Spec) (string, error) {
	_, src, err := lower(spec, nil, false, nil)
	return src, err
}

// ScheduledSource is Source with one schedule per statement (nil: the
// default ones).
func ScheduledSource(spec *ir.Spec, scheds []loops.Schedule) (string, error) {
	_, src, err := lower(spec, scheds, false, nil)
	return src, err
}

// lower lowers spec with scheds and renders the canonical source, the
// function named PlaceholderSymbol, profiled or not: the text the cache
// key is computed over.
func lower(spec *ir.Spec, scheds []loops.Schedule, profile bool, dump *pipeline.Dumper) (*loops.Func, string, error) {
	target := pipeline.CPU
	if profile { // each statement's nest timed on its own: none fused (fuse-nests)
		target = pipeline.CPUProfiled
	}
	fn, err := lowerFunc(spec, scheds, target, dump)
	if err != nil {
		return nil, "", err
	}
	src, err := render(fn, PlaceholderSymbol, profile)
	if err != nil {
		return nil, "", errors.Wrapf(err, "kernel %s", spec.Op.DisplayName())
	}
	return fn, src, nil
}

// lowerFunc runs the pipeline's build passes on spec (core/pipeline) for
// target, with one schedule per statement, or the target's defaults when
// scheds is nil; dump, when set, receives the IR between the passes.
func lowerFunc(spec *ir.Spec, scheds []loops.Schedule, target pipeline.Target, dump *pipeline.Dumper) (*loops.Func, error) {
	if spec == nil || spec.Op == nil {
		return nil, errors.New("kernels: nil spec")
	}
	if scheds != nil && len(scheds) != len(spec.Stmts) {
		return nil, errors.Errorf("kernel %s: %d schedules for %d statements", spec.Op.DisplayName(), len(scheds), len(spec.Stmts))
	}
	u := pipeline.FromSpec(spec)
	u.Target, u.Sched, u.Dump = target, pipeline.Given(scheds), dump
	if err := pipeline.Run(u, pipeline.Build); err != nil {
		return nil, errors.Wrapf(err, "kernel %s", spec.Op.DisplayName())
	}
	return u.Func, nil
}

func render(fn *loops.Func, symbol string, profile bool) (string, error) {
	if profile {
		return cgen.RenderProfiled(fn, symbol)
	}
	return cgen.Render(fn, symbol)
}

// Symbol is the kernel function name for an op name and cache key:
// nf_<name>_<key[:16]>, the name reduced to at most 32 of [A-Za-z0-9_].
func Symbol(name, key string) string {
	var b strings.Builder
	for _, r := range name {
		if b.Len() >= 32 {
			break
		}
		if r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	if b.Len() == 0 {
		b.WriteString("op")
	}
	return "nf_" + b.String() + "_" + key[:16]
}
