package autotune

import (
	"context"
	"runtime"

	"github.com/neoflow/neoflow/core/loops"
	"github.com/neoflow/neoflow/kernels/cc"
)

// PrefetchPerCompiler is how many candidates of a generation the CPU
// tuner builds per C compiler run (bench.prebuild) before it measures the
// first of them.
const PrefetchPerCompiler = 3

// prefetch has the CPU tuner's bench build, when the kernel of scheds is
// not built yet, that kernel and the next candidates of the generation
// not measured yet (t.pending, which the genetic algorithm does not
// change until it breeds the next generation): PrefetchPerCompiler per
// compiler, at most the trials left, on buildParallel compilers at once.
// Nothing is measured while they build.
func (t *Tuner) prefetch(ctx context.Context, scheds []loops.Schedule) {
	key := schedKey(scheds)
	if t.bench == nil || t.bench.built[key] != nil {
		return
	}
	parallel := buildParallel(ctx)
	n := min(parallel*PrefetchPerCompiler, t.opts.Trials-t.prog.Trials)
	list, keys := [][]loops.Schedule{scheds}, map[string]bool{key: true}
	for _, g := range t.pending {
		if len(list) >= n {
			break
		}
		s := t.space.Decode(g)
		k := schedKey(s)
		if _, measured := t.seen[k]; measured || keys[k] {
			continue
		}
		keys[k] = true
		list = append(list, s)
	}
	t.bench.prebuild(ctx, list, parallel)
}

// buildParallel is how many C compilers a search runs at once: one per
// CPU in the foreground (nothing else runs while it builds), one at a low
// priority (cc.IsLowPriority), behind a training.
func buildParallel(ctx context.Context) int {
	if cc.IsLowPriority(ctx) {
		return 1
	}
	return runtime.NumCPU()
}
