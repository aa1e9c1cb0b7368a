package autotune

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
	"unsafe"

	"github.com/pkg/errors"

	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/kernels"
)

// JointTop is how many schedules of each kernel TuneJointly pairs: the
// kept best, the default, and the fastest other distinct ones measured.
const JointTop = 3

// Joint is the outcome of TuneJointly.
type Joint struct {
	// Shared names the backward kernel's inputs that are the forward
	// kernel's tensors (its inputs, and the outputs it saves for the
	// backward pass); none means there was nothing to pair.
	Shared []string
	// Pairs is the number of schedule pairs timed; Seconds[i][j] the
	// median seconds of the forward's finalist i then the backward's j.
	Pairs   int
	Seconds [][]float64
	// Before and After are the pair medians of the kernels' choices before
	// and after; Changed says whether either kernel's choice changed, and
	// FwdChanged and BwdChanged which.
	Before, After          float64
	Changed                bool
	FwdChanged, BwdChanged bool
}

// String is a one-line summary for progress output.
func (j Joint) String() string {
	if j.Pairs == 0 {
		return ""
	}
	verdict := fmt.Sprintf("kept the choices tuned apart (%.3f ms for the pair)", j.Before*1e3)
	if j.Changed {
		which := map[[2]bool]string{{true, false}: "the forward kernel's", {false, true}: "this kernel's", {true, true}: "both kernels'"}
		verdict = fmt.Sprintf("changed %s choice (%.3f ms for the pair, %.3f ms before)",
			which[[2]bool{j.FwdChanged, j.BwdChanged}], j.After*1e3, j.Before*1e3)
	}
	return fmt.Sprintf("tuned with its forward kernel (sharing %s): %d schedule pairs timed in training order, %s",
		strings.Join(j.Shared, ", "), j.Pairs, verdict)
}

// TuneJointly tunes a forward kernel and its gradient kernel together
// where they share data, after each was tuned alone (both searches done):
// the backward kernel reads the forward's inputs and the outputs it
// saved, which in training the forward has just written. Each kernel's
// finalists (its kept best, its default and the fastest other schedules
// its search measured, JointTop in all) are timed in pairs as a training
// step runs them, the forward then the backward reading the very buffers
// the forward wrote, in turns, ConfirmRounds times each; the pair with
// the lowest median replaces the choices made apart only when it beats
// their pair by MinGain. Both tuners' Best and Record then follow.
// CPU tuners only (GPU tuners report nothing to pair).
func TuneJointly(ctx context.Context, fwd, bwd *Tuner) (Joint, error) {
	var j Joint
	if fwd.bench == nil || bwd.bench == nil || fwd.best == nil || bwd.best == nil {
		return j, nil
	}
	ptr, shared := sharedBuffers(fwd.bench, bwd.bench)
	if shared == nil {
		return j, nil
	}
	j.Shared = shared
	fc, bc := fwd.finalists(JointTop), bwd.finalists(JointTop)
	fk, err := buildAll(ctx, fwd, fc)
	if err != nil {
		return j, err
	}
	defer closeAll(fk)
	bk, err := buildAll(ctx, bwd, bc)
	if err != nil {
		return j, err
	}
	defer closeAll(bk)
	threads := max(fwd.bench.timing.Threads, 1)
	timing := fwd.bench.timing
	timing.MinTime = min(timing.MinTime, 20*time.Millisecond)
	times := make([][][]float64, len(fk))
	for i := range times {
		times[i] = make([][]float64, len(bk))
	}
	for range ConfirmRounds {
		for i, f := range fk {
			for k, b := range bk {
				run := func() (float64, []float64, error) {
					t0 := time.Now()
					if err := f.Launch(fwd.bench.bufs.Ptr, threads); err != nil {
						return 0, nil, err
					}
					err := b.Launch(ptr, threads)
					return time.Since(t0).Seconds(), nil, err
				}
				s, err := sampleRuns(ctx, timing, 0, run)
				if err != nil {
					return j, errors.Wrap(err, "autotune: timing a forward and backward pair")
				}
				times[i][k] = append(times[i][k], s.Seconds)
			}
		}
	}
	j.Pairs = len(fk) * len(bk)
	j.Seconds = make([][]float64, len(fk))
	bi, bk2 := 0, 0
	for i := range times {
		j.Seconds[i] = make([]float64, len(bk))
		for k := range times[i] {
			slices.Sort(times[i][k])
			j.Seconds[i][k] = median(times[i][k])
			if j.Seconds[i][k] < j.Seconds[bi][bk2] {
				bi, bk2 = i, k
			}
		}
	}
	// Finalist 0 of each side is its kept best.
	j.Before, j.After = j.Seconds[0][0], j.Seconds[0][0]
	if bi == 0 && bk2 == 0 || j.Seconds[bi][bk2] > j.Before*(1-MinGain) {
		return j, nil
	}
	j.After, j.Changed, j.FwdChanged, j.BwdChanged = j.Seconds[bi][bk2], true, bi != 0, bk2 != 0
	fwd.adopt(fc[bi])
	bwd.adopt(bc[bk2])
	return j, nil
}

// Pairs reports whether bwd reads data of fwd's, so that TuneJointly
// pairs them: both CPU tuners of one dtype, and every input of bwd named
// like a tensor of fwd has its shape (a gradient specialized for other
// shapes than the forward was tuned for does not pair), one at least.
func Pairs(fwd, bwd *Tuner) bool {
	if fwd.bench == nil || bwd.bench == nil {
		return false
	}
	_, shared := sharedBuffers(fwd.bench, bwd.bench)
	return shared != nil
}

// sharedBuffers is the backward bench's buffer pointers with each input
// that is one of the forward's tensors pointing at the forward bench's
// buffer, and the names so shared; no names (nil) where the dtypes differ,
// an input is named like a forward tensor of another shape, or none is
// shared.
func sharedBuffers(fwd, bwd *bench) ([]unsafe.Pointer, []string) {
	ptr := slices.Clone(bwd.bufs.Ptr)
	var shared []string
	if fwd.spec.DType != bwd.spec.DType {
		return ptr, nil
	}
	for i, t := range bwd.spec.Tensors {
		if t.Role != ir.RoleInput {
			continue
		}
		for k, f := range fwd.spec.Tensors {
			if f.Name != t.Name {
				continue
			}
			if !slices.Equal(f.Shape, t.Shape) {
				return ptr, nil
			}
			ptr[i] = fwd.bufs.Ptr[k]
			shared = append(shared, t.Name)
		}
	}
	return ptr, shared
}

// CPU reports whether the tuner times CPU kernels (NewTuner).
func (t *Tuner) CPU() bool { return t.bench != nil }

// Spec is the specialized op whose kernel is tuned.
func (t *Tuner) Spec() *ir.Spec { return t.spec }

// finalists is the kept best genome, the default, then the fastest other
// distinct genomes measured, n in all at most.
func (t *Tuner) finalists(n int) [][]int {
	set := t.distinct(t.best, t.space.Default())
	for _, c := range t.fastest() {
		if len(set.list) >= n {
			break
		}
		set.add(c.g)
	}
	return set.list
}

// adopt makes g the kept best, with the lowest time its search measured
// for it alone (the record's BestSeconds).
func (t *Tuner) adopt(g []int) {
	key := schedKey(t.space.Decode(g))
	best := 0.0
	for _, c := range t.timed {
		if schedKey(t.space.Decode(c.g)) == key && (best == 0 || c.secs < best) {
			best = c.secs
		}
	}
	t.best = g
	if best > 0 {
		t.prog.Best = best
	}
}

func buildAll(ctx context.Context, t *Tuner, gs [][]int) ([]*kernels.Kernel, error) {
	var ks []*kernels.Kernel
	for _, g := range gs {
		k, err := t.bench.b.BuildScheduled(ctx, t.spec, t.space.Decode(g))
		if err != nil {
			closeAll(ks)
			return nil, errors.Wrap(err, "autotune: building a finalist")
		}
		ks = append(ks, k)
	}
	return ks, nil
}

func closeAll(ks []*kernels.Kernel) {
	for _, k := range ks {
		k.Close()
	}
}
