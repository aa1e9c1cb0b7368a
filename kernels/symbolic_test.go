package kernels

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/neoflow/neoflow/core/interp"
	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/loops"
	"github.com/neoflow/neoflow/core/pipeline"
	"github.com/neoflow/neoflow/internal/cudaemu"
	"github.com/neoflow/neoflow/internal/hostbuf"
	"github.com/neoflow/neoflow/internal/nvrtctest"
	"github.com/neoflow/neoflow/internal/testops"
	"github.com/neoflow/neoflow/kernels/cgen"
)

// symbolicCase is an op whose input shapes follow from the values of its
// size variables.
type symbolicCase struct {
	name, src string
	shapes    func(s []int64) [][]int64
}

func (c symbolicCase) spec(t *testing.T, dt ir.DType, s []int64) *ir.Spec {
	t.Helper()
	spec, err := testops.Op{Name: c.name, Src: c.src, Shapes: c.shapes(s)}.Spec(dt)
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

// at specializes c at the values of its sizes s0, s1, ...
func (c symbolicCase) at(dt ir.DType) pipeline.SpecAt {
	return func(values map[string]int64) (*ir.Spec, error) {
		s := make([]int64, len(values))
		for i := range s {
			s[i] = values[fmt.Sprintf("s%d", i)]
		}
		return testops.Op{Name: c.name, Src: c.src, Shapes: c.shapes(s)}.Spec(dt)
	}
}

// sizesOf are the size variables s0, s1, ... at values a and b.
func sizesOf(a, b []int64) []loops.Size {
	var sizes []loops.Size
	for i := range a {
		sizes = append(sizes, loops.Size{Name: fmt.Sprintf("s%d", i), A: a[i], B: b[i]})
	}
	return sizes
}

// buildSymbolic builds c's kernel from its specializations at sizes a
// and b.
func buildSymbolic(t *testing.T, c symbolicCase, dt ir.DType, a, b []int64) (*Kernel, error) {
	t.Helper()
	return testBuilder(t).BuildSymbolic(context.Background(), c.at(dt), sizesOf(a, b))
}

// runSymbolic runs k at sizes s against c specialized there (runSized).
func runSymbolic(t *testing.T, k *Kernel, c symbolicCase, dt ir.DType, s []int64) {
	t.Helper()
	runSized(t, k, c.spec(t, dt, s), s)
}

// runSized launches k at sizes s, on 1 and 3 threads with the outputs
// poisoned, and compares every written tensor with the interpreter's run
// of spec, the op specialized at s.
func runSized(t *testing.T, k *Kernel, spec *ir.Spec, s []int64) {
	t.Helper()
	shapes, err := k.Shapes(s)
	if err != nil {
		t.Fatal(err)
	}
	for i, td := range spec.Tensors {
		if !slices.Equal(shapes[i], td.Shape) {
			t.Fatalf("sizes %v: the kernel's %s is %v, the specialization's %v", s, td.Name, shapes[i], td.Shape)
		}
	}
	onThreads(t, spec, uint64(s[0]), k.Source(), func(bufs []unsafe.Pointer, threads int) error {
		return k.LaunchSized(bufs, s, threads)
	})
}

var symbolicCases = []symbolicCase{
	{"linear", "Y[n, j] += X[n, k] * W[j, k]", func(s []int64) [][]int64 { return [][]int64{{s[0], 5}, {3, 5}} }},
	{"bias_grad", "G[c] += D[n, c]", func(s []int64) [][]int64 { return [][]int64{{s[0], 6}} }},
	{"sequence", "Y[b, t, h] = X[b, t, h] * 2.0 + Z[h]", func(s []int64) [][]int64 { return [][]int64{{2, s[0], 9}, {9}} }},
	{"softmax", "M[n] max= X[n, j]\nE[n, j] = exp(X[n, j] - M[n])\nS[n] += E[n, j]\nY[n, j] = E[n, j] / S[n]",
		func(s []int64) [][]int64 { return [][]int64{{s[0], 7}} }},
	{"lanes_over_size", "Y[i, j] = X[j, i] + 1.0", func(s []int64) [][]int64 { return [][]int64{{3, s[0]}} }},
	// reductions whose lane axis runs to the size: vectors and a remainder
	{"sum_over_size", "S[i] += X[i, j] * X[i, j]", func(s []int64) [][]int64 { return [][]int64{{3, s[0]}} }},
	{"max_over_size", "M[i] max= X[i, j]", func(s []int64) [][]int64 { return [][]int64{{5, s[0]}} }},
	// a softmax along the size: its remainders read M and S, which the
	// main loops hoist; a remainder that runs no time at one size must
	// hoist alike
	{"softmax_over_size", "M[i] max= X[i, j]\nE[i, j] = exp(X[i, j] - M[i])\nS[i] += E[i, j]\nY[i, j] = E[i, j] / S[i]",
		func(s []int64) [][]int64 { return [][]int64{{3, s[0]}} }},
	{"two_sizes", "Y[n, t] = X[n, t] * B[n]", func(s []int64) [][]int64 { return [][]int64{{s[0], s[1]}, {s[0]}} }},
	{"guarded", "Y[n, j] = where(j > 0, X[n, j - 1], 0.0) + X[n, j]", func(s []int64) [][]int64 { return [][]int64{{s[0], 4}} }},
}

// TestSymbolicKernel builds each case's kernel from two sizes and runs it
// at sizes it was not built at: 1, sizes that divide no vector width, and
// larger ones.
func TestSymbolicKernel(t *testing.T) {
	for _, dt := range []ir.DType{ir.Float32, ir.Float64} {
		for _, c := range symbolicCases {
			t.Run(fmt.Sprintf("%s_%s", c.name, dt), func(t *testing.T) {
				a, b := []int64{8, 5}, []int64{12, 3}
				k, err := buildSymbolic(t, c, dt, a[:nsizes(c)], b[:nsizes(c)])
				if err != nil {
					t.Fatal(err)
				}
				defer k.Close()
				for _, s := range [][]int64{{8, 5}, {12, 3}, {1, 1}, {2, 7}, {17, 1}, {33, 9}} {
					runSymbolic(t, k, c, dt, s[:nsizes(c)])
				}
			})
		}
	}
}

// nsizes is how many size variables c's shapes take.
func nsizes(c symbolicCase) int {
	if c.name == "two_sizes" {
		return 2
	}
	return 1
}

// TestSymbolicRefusals: ops whose kernel would depend on a size some other
// way get no symbolic kernel, with an error saying why.
func TestSymbolicRefusals(t *testing.T) {
	for _, c := range []symbolicCase{
		// Y's extent is half the size.
		{"stride", "Y[i] = X[2 * i]", func(s []int64) [][]int64 { return [][]int64{{s[0]}} }},
		// the second input's dimension is the size plus one.
		{"plus_one", "Y[n] = X[n] + Z[n + 1]", func(s []int64) [][]int64 { return [][]int64{{s[0]}, {s[0] + 1}} }},
	} {
		k, err := buildSymbolic(t, c, ir.Float32, []int64{8}, []int64{12})
		if err == nil {
			k.Close()
			t.Errorf("%s: built a symbolic kernel", c.name)
			continue
		}
		t.Logf("%s: %v", c.name, err)
	}
}

// TestSymbolicOpTable builds every op of the op table, and its gradient
// op, with the first dimension of its first input symbolic (every input
// dimension of that value follows it), from the table's shapes and from
// that dimension three larger, and runs each kernel built at three other
// sizes against the interpreter; where the op does not specialize at a
// size, the kernel's launch guards must refuse it. Ops whose kernel would
// depend on the size some other way are refused; the test logs how many
// got a kernel.
func TestSymbolicOpTable(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	tried, built := 0, 0
	for _, o := range testops.All {
		if len(o.Shapes) == 0 || len(o.Shapes[0]) == 0 || o.Shapes[0][0] < 2 {
			continue
		}
		v := o.Shapes[0][0]
		at := func(n int64) testops.Op {
			q := o
			q.Shapes = make([][]int64, len(o.Shapes))
			for i, s := range o.Shapes {
				q.Shapes[i] = slices.Clone(s)
				for d := range s {
					if s[d] == v {
						q.Shapes[i][d] = n
					}
				}
			}
			return q
		}
		for _, grad := range []bool{false, true} {
			spec := func(n int64) (*ir.Spec, error) {
				if grad {
					s, _, err := at(n).GradSpec(ir.Float64)
					return s, err
				}
				return at(n).Spec(ir.Float64)
			}
			if _, err := spec(v + 3); err != nil {
				continue
			}
			tried++
			specAt := func(values map[string]int64) (*ir.Spec, error) { return spec(values["n"]) }
			k, err := testBuilder(t).BuildSymbolic(context.Background(), specAt, []loops.Size{{Name: "n", A: v, B: v + 3}})
			if err != nil {
				t.Logf("%s (gradient %v): no symbolic kernel: %v", o.Name, grad, err)
				continue
			}
			built++
			for _, n := range []int64{1, v + 1, 2*v + 5} {
				s, err := spec(n)
				if _, fwdErr := at(n).Spec(ir.Float64); grad && fwdErr != nil {
					continue // a gradient op runs only where its forward op does
				}
				_, guarded := k.Shapes([]int64{n})
				switch {
				case err != nil && guarded == nil:
					t.Errorf("%s (gradient %v) at %d: the kernel's launch guards %v accept a size the op refuses: %v", o.Name, grad, n, k.Guards(), err)
				case err == nil && guarded != nil:
					t.Logf("%s (gradient %v) at %d: %v", o.Name, grad, n, guarded)
				case err == nil:
					runSized(t, k, s, []int64{n})
				}
			}
			k.Close()
		}
	}
	t.Logf("%d symbolic kernels built of %d ops and gradient ops", built, tried)
}

// TestSymbolicCUDAEmulated renders each case's kernel with symbolic
// extents as CUDA (pipeline.Symbolic for the GPU: grid-stride loops to the
// sizes, which the kernels take as parameters) and runs it on the host
// emulator at sizes it was not lowered at, against the interpreter.
func TestSymbolicCUDAEmulated(t *testing.T) {
	for _, dt := range []ir.DType{ir.Float64} { // float32's rounding is the C tests'
		for _, c := range symbolicCases {
			t.Run(fmt.Sprintf("%s_%s", c.name, dt), func(t *testing.T) {
				a, b := []int64{8, 5}, []int64{12, 3}
				n := nsizes(c)
				fn, err := pipeline.Symbolic(c.at(dt), sizesOf(a[:n], b[:n]), pipeline.GPU)
				if err != nil {
					t.Fatal(err)
				}
				mod, err := cgen.RenderCUDA(fn, "nf_sym")
				if err != nil {
					t.Fatal(err)
				}
				k, err := cudaemu.Compile(context.Background(), c.spec(t, dt, a[:n]), mod, t.TempDir())
				if err != nil {
					t.Fatal(err)
				}
				for _, s := range [][]int64{{1, 1}, {2, 7}, {33, 9}} {
					runSymbolicEmulated(t, k, c.spec(t, dt, s[:n]), mod, s[:n])
				}
			})
		}
	}
}

// runSymbolicEmulated runs k, mod (a kernel with symbolic extents)
// compiled for the emulator, at sizes s, against the interpreter's run of
// spec (the op specialized at s).
func runSymbolicEmulated(t *testing.T, k *cudaemu.Kernel, spec *ir.Spec, mod *cgen.CUDAModule, s []int64) {
	t.Helper()
	inputs := hostbuf.RandomInputs(spec, false, uint64(s[0]))
	want, err := interp.Run(spec, inputs)
	if err != nil {
		t.Fatal(err)
	}
	bufs := hostbuf.New(spec, inputs)
	defer bufs.Free()
	bufs.Poison(spec)
	values := slices.Clone(s)
	var pin runtime.Pinner
	pin.Pin(&values[0])
	defer pin.Unpin()
	if err := k.Run(append(slices.Clone(bufs.Ptr), unsafe.Pointer(&values[0]))); err != nil {
		t.Fatal(err)
	}
	compareWritten(t, spec, bufs, want, tolerance(spec.DType), mod.Source)
}

// TestSymbolicGuards: an access that is in bounds only for some sizes
// (Z[i + 2], with Z of its own size) gets a launch guard; the kernel runs
// wherever the guard holds and refuses a launch that breaks it.
func TestSymbolicGuards(t *testing.T) {
	c := symbolicCase{"window", "Y[i] = X[i] + Z[i + 2]", func(s []int64) [][]int64 { return [][]int64{{s[0]}, {s[1]}} }}
	k, err := buildSymbolic(t, c, ir.Float32, []int64{8, 13}, []int64{12, 15})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	if g := fmt.Sprint(k.Guards()); g != "[-$s0 + $s1 - 2 >= 0]" {
		t.Errorf("guards %s", g)
	}
	for _, s := range [][]int64{{1, 3}, {5, 9}, {17, 19}, {33, 40}} {
		runSymbolic(t, k, c, ir.Float32, s)
	}
	if _, err := k.Shapes([]int64{9, 10}); err == nil || !strings.Contains(err.Error(), "launch guard") {
		t.Errorf("sizes 9, 10 (Z too short): %v", err)
	}
}

// TestSymbolicCandidates: every schedule a size bucket's kernel is picked
// among (pipeline.SymbolicPlan.Candidates) that lowers gives a kernel
// that computes each case right at sizes that divide no vector width;
// the defaults always lower, and some cases have other candidates.
func TestSymbolicCandidates(t *testing.T) {
	others := 0
	for _, c := range symbolicCases {
		t.Run(c.name, func(t *testing.T) {
			a, b := []int64{8, 5}, []int64{12, 3}
			plan, err := pipeline.PrepareSymbolic(c.at(ir.Float32), sizesOf(a[:nsizes(c)], b[:nsizes(c)]), pipeline.CPU)
			if err != nil {
				t.Fatal(err)
			}
			for i, scheds := range plan.Candidates() {
				fn, err := plan.Lower(scheds)
				if err != nil {
					if i == 0 {
						t.Fatalf("the defaults: %v", err)
					}
					t.Logf("candidate %d does not lower: %v", i, err)
					continue
				}
				others += min(i, 1)
				k, err := testBuilder(t).BuildFunc(context.Background(), fn)
				if err != nil {
					t.Fatalf("candidate %d: %v", i, err)
				}
				for _, s := range [][]int64{{1, 1}, {17, 3}, {33, 9}} {
					runSymbolic(t, k, c, ir.Float32, s[:nsizes(c)])
				}
				_ = k.Close()
			}
		})
	}
	if others < len(symbolicCases) {
		t.Errorf("%d candidates besides the defaults lowered over %d cases", others, len(symbolicCases))
	}
}

// TestSymbolicCUDACompiles builds each case's CUDA kernel with symbolic
// extents through the Builder (BuildSymbolicCUDA: NVRTC, sm_90), in both
// float dtypes: every function of the module takes the sizes after the
// tensors, and the image has every launch's entry (the emulator runs the
// same source, TestSymbolicCUDAEmulated).
func TestSymbolicCUDACompiles(t *testing.T) {
	lib := nvrtctest.Library(t)
	b, err := NewBuilder(Options{CacheDir: t.TempDir(), Version: "test", NVRTCDirs: []string{lib.Path}})
	if err != nil {
		t.Fatal(err)
	}
	for _, dt := range []ir.DType{ir.Float32, ir.Float64} {
		for _, c := range symbolicCases {
			t.Run(fmt.Sprintf("%s_%s", c.name, dt), func(t *testing.T) {
				a, bv := []int64{8, 5}, []int64{12, 3}
				n := nsizes(c)
				k, err := b.BuildSymbolicCUDA(context.Background(), c.at(dt), sizesOf(a[:n], bv[:n]), 90)
				if err != nil {
					t.Fatal(err)
				}
				if len(k.Func().Sizes) != n || len(k.Launches()) == 0 {
					t.Fatalf("sizes %v, launches %v", k.Func().Sizes, k.Launches())
				}
				for _, l := range k.Launches() {
					if !bytes.Contains(k.Image(), []byte(l.Entry)) {
						t.Errorf("the image lacks entry %s", l.Entry)
					}
				}
				if !strings.Contains(k.Source(), "long long nf_size_s0") {
					t.Errorf("the functions do not take the size s0:\n%s", k.Source())
				}
			})
		}
	}
}
