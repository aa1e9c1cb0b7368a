package autotune

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"math"
	"math/bits"
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
// under each of a few variants of its default schedules
// (loops.SymbolicVariants: without lanes, with half as many, serial, one
// loop more in parallel), times each at the bucket's sizes on buffers of
// its own, and keeps the fastest; the record goes to the tuning database
// under BucketKey, so that every later size of the bucket, in this
// process or another, runs that kernel without measuring again. These are
// picks among a few candidates, not a genetic search.

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

// symbolicMargin is how much faster than the best so far another
// candidate must run to be kept instead: these kernels run for
// microseconds at small buckets, where launches differ by more than the
// schedules do.
const symbolicMargin = 0.05

// symbolicLaunches is how many times PickSymbolic launches each candidate
// after a first launch; the least time counts.
const symbolicLaunches = 5

// PickSymbolic picks plan's schedules for the sizes' values (in the
// plan's size order), at which spec is the op specialized: each candidate
// (pipeline.SymbolicPlan.Candidates) that lowers is built and launched on spec's
// buffers with threads threads, and the fastest is kept (by a margin,
// symbolicMargin). A candidate whose
// first launch takes more than slowFactor times the fastest so far is not
// launched again.
func PickSymbolic(ctx context.Context, b *kernels.Builder, plan *pipeline.SymbolicPlan, spec *ir.Spec, values []int64, threads int) (*SymbolicPick, error) {
	bufs := hostbuf.New(spec, hostbuf.RandomInputs(spec, false, 1))
	defer bufs.Free()
	p := &SymbolicPick{Default: math.Inf(1), Best: math.Inf(1)}
	for i, scheds := range plan.Candidates() {
		fn, err := plan.Lower(scheds)
		if err != nil {
			if i == 0 {
				return nil, err
			}
			continue // a variant the lowering refuses at some size
		}
		k, err := b.BuildFunc(ctx, fn)
		if err != nil {
			p.close()
			return nil, errors.Wrap(err, "picking a kernel's schedules for a size bucket")
		}
		t, err := timeSized(k, bufs, values, threads, slowFactor*p.Best)
		if err != nil {
			_ = k.Close()
			p.close()
			return nil, err
		}
		p.Candidates++
		if i == 0 {
			p.Default = t
		}
		if i == 0 || t < p.Best*(1-symbolicMargin) {
			p.close()
			p.Schedules, p.Kernel, p.Best = scheds, k, t
		} else {
			_ = k.Close()
		}
	}
	return p, nil
}

// close closes the kept kernel, if any.
func (p *SymbolicPick) close() {
	if p.Kernel != nil {
		_ = p.Kernel.Close()
		p.Kernel = nil
	}
}

// timeSized launches kernel k at values once, then symbolicLaunches
// times, and returns the least seconds of those; +Inf when the first
// launch took longer than limit seconds.
func timeSized(k *kernels.Kernel, bufs *hostbuf.Buffers, values []int64, threads int, limit float64) (float64, error) {
	best := math.Inf(1)
	for i := range symbolicLaunches + 1 {
		start := time.Now()
		if err := k.LaunchSized(bufs.Ptr, values, threads); err != nil {
			return 0, errors.Wrap(err, "picking a kernel's schedules for a size bucket")
		}
		t := time.Since(start).Seconds()
		if i == 0 {
			if t > limit {
				return math.Inf(1), nil
			}
			continue
		}
		best = min(best, t)
	}
	return best, nil
}
