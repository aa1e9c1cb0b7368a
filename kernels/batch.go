package kernels

import (
	"context"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/pkg/errors"

	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/loops"
	"github.com/neoflow/neoflow/kernels/cc"
	"github.com/neoflow/neoflow/kernels/cgen"
)

// Batch is kernels to build together: Specs, all of one dtype, each with
// its schedules (Scheds[i], nil or missing: the default ones), profiled
// (Builder.BuildProfiled) when Profiled is set.
type Batch struct {
	Specs    []*ir.Spec
	Scheds   [][]loops.Schedule
	Profiled bool
	// PerRun, when above 0, caps the kernels of one compiler run in
	// BuildKernelsParallel: a compiler behind a training, under
	// SCHED_IDLE, is stopped and run again at a higher priority after
	// cc.IdleCompileLimit, so its runs are kept short.
	PerRun int
}

// BuildBatch builds the C kernels of specs, all of one dtype, with their
// default schedules into one shared object: one C compiler run
// (cgen.RenderBatch). Kernel i is spec i's; each is closed on its own, and
// the last Close unloads the library. A batch is cached under the key of
// all its kernels' sources and never comes from a bundle: it is for
// kernels built together and thrown away together (the fusion reward's
// rates, a search's candidates), where the compiler's start would cost
// more than the kernels.
func (b *Builder) BuildBatch(ctx context.Context, specs []*ir.Spec) ([]*Kernel, error) {
	return b.BuildKernels(ctx, Batch{Specs: specs})
}

// BuildKernels is BuildBatch for a Batch.
func (b *Builder) BuildKernels(ctx context.Context, batch Batch) ([]*Kernel, error) {
	specs := batch.Specs
	if len(specs) == 0 {
		return nil, errors.New("kernels: an empty batch")
	}
	// Kernels of the same source (a search's genomes that decode alike)
	// share one function.
	var fns []*loops.Func
	var unique []string
	syms := make([]string, len(specs))
	keys := make([]string, len(specs))
	pkeys := make([]string, len(specs))
	canonical := make([]string, len(specs))
	for i, spec := range specs {
		var scheds []loops.Schedule
		if i < len(batch.Scheds) {
			scheds = batch.Scheds[i]
		}
		fn, src, err := lower(spec, scheds, batch.Profiled, b.dump)
		if err != nil {
			return nil, err
		}
		canonical[i] = src
		keys[i], pkeys[i] = b.cache.Key(src), b.cache.PortableKey(src)
		syms[i] = Symbol(spec.Op.Name, pkeys[i])
		if !slices.Contains(unique, syms[i]) {
			fns, unique = append(fns, fn), append(unique, syms[i])
		}
	}
	src, err := cgen.RenderBatch(fns, unique, batch.Profiled)
	if err != nil {
		return nil, errors.Wrapf(err, "kernel batch of %s", specs[0].Op.DisplayName())
	}
	key := b.cache.Key("batch\n" + strings.Join(canonical, "\n")) // a profiled kernel's source says so
	lib, outcome, err := b.cache.Get(ctx, key, src, specs[0].Op.DisplayName()+" (batch)", unique...)
	if err != nil {
		return nil, errors.Wrapf(err, "building a batch of %d kernels", len(specs))
	}
	path, _ := b.cache.Paths(key)
	ks := make([]*Kernel, 0, len(specs))
	fail := func(err error) ([]*Kernel, error) {
		for _, k := range ks { // kernel 0 holds lib's first reference
			_ = k.Close()
		}
		if len(ks) == 0 {
			_ = lib.Close()
		}
		return nil, err
	}
	for i, spec := range specs {
		l := lib
		if i > 0 { // one reference per kernel
			if l, err = cc.Open(path); err != nil {
				return fail(err)
			}
		}
		nbufs := len(spec.Tensors)
		if batch.Profiled {
			nbufs++
		}
		k, err := l.Kernel(syms[i], nbufs)
		if err != nil {
			if i > 0 {
				_ = l.Close()
			}
			return fail(errors.Wrapf(err, "kernel %s", spec.Op.DisplayName()))
		}
		ks = append(ks, &Kernel{spec: spec, src: src, key: keys[i], portable: pkeys[i], path: path, outcome: outcome, k: k})
	}
	return ks, nil
}

// BuildBatches builds specs in batches, parallel at once (below 1: as
// many as there are CPUs), and returns the kernels in the order of specs.
// There are parallel batches, or more where a Batch's PerRun asks for
// smaller ones; spec i is in batch i mod their number. On an error it
// closes what was built and returns the first error.
func (b *Builder) BuildBatches(ctx context.Context, specs []*ir.Spec, parallel int) ([]*Kernel, error) {
	return b.BuildKernelsParallel(ctx, Batch{Specs: specs}, parallel)
}

// BuildKernelsParallel is BuildBatches for a Batch.
func (b *Builder) BuildKernelsParallel(ctx context.Context, batch Batch, parallel int) ([]*Kernel, error) {
	specs := batch.Specs
	if len(specs) == 0 {
		return nil, errors.New("kernels: an empty batch")
	}
	if parallel < 1 {
		parallel = runtime.NumCPU()
	}
	parallel = min(parallel, len(specs))
	n := parallel
	if batch.PerRun > 0 {
		n = max(n, (len(specs)+batch.PerRun-1)/batch.PerRun)
	}
	groups := make([]Batch, n)
	for i, spec := range specs {
		g := &groups[i%n]
		g.Specs, g.Profiled = append(g.Specs, spec), batch.Profiled
		if i < len(batch.Scheds) {
			g.Scheds = append(g.Scheds, batch.Scheds[i])
		} else {
			g.Scheds = append(g.Scheds, nil)
		}
	}
	built := make([][]*Kernel, n)
	errs := make([]error, n)
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	for g := range groups {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			built[g], errs[g] = b.BuildKernels(ctx, groups[g])
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			for _, ks := range built {
				for _, k := range ks {
					_ = k.Close()
				}
			}
			return nil, err
		}
	}
	ks := make([]*Kernel, len(specs))
	for i := range specs {
		ks[i] = built[i%n][i/n]
	}
	return ks, nil
}
