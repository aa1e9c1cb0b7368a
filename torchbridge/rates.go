package torchbridge

import (
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/pkg/errors"

	"github.com/neoflow/neoflow/core/fuse"
	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/parse"
	"github.com/neoflow/neoflow/core/pipeline"
	"github.com/neoflow/neoflow/core/sema"
	"github.com/neoflow/neoflow/internal/hostbuf"
	"github.com/neoflow/neoflow/kernels"
)

// rateKernel is one small kernel measureRates times: float32 inputs of
// these shapes, its statements as written or (joined) in one fused group.
type rateKernel struct {
	src    string
	inputs []string
	shapes [][]int64
	joined bool
}

func copyOf(n int64) rateKernel {
	return rateKernel{src: "Y[i] = X[i]", inputs: []string{"X"}, shapes: [][]int64{{n}}}
}

func oneInput(src string, n int64) rateKernel {
	return rateKernel{src: src, inputs: []string{"X"}, shapes: [][]int64{{n}}}
}

// The kernels, by their index in rateKernels' list.
const (
	rateCopy = iota
	rateLLC
	rateReread
	rateArith
	rateCalls
	rateNests
	rateOne
	rateApart
	rateFused
)

// Sizes: elementwise chains (the math calls' shorter), nests; a contraction
// re-reading a 16 MiB weight; a weight's and an input's gradient of an
// RNN cell whose weight fits the level-2 cache.
const (
	rateM, rateCallsM, rateK = 1 << 20, 1 << 18, 1 << 16
	rateNestCount            = 8
	rereadB, rereadG         = 4, 4096
	rereadJ                  = 1024
	accB, accG, accK         = 16, 2048, 64
)

// copyElems is the elements of the copy past the caches: its input and
// output are each the size of the last-level cache (llc bytes, at most
// rateLLCBytes), 16 MiB at least.
func copyElems(llc int64) int64 { return max(min(llc, rateLLCBytes)/4, 1<<22) }

// rateLLCBytes caps the last-level cache that the copies are sized by. A
// server's cache is shared by every core of its sockets (300 MiB on the
// development machine's Xeon, of which this process gets 2 cores): copies
// of that size took 1.1 of the 1.5 s that the first measurement cost (the
// first build of any fused op waits for it), and measured about the
// same bandwidth as copies of 64 MiB (19-20 GB/s against 17.6).
const rateLLCBytes = 64 << 20

// rateKernels lists what measureRates times (see there); copyN is the
// elements of the copy past the caches (copyElems), llcN those of a copy
// that fills a quarter of the last-level cache.
func rateKernels(copyN, llcN int64) (list []rateKernel, arith, calls string) {
	arith = "X[i]"
	for range 16 {
		arith = "(" + arith + " * 0.999 + 0.001)"
	}
	calls = "X[i]"
	for range 4 {
		calls = "exp(tanh(sigmoid(" + calls + " * 0.25) * 0.5) * -0.5)"
	}
	nests := "T0[i] = X[i] + 1.0"
	for k := 1; k < rateNestCount; k++ {
		nests += "\nT" + strconv.Itoa(k) + "[i] = T" + strconv.Itoa(k-1) + "[i] + 1.0"
	}
	grads := "A[g, k] += D[b, g] * X[b, k]\nB[b, k] += D[b, g] * W[g, k]"
	gradShapes := [][]int64{{accB, accG}, {accB, accK}, {accG, accK}}
	list = []rateKernel{
		rateCopy:   copyOf(copyN),
		rateLLC:    copyOf(llcN),
		rateReread: {src: "Y[b, j] += D[b, g] * U[g, j]", inputs: []string{"D", "U"}, shapes: [][]int64{{rereadB, rereadG}, {rereadG, rereadJ}}},
		rateArith:  oneInput("Y[i] = "+arith, rateM),
		rateCalls:  oneInput("Y[i] = "+calls, rateCallsM),
		rateNests:  oneInput(nests, rateK),
		rateOne:    oneInput("Y[i] = X[i] + 1.0", rateNestCount*rateK),
		rateApart:  {src: grads, inputs: []string{"D", "X", "W"}, shapes: gradShapes},
		rateFused:  {src: grads, inputs: []string{"D", "X", "W"}, shapes: gradShapes, joined: true},
	}
	return list, arith, calls
}

// measureRates times small kernels, built at once (in parallel) and then
// run one by one, in three rounds:
//   - a copy whose input and output are each the size of the last-level
//     cache (memory bandwidth, past the caches) and one of a quarter of
//     that cache (the bandwidth of re-reads from there);
//   - an input's gradient of a contraction over a 16 MiB weight, which its
//     schedule walks in strips 4 times (the bandwidth of re-reads from
//     memory);
//   - on 1M floats a chain of products and sums (arithmetic, in fuse.Cost's
//     units), on 256K a chain of math functions (the cost of a call in
//     those units); each chain reads the level below once: a chain that
//     repeated a subexpression would be computed once by the C compiler
//     and counted twice by fuse.Cost;
//   - for the cost of a loop nest, 8 statements of 64K elements each
//     (each its own parallel region) against one statement of 8 times as
//     many (16 statements took 0.15-0.26 s of the C compiler's time, the
//     longest build of the list);
//   - a weight's and an input's gradient apart and fused: what
//     the fused nest takes beyond the two, per point of each, is what a
//     reduction member's accumulator costs in a group.
func (r *Runtime) measureRates(threads int) (fuse.Machine, error) {
	llc := cacheBytes(3, fuse.DefaultLLCBytes)
	llcN := max(min(llc, rateLLCBytes)/4/8, 1<<10)
	copyN := copyElems(llc)
	list, arith, calls := rateKernels(copyN, llcN)
	specs := make([]*ir.Spec, len(list))
	for i, rk := range list {
		spec, err := rateSpec(rk)
		if err != nil {
			return fuse.Machine{}, err
		}
		specs[i] = spec
	}
	// The buffers are filled while the C compiler builds the kernels.
	filled := make(chan []*hostbuf.Buffers, 1)
	go func() { filled <- rateBuffers(specs) }()
	ks, err := r.buildRateKernels(specs)
	bufs := <-filled
	for _, b := range bufs {
		defer b.Free()
	}
	if err != nil {
		return fuse.Machine{}, err
	}
	for _, k := range ks {
		defer func() { _ = k.Close() }()
	}
	// Rounds, each timing every kernel in turn, the apart and fused
	// gradients next to each other (and in four more rounds: theirs is the
	// smallest difference measured); each rate takes the median round: a
	// single timing on a busy machine can be off by far more than the
	// differences measured.
	rounds := make([][]float64, len(list))
	for round := range 7 {
		for i := range list {
			if round >= 3 && i != rateApart && i != rateFused {
				continue
			}
			v, err := roundTime(i, ks[i], bufs[i], threads, round)
			if err != nil {
				return fuse.Machine{}, err
			}
			rounds[i] = append(rounds[i], v)
		}
	}
	t := make([]float64, len(list))
	for i, vs := range rounds {
		slices.Sort(vs)
		t[i] = vs[len(vs)/2]
	}
	arithOps, err := chainCost(arith)
	if err != nil {
		return fuse.Machine{}, err
	}
	callOps, err := chainCost(calls)
	if err != nil {
		return fuse.Machine{}, err
	}
	opsPerSec := float64(arithOps) * rateM / max(t[rateArith], 1e-9)
	const ncalls = 12
	perCall := (t[rateCalls]*opsPerSec/rateCallsM - float64(callOps)) / ncalls
	acc := (t[rateFused] - t[rateApart]) * opsPerSec / (2 * accB * accG * accK)
	return fuse.Machine{
		BytesPerSec:       2 * 4 * float64(copyN) / t[rateCopy],
		OpsPerSec:         opsPerSec,
		NestSec:           max(t[rateNests]-t[rateOne], 0) / (rateNestCount - 1),
		CallOps:           max(int64(math.Round(perCall)), 1),
		LLCBytes:          min(llc, rateLLCBytes), // the cache its rate was measured in
		LLCBytesPerSec:    float64(2*4*llcN) / t[rateLLC],
		RereadBytesPerSec: 4 * rereadB * rereadG * rereadJ / t[rateReread],
		AccumulatorOps:    max(int64(math.Round(acc)), 1),
	}, nil
}

// buildRateKernels builds the kernels of specs in as many batches as
// there are CPUs, at once (kernels.Builder.BuildBatches): a C compiler run
// per kernel took 0.5 s on the development machine's 2 cores (9 runs of
// 0.06-0.14 s each, 0.04 s of which the compiler's start and headers), 2
// batches 0.23 s.
func (r *Runtime) buildRateKernels(specs []*ir.Spec) ([]*kernels.Kernel, error) {
	b, err := r.kernelBuilder()
	if err != nil {
		return nil, err
	}
	return b.BuildBatches(r.buildContext(), specs, 0)
}

// rateBuffers is the arguments of each rates kernel. Only the chains of
// arithmetic and math calls read values that look like data (a math
// function's time depends on its argument); the others' tensors stay
// zero, which x86 adds, multiplies and copies at full speed, and cost no
// pass over the 40-odd million values they hold (hostbuf.Zeroed writes
// one element a page, which makes the page the process's own).
func rateBuffers(specs []*ir.Spec) []*hostbuf.Buffers {
	bufs := make([]*hostbuf.Buffers, len(specs))
	for i, spec := range specs {
		var inputs [][]float64
		if i == rateArith || i == rateCalls {
			inputs = uniform(spec)
		}
		bufs[i] = hostbuf.Zeroed(spec, inputs)
	}
	return bufs
}

// rateSpec is rk's op, specialized (and fused, when joined).
func rateSpec(rk rateKernel) (*ir.Spec, error) {
	op, err := parse.Parse(rk.src, parse.Options{Name: "nf_rates", Inputs: rk.inputs})
	if err != nil {
		return nil, err
	}
	if err := sema.Check(op); err != nil {
		return nil, err
	}
	u := &pipeline.Unit{Op: op, DType: ir.Float32, Shapes: rk.shapes}
	if err := pipeline.Run(u, "specialize"); err != nil {
		return nil, err
	}
	if rk.joined {
		// Rates under which every join pays: a loop nest costs a second.
		u.Spec = fuse.Group(u.Spec, fuse.Options{Machine: fuse.Machine{BytesPerSec: 1e10, OpsPerSec: 1e30, NestSec: 1}}, nil)
		if !slices.ContainsFunc(u.Spec.Stmts, func(st *ir.BoundStmt) bool { return st.Joined }) {
			return nil, errors.Errorf("the rates kernel %q did not fuse", rk.src)
		}
	}
	return u.Spec, nil
}

// chainCost is the fuse.Cost of a rates kernel's expression less its math
// function calls.
func chainCost(chain string) (int64, error) {
	op, err := parse.Parse("Y[i] = "+chain, parse.Options{})
	if err != nil {
		return 0, err
	}
	return fuse.Cost(op.Stmts[0].RHS, 0), nil
}

// roundTime is round's seconds of rates kernel i: the median of five
// launches, or for the two that stream from memory (4-7 ms a launch on
// the development machines, where the others take at most 1.3 ms) the
// faster of two, since a streaming kernel runs no faster than the memory
// lets it, only slower when disturbed. Those two stream from memory in
// every launch, so only their first round starts with an untimed one
// (which also touches their buffers' pages first); the others' untimed
// launch brings their data into the caches, which the kernels timed in
// between have filled with their own.
func roundTime(i int, k *kernels.Kernel, bufs *hostbuf.Buffers, threads, round int) (float64, error) {
	if i == rateCopy || i == rateReread {
		times, err := timeLaunches(k, bufs, threads, 2, round == 0)
		if err != nil {
			return 0, err
		}
		return times[0], nil
	}
	times, err := timeLaunches(k, bufs, threads, 5, true)
	if err != nil {
		return 0, err
	}
	return times[len(times)/2], nil
}

// timeLaunches is the seconds of n launches of k, sorted, after an
// untimed one when warm is set.
func timeLaunches(k *kernels.Kernel, bufs *hostbuf.Buffers, threads, n int, warm bool) ([]float64, error) {
	var times []float64
	if warm {
		if err := k.Launch(bufs.Ptr, threads); err != nil {
			return nil, err
		}
	}
	for range n {
		start := time.Now()
		if err := k.Launch(bufs.Ptr, threads); err != nil {
			return nil, err
		}
		times = append(times, time.Since(start).Seconds())
	}
	slices.Sort(times)
	return times, nil
}

// uniform is inputs for spec's input tensors, uniform in [-1, 1) from a
// linear congruential generator: math functions take longer on some
// arguments than on others, so the values must look like data, and
// drawing 16M of them with math/rand takes longer than the kernels take
// to run.
func uniform(spec *ir.Spec) [][]float64 {
	var out [][]float64
	x := uint64(1)
	for _, t := range spec.Tensors {
		if t.Role == ir.RoleInput {
			v := make([]float64, max(t.Elems(), 1))
			for i := range v {
				x = x*6364136223846793005 + 1442695040888963407
				v[i] = float64(x>>11)/(1<<52) - 1
			}
			out = append(out, v)
		}
	}
	return out
}
