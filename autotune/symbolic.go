package autotune

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"math"
	"math/bits"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/pkg/errors"

	"github.com/neoflow/neoflow/api"
	"github.com/neoflow/neoflow/core/bounds"
	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/loops"
	"github.com/neoflow/neoflow/core/pipeline"
	"github.com/neoflow/neoflow/internal/hostbuf"
	"github.com/neoflow/neoflow/kernels"
)

// Schedules of kernels with symbolic extents, by size bucket. A kernel
// with symbolic extents serves every value of its sizes, but the schedule
// that runs fastest at a length of 8 is not always the one at 512. Its
// schedules are therefore picked per bucket: each size rounded up to a
// power of two (Bucket). For a bucket, PickSymbolic builds the kernel
// under a few candidates (SymbolicCandidates: variants of its default
// schedules, and the register tiles a kernel built per shape is picked
// among, split over the size with a remainder), times them in turns at
// the bucket's sizes and at sizes inside it, and keeps the fastest where
// it beats the defaults by a margin; the record goes to the tuning
// database under BucketKey, so that every later size of the bucket, in
// this process or another, runs that kernel without measuring again.
// These are picks among a few candidates, not a genetic search.

// Bucket is the size bucket of a size's value: the least power of two at
// least v (v itself for 1 and 2), capped at bounds.MaxSize.
func Bucket(v int64) int64 {
	if v <= 1 {
		return 1
	}
	b := int64(1) << bits.Len64(uint64(v-1))
	return min(b, bounds.MaxSize)
}

// BucketKey is the tuning-database key of a kernel with symbolic extents
// for one size bucket: Key of spec, the op specialized at the bucket's
// sizes, with the kernel's hash also covering which tensor dimensions
// are sizes (sized: per tensor of spec, per dimension, its size variable
// or "").
func BucketKey(spec *ir.Spec, sized [][]string, version string) *api.TuneKey {
	k := Key(spec, version)
	var b strings.Builder
	b.WriteString(k.Kernel + " symbolic")
	for _, dims := range sized {
		b.WriteString(" [" + strings.Join(dims, ",") + "]")
	}
	sum := sha256.Sum256([]byte(b.String()))
	k.Kernel = hex.EncodeToString(sum[:16])
	return k
}

// SymbolicPick is the outcome of PickSymbolic.
type SymbolicPick struct {
	// Schedules is the fastest candidate's, one per statement.
	Schedules []loops.Schedule
	// Kernel is that candidate's kernel; its caller closes it.
	Kernel *kernels.Kernel
	// Default and Best are the measured seconds of the default schedules
	// and of the fastest.
	Default, Best float64
	// Candidates is the kernels measured (the default's included).
	Candidates int
}

// symbolicMargin is how much faster than the defaults another candidate
// must run to be kept instead: these kernels run for microseconds at small
// buckets, where launches differ by more than the schedules do.
const symbolicMargin = 0.1

// symbolicRounds is how many times PickSymbolic times each candidate, in
// turns; the median counts.
const symbolicRounds = 5

// symbolicBatch is the least time of one timing of a candidate
// (symbolicRounds): its launches are repeated until the defaults' would
// take that long.
const symbolicBatch = 200e-6

// PickSymbolic picks plan's schedules for a size bucket: values are the
// bucket's sizes (in the plan's size order, powers of two), at which spec
// is the op specialized. Each candidate (SymbolicCandidates) that lowers
// is built, then all are timed in turns on spec's buffers with threads
// threads, each timing launching at the bucket's sizes and at three
// quarters of them plus one (where the tiles leave a remainder, as most
// sizes of a bucket do); a candidate whose first timing takes more than
// slowFactor times the fastest is dropped. The candidate with the least
// median is kept where it runs at least symbolicMargin faster than the
// defaults, else the defaults are.
func PickSymbolic(ctx context.Context, b *kernels.Builder, plan *pipeline.SymbolicPlan, spec *ir.Spec, values []int64, threads int) (*SymbolicPick, error) {
	var scheds [][]loops.Schedule
	var ks []*kernels.Kernel
	defer func() {
		for _, k := range ks {
			if k != nil {
				_ = k.Close()
			}
		}
	}()
	for i, c := range SymbolicCandidates(plan, spec) {
		fn, err := plan.Lower(c)
		if err != nil {
			if i == 0 {
				return nil, err
			}
			continue // a variant the lowering refuses at some size
		}
		k, err := b.BuildFunc(ctx, fn)
		if err != nil {
			return nil, errors.Wrap(err, "picking a kernel's schedules for a size bucket")
		}
		scheds, ks = append(scheds, c), append(ks, k)
	}
	bufs := hostbuf.New(spec, hostbuf.RandomInputs(spec, false, 1))
	defer bufs.Free()
	times, err := timeInTurns(ks, bufs, [][]int64{values, threeQuarters(values)}, threads)
	if err != nil {
		return nil, err
	}
	p := &SymbolicPick{Default: times[0], Best: times[0], Candidates: len(ks)}
	best := 0
	for i, t := range times {
		if t < times[0]*(1-symbolicMargin) && t < p.Best {
			best, p.Best = i, t
		}
	}
	p.Schedules, p.Kernel, ks[best] = scheds[best], ks[best], nil // kept: not closed
	return p, nil
}

// threeQuarters is each size at three quarters plus one (a size below 4
// stays): a size of the bucket whose tiles leave a remainder.
func threeQuarters(values []int64) []int64 {
	out := slices.Clone(values)
	for i, v := range out {
		if v >= 4 {
			out[i] = v*3/4 + 1
		}
	}
	return out
}

// timeInTurns times each kernel (ks[0] the defaults') symbolicRounds
// times in turns, each timing a batch of launches at every set of sizes
// in at, and returns each one's median seconds per batch of one launch
// per set; +Inf for one dropped as slow.
func timeInTurns(ks []*kernels.Kernel, bufs *hostbuf.Buffers, at [][]int64, threads int) ([]float64, error) {
	run := func(k *kernels.Kernel, reps int) (float64, error) {
		start := time.Now()
		for range reps {
			for _, v := range at {
				if err := k.LaunchSized(bufs.Ptr, v, threads); err != nil {
					return 0, errors.Wrap(err, "picking a kernel's schedules for a size bucket")
				}
			}
		}
		return time.Since(start).Seconds(), nil
	}
	first, err := run(ks[0], 1) // warm, and how many launches a batch takes
	if err != nil {
		return nil, err
	}
	reps := int(min(max(symbolicBatch/max(first, 1e-9), 1), 1000))
	samples := make([][]float64, len(ks))
	fastest := math.Inf(1)
	for r := range symbolicRounds {
		for i, k := range ks {
			if r > 0 && samples[i] == nil {
				continue // dropped as slow
			}
			t, err := run(k, reps)
			if err != nil {
				return nil, err
			}
			if r == 0 && t > slowFactor*fastest {
				continue
			}
			fastest = min(fastest, t)
			samples[i] = append(samples[i], t)
		}
	}
	out := make([]float64, len(ks))
	for i, s := range samples {
		out[i] = math.Inf(1)
		if s != nil {
			slices.Sort(s)
			out[i] = s[len(s)/2] / float64(reps)
		}
	}
	return out, nil
}

// SymbolicCandidates is what a size bucket's kernel is picked among: the
// plan's variants of its default schedules (SymbolicPlan.Candidates, the
// defaults first), then the register tiles and other seeds a kernel built
// per shape is picked among (pickCandidates), tiled for spec (the op at a
// bucket's sizes, powers of two, which many tile factors divide) and made
// to serve every size (sizedTiling), the statements without a tiling
// keeping their defaults.
func SymbolicCandidates(plan *pipeline.SymbolicPlan, spec *ir.Spec) [][]loops.Schedule {
	out := plan.Candidates()
	if len(spec.Stmts) != len(plan.Spec().Stmts) {
		return out // fused otherwise at those sizes
	}
	sp := NewSpace(spec)
	for _, g := range pickCandidates(sp)[1:] {
		c, changed := slices.Clone(out[0]), false
		for i, s := range sp.Decode(g) {
			if t := sizedTiling(s.Tiling, plan.Sym(i)); t != nil {
				c[i], changed = loops.Schedule{Tiling: t}, true
			}
		}
		if changed && !slices.ContainsFunc(out, func(o []loops.Schedule) bool { return reflect.DeepEqual(o, c) }) {
			out = append(out, c)
		}
	}
	return out
}

// sizedTiling is tiling t, chosen for one set of extents, for a kernel
// with symbolic extents (sym: the statement's variables that run to a
// size): each split of such an axis runs over its size (Split.Size), and
// its outer loop leaves the parallel loops (it may not run in parallel).
// Nil when t is nil, or splits such an axis over more than one level.
func sizedTiling(t *loops.Tiling, sym map[string]string) *loops.Tiling {
	if t == nil {
		return nil
	}
	c := *t
	c.Splits, c.Loops = slices.Clone(t.Splits), slices.Clone(t.Loops)
	for k, sp := range c.Splits {
		size := sym[sp.Axis]
		if size == "" {
			continue
		}
		f := sp.Factors
		for _, x := range f[:len(f)-1] {
			if x != 1 {
				return nil
			}
		}
		c.Splits[k].Size = loops.SizePrefix + size
		outer := slices.Index(c.Loops, loops.TileLoop(sp.Axis, 0))
		if outer >= 0 && outer < c.Parallel {
			c.Loops = slices.Insert(slices.Delete(c.Loops, outer, outer+1), c.Parallel-1, loops.TileLoop(sp.Axis, 0))
			c.Parallel--
		}
	}
	return &c
}
