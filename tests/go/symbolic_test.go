package gotests

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/neoflow/neoflow/autotune"
	"github.com/neoflow/neoflow/core/interp"
	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/loops"
	"github.com/neoflow/neoflow/core/pipeline"
	"github.com/neoflow/neoflow/internal/cudaemu"
	"github.com/neoflow/neoflow/internal/hostbuf"
	"github.com/neoflow/neoflow/internal/progen"
	"github.com/neoflow/neoflow/kernels"
	"github.com/neoflow/neoflow/kernels/cgen"
)

// symbolicSizes are the values of M a generated program's symbolic kernel
// runs at, beside the two it is built from: 1, sizes that divide no lane
// width, and larger ones.
var symbolicSizes = []int64{1, 2, 7, 19, 33}

// TestRandomProgramsSymbolic draws random programs (internal/progen) and
// builds, for every one the checker accepts, a kernel with M (the extent
// of i) symbolic from the program specialized at M and M + 3, for the
// forward op and its gradient op; each kernel built runs at every size of
// symbolicSizes against the interpreter on the program specialized there.
// A program whose kernel would depend on M some other way (a literal M - 1
// in an index, an access proven only for its own M) is refused, and at
// least a third of the ops must get a kernel. Each kernel built is also
// lowered for the GPU and run on the CUDA emulator (emulateSymbolic).
func TestRandomProgramsSymbolic(t *testing.T) {
	want := 3 * fuzzPrograms()
	b, err := kernels.NewBuilder(kernels.Options{CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	tried, built, split, tiled, seed := 0, 0, 0, 0, uint64(0)
	for ; tried < want && seed < uint64(20*want); seed++ {
		p := progen.New(seed)
		q := p
		q.M += 3
		specs := [2][]*ir.Spec{}
		for k, x := range []progen.Program{p, q} {
			spec, err := x.Spec(ir.Float64)
			if err != nil {
				break
			}
			specs[k] = []*ir.Spec{spec}
			if len(spec.InputsDecl()) > 0 {
				specs[k] = append(specs[k], gradOf(t, spec, x))
			}
		}
		if specs[1] == nil || p.M < 2 {
			continue
		}
		for op := range specs[0] {
			tried++
			k, err := b.BuildSymbolic(context.Background(), programAt(t, p, op == 1), []loops.Size{{Name: "M", A: p.M, B: q.M}})
			if err != nil {
				if strings.Contains(err.Error(), "internal") {
					t.Fatalf("seed %d: %v\n%s", seed, err, p)
				}
				t.Logf("seed %d op %d: %v\n%s", seed, op, err, p)
				continue
			}
			built++
			if fn, err := pipeline.Symbolic(programAt(t, p, op == 1), []loops.Size{{Name: "M", A: p.M, B: q.M}}, pipeline.CPU); err == nil && splitsASize(fn) {
				split++
			}
			t.Run(fmt.Sprintf("%s_%d", []string{"forward", "gradient"}[op], seed), func(t *testing.T) {
				defer k.Close()
				for _, m := range symbolicSizes {
					runSymbolic(t, k, p, m, op == 1)
				}
				emulateSymbolic(t, specs[0][op], p, op == 1)
				tiled += runTiledOverM(t, b, p, op == 1)
			})
		}
	}
	if built*3 < tried {
		t.Fatalf("%d symbolic kernels built of %d ops tried", built, tried)
	}
	if split*4 < built {
		t.Fatalf("%d of %d symbolic kernels split a lane axis that runs to M", split, built)
	}
	t.Logf("%d symbolic kernels built of %d ops tried (%d seeds), %d split M into vectors and a remainder, %d candidates into tiles", built, tried, seed, split, tiled)
}

// runTiledOverM builds the candidates a size bucket of p's kernel for every
// M (its gradient op's when grad) is picked among that split M into tiles
// (autotune.SymbolicCandidates, at M = 16; loops.Split.Size), and runs
// each at symbolicSizes against the interpreter. It returns how many
// such candidates lowered.
func runTiledOverM(t *testing.T, b *kernels.Builder, p progen.Program, grad bool) int {
	t.Helper()
	at := programAt(t, p, grad)
	plan, err := pipeline.PrepareSymbolic(at, []loops.Size{{Name: "M", A: p.M, B: p.M + 3}}, pipeline.CPU)
	if err != nil {
		t.Fatal(err)
	}
	bucket, err := at(map[string]int64{"M": 16})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, scheds := range autotune.SymbolicCandidates(plan, bucket) {
		if !slices.ContainsFunc(scheds, func(s loops.Schedule) bool {
			return s.Tiling != nil && slices.ContainsFunc(s.Tiling.Splits, func(sp loops.Split) bool { return sp.Size != "" })
		}) {
			continue
		}
		fn, err := plan.Lower(scheds)
		if err != nil {
			continue // a placement the tiled lowering refuses over a size
		}
		k, err := b.BuildFunc(context.Background(), fn)
		if err != nil {
			t.Fatal(err)
		}
		n++
		for _, m := range symbolicSizes {
			runAtM(t, p, m, grad, "C tiled over M", func(bufs *hostbuf.Buffers) error { return k.LaunchSized(bufs.Ptr, []int64{m}, 2) })
		}
		_ = k.Close()
	}
	return n
}

// splitsASize reports whether some loop of fn runs to a part of a size: a
// lane axis of symbolic extent split into vectors and a remainder.
func splitsASize(fn *loops.Func) bool {
	found := false
	var walk func([]loops.Node)
	walk = func(nodes []loops.Node) {
		for _, n := range nodes {
			switch n := n.(type) {
			case *loops.Loop:
				found = found || n.By > 0
				walk(n.Body)
			case *loops.Block:
				walk(n.Body)
			case *loops.If:
				walk(n.Body)
			}
		}
	}
	for _, n := range fn.Nests {
		walk(n.Body)
	}
	return found
}

// emulateSymbolic lowers p (its gradient op when grad; a is it at p.M)
// for the GPU with M symbolic, renders it as CUDA and runs it on the
// emulator at M = 1, 7 and 33 against the interpreter.
func emulateSymbolic(t *testing.T, a *ir.Spec, p progen.Program, grad bool) {
	t.Helper()
	fn, err := pipeline.Symbolic(programAt(t, p, grad), []loops.Size{{Name: "M", A: p.M, B: p.M + 3}}, pipeline.GPU)
	if err != nil {
		t.Fatalf("the CPU kernel was built, the GPU one not: %v\n%s", err, p)
	}
	mod, err := cgen.RenderCUDA(fn, "nf_sym")
	if err != nil {
		t.Fatalf("CUDA: %v\n%s", err, p)
	}
	k, err := cudaemu.Compile(context.Background(), a, mod, t.TempDir())
	if err != nil {
		t.Fatalf("emulator: %v\n%s", err, p)
	}
	for _, m := range []int64{1, 7, 33} {
		runAtM(t, p, m, grad, "CUDA (emulated)", func(bufs *hostbuf.Buffers) error {
			values := []int64{m}
			var pin runtime.Pinner
			pin.Pin(&values[0])
			defer pin.Unpin()
			return k.Run(append(slices.Clone(bufs.Ptr), unsafe.Pointer(&values[0])))
		})
	}
}

// programAt specializes p (its gradient op when grad) at the value of M.
func programAt(t *testing.T, p progen.Program, grad bool) pipeline.SpecAt {
	return func(values map[string]int64) (*ir.Spec, error) {
		q := p
		q.M = values["M"]
		spec, err := q.Spec(ir.Float64)
		if err != nil || !grad {
			return spec, err
		}
		return gradOf(t, spec, q), nil
	}
}

// runSymbolic runs k at M = m against the interpreter on p (its gradient
// op when grad) specialized there.
func runSymbolic(t *testing.T, k *kernels.Kernel, p progen.Program, m int64, grad bool) {
	t.Helper()
	runAtM(t, p, m, grad, "C", func(bufs *hostbuf.Buffers) error { return k.LaunchSized(bufs.Ptr, []int64{m}, 2) })
}

// runAtM specializes p (its gradient op when grad) at M = m, runs launch
// on random inputs with the outputs poisoned, and compares the outputs
// with the interpreter's.
func runAtM(t *testing.T, p progen.Program, m int64, grad bool, backend string, launch func(*hostbuf.Buffers) error) {
	t.Helper()
	spec, err := programAt(t, p, grad)(map[string]int64{"M": m})
	if err != nil {
		t.Fatalf("M=%d: %v\n%s", m, err, p)
	}
	inputs := hostbuf.RandomInputs(spec, false, uint64(m))
	want, err := interp.Run(spec, inputs)
	if err != nil {
		t.Fatal(err)
	}
	bufs := hostbuf.New(spec, inputs)
	defer bufs.Free()
	bufs.Poison(spec)
	if err := launch(bufs); err != nil {
		t.Fatalf("%s, M=%d: %v\n%s", backend, m, err, p)
	}
	p.M = m
	compareOutputs(t, backend+", M="+strconv.FormatInt(m, 10), spec, bufs, want, p, nil)
}
