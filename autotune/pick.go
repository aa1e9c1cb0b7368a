package autotune

import (
	"context"
	"runtime"
	"slices"
	"sync"
	"unsafe"

	"github.com/pkg/errors"

	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/loops"
	"github.com/neoflow/neoflow/internal/hostbuf"
	"github.com/neoflow/neoflow/kernels"
)

// Picking the first build's schedules. A kernel without a tuning record
// is built with schedules chosen, statement by statement, between two
// candidates measured once on the tuner's own buffers: the default
// schedule and the register-tiled heuristic (8 rows of 4 vectors, the
// search's usual winner for long contractions: GEMM 1024³ runs 10 ms
// with it against 98 ms by default on the 2-core development machine,
// while a contraction over a batch of 16 runs several times slower with
// it). The two are built with per-statement timing at once, each is
// launched twice (the second launch counts), and each statement takes the
// faster one's schedule; segments of two genomes compose (Space.Decode).

// PickMinOps is the work (points of the reduction statements) below
// which a kernel keeps its default schedules unmeasured: two more builds
// cost more than such a kernel can gain.
const PickMinOps = 1 << 22

// Pick is the outcome of PickDefaults.
type Pick struct {
	// Schedules is one per statement; nil when every statement keeps its
	// default (or nothing was measured).
	Schedules []loops.Schedule
	// defaults is the default schedules, where they were measured.
	defaults []loops.Schedule
	// Default and Best are the measured seconds of the default schedules
	// and of the picked ones (the sum of the faster statements' times).
	Default, Best float64
	// Tiled counts the statements that took the register-tiled schedule.
	Tiled int
}

// Picks reports whether PickDefaults measures spec: enough work, and a
// register-tiled schedule that differs from the default.
func Picks(spec *ir.Spec) bool {
	if reductionPoints(spec) < PickMinOps {
		return false
	}
	sp := NewSpace(spec)
	return !slices.Equal(sp.Default(), sp.registerTiled())
}

// Decided is one schedule per statement: the picked ones, or the defaults
// where none was picked.
func (p *Pick) Decided() []loops.Schedule {
	if p.Schedules != nil {
		return p.Schedules
	}
	return p.defaults
}

// PickDefaults measures spec's two candidate schedules with threads
// threads and returns the faster per statement. Kernels with too little
// work (PickMinOps), or where the heuristic changes nothing, are not
// measured.
func PickDefaults(ctx context.Context, b *kernels.Builder, spec *ir.Spec, threads int) (*Pick, error) {
	sp := NewSpace(spec)
	cands := [][]int{sp.Default(), sp.registerTiled()}
	if slices.Equal(cands[0], cands[1]) || reductionPoints(spec) < PickMinOps {
		return &Pick{}, nil
	}
	ks := make([]*kernels.Kernel, len(cands))
	errs := make([]error, len(cands))
	var wg sync.WaitGroup
	for i, g := range cands {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ks[i], errs[i] = b.BuildProfiled(ctx, spec, sp.Decode(g))
		}()
	}
	wg.Wait()
	for _, k := range ks {
		if k != nil {
			defer func() { _ = k.Close() }()
		}
	}
	for _, err := range errs {
		if err != nil {
			return nil, errors.Wrap(err, "picking the default schedules")
		}
	}
	bufs := hostbuf.New(spec, hostbuf.RandomInputs(spec, false, 1))
	defer bufs.Free()
	times := make([][]float64, len(cands))
	for i, k := range ks {
		t, err := statementTimes(k, bufs, threads)
		if err != nil {
			return nil, errors.Wrap(err, "picking the default schedules")
		}
		times[i] = t
	}
	return compose(sp, spec, cands, times), nil
}

// compose takes each statement's segment (a fused group's members with
// their lead's) from the candidate that ran it fastest.
func compose(sp *Space, spec *ir.Spec, cands [][]int, times [][]float64) *Pick {
	p := &Pick{}
	g := slices.Clone(cands[0])
	from := 0
	for i := range spec.Stmts {
		if !spec.Stmts[i].Joined {
			from = 0
			for c := range cands {
				if times[c][i] < times[from][i] {
					from = c
				}
			}
			if from != 0 {
				p.Tiled++
			}
		}
		lo, hi := sp.segment(i)
		copy(g[lo:hi], cands[from][lo:hi])
		p.Default += times[0][i]
		p.Best += times[from][i]
	}
	if p.Tiled > 0 {
		p.Schedules = sp.Decode(g)
	}
	p.defaults = sp.Decode(cands[0])
	return p
}

// statementTimes launches profiled kernel k twice on bufs and returns the
// second launch's seconds per statement.
func statementTimes(k *kernels.Kernel, bufs *hostbuf.Buffers, threads int) ([]float64, error) {
	n := len(k.Spec().Stmts)
	times := make([]float64, max(n, 1))
	var pin runtime.Pinner
	pin.Pin(&times[0])
	defer pin.Unpin()
	ptrs := append(slices.Clone(bufs.Ptr), unsafe.Pointer(&times[0]))
	for range 2 {
		clear(times)
		if err := k.Launch(ptrs, threads); err != nil {
			return nil, err
		}
	}
	return times[:n], nil
}

// reductionPoints is the points of spec's reduction statements.
func reductionPoints(spec *ir.Spec) int64 {
	var n int64
	for _, st := range spec.Stmts {
		if st.Stmt.Reduce != ir.Assign {
			n += st.Points()
		}
	}
	return n
}
