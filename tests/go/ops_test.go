package gotests

import (
	"fmt"
	"math"
	"math/rand"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"testing"
	"unsafe"

	"github.com/neoflow/neoflow/core/interp"
	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/loops"
	"github.com/neoflow/neoflow/core/parse"
	"github.com/neoflow/neoflow/core/sema"
	"github.com/neoflow/neoflow/kernels"
	"github.com/neoflow/neoflow/kernels/cache"
	"github.com/neoflow/neoflow/torchbridge"
)

// opCase is one of the spine's operators (tests/python/ops_table.py, "test"
// sizes), with the shapes every written tensor must get.
type opCase struct {
	name   string
	desc   string
	src    string
	inputs [][]int64
	sizes  map[string]int64
	consts map[string]parse.ConstValue
	// want maps every output and temporary to its expected shape.
	want map[string][]int64
}

func ints(v ...int64) []int64 { return v }

func intConst(v int64) parse.ConstValue     { return parse.ConstValue{Int: v} }
func floatConst(v float64) parse.ConstValue { return parse.ConstValue{IsFloat: true, Float: v} }

var opCases = []opCase{
	{
		name: "matmul", desc: "matrix product 7x9 @ 9x11",
		src:    "C[i,j] += A[i,k] * B[k,j]",
		inputs: [][]int64{{7, 9}, {9, 11}},
		want:   map[string][]int64{"C": ints(7, 11)},
	},
	{
		name: "bmm", desc: "batched matrix product 3x(5x6 @ 6x4)",
		src:    "C[b,i,j] += A[b,i,k] * B[b,k,j]",
		inputs: [][]int64{{3, 5, 6}, {3, 6, 4}},
		want:   map[string][]int64{"C": ints(3, 5, 4)},
	},
	{
		// Output extent per spatial dim: (in - D*(3-1) - 1)/S + 1, so 11 -> 4, 10 -> 3.
		name: "conv2d_stride_dilation", desc: "conv2d, stride 2, dilation 2, 3x3 kernel on 11x10",
		src:    "Y[n,k,p,q] += X[n,c,p*S+r*D,q*S+s*D] * W[k,c,r,s]",
		inputs: [][]int64{{2, 3, 11, 10}, {4, 3, 3, 3}},
		consts: map[string]parse.ConstValue{"S": intConst(2), "D": intConst(2)},
		want:   map[string][]int64{"Y": ints(2, 4, 4, 3)},
	},
	{
		name: "conv2d_padding_where", desc: "conv2d, zero padding 1 by where(), 3x3 kernel on 8x8",
		src:    "Y[n,k,p,q] += where(p+r-1 >= 0 && p+r-1 < H && q+s-1 >= 0 && q+s-1 < H, X[n,c,p+r-1,q+s-1], 0.0) * W[k,c,r,s]",
		inputs: [][]int64{{2, 3, 8, 8}, {4, 3, 3, 3}},
		sizes:  map[string]int64{"p": 8, "q": 8},
		consts: map[string]parse.ConstValue{"H": intConst(8)},
		want:   map[string][]int64{"Y": ints(2, 4, 8, 8)},
	},
	{
		name: "depthwise_conv", desc: "depthwise conv2d, 3x3 kernel on 9x8",
		src:    "Y[n,c,p,q] += X[n,c,p+r,q+s] * W[c,r,s]",
		inputs: [][]int64{{2, 4, 9, 8}, {4, 3, 3}},
		want:   map[string][]int64{"Y": ints(2, 4, 7, 6)},
	},
	{
		name: "capsule_conv", desc: "capsule conv2d, stride 2, 3x3 kernel, 4x4 pose matrices",
		src:    "C[b,k,p,q,i,j] += A[b,c,p*2+r,q*2+s,i,t] * B[k,c,r,s,t,j]",
		inputs: [][]int64{{1, 2, 7, 7, 4, 4}, {3, 2, 3, 3, 4, 4}},
		want:   map[string][]int64{"C": ints(1, 3, 3, 3, 4, 4)},
	},
	{
		name: "depth2space", desc: "depth to space, block 2 (pixel shuffle)",
		src:    "Y[n,c,h,w] = X[n, c*4 + (h%2)*2 + w%2, h/2, w/2]",
		inputs: [][]int64{{2, 8, 3, 5}},
		want:   map[string][]int64{"Y": ints(2, 2, 6, 10)},
	},
	{
		name: "space2depth", desc: "space to depth, block 2 (pixel unshuffle)",
		src:    "Y[n,c,h,w] = X[n, c/4, h*2 + (c%4)/2, w*2 + c%2]",
		inputs: [][]int64{{2, 3, 6, 4}},
		want:   map[string][]int64{"Y": ints(2, 12, 3, 2)},
	},
	{
		name: "channel_shuffle", desc: "channel shuffle, 2 groups of 3 channels",
		src:    "Y[n,c,h,w] = X[n, (c%G)*K + c/G, h, w]",
		inputs: [][]int64{{2, 6, 3, 4}},
		consts: map[string]parse.ConstValue{"G": intConst(2), "K": intConst(3)},
		want:   map[string][]int64{"Y": ints(2, 6, 3, 4)},
	},
	{
		name: "concat", desc: "concatenation of 3x5 and 4x5 along rows by where()",
		src:    "Y[i,j] = where(i < N, A[i,j], B[i-N,j])",
		inputs: [][]int64{{3, 5}, {4, 5}},
		sizes:  map[string]int64{"i": 7},
		consts: map[string]parse.ConstValue{"N": intConst(3)},
		want:   map[string][]int64{"Y": ints(7, 5)},
	},
	{
		name: "max_pool", desc: "2x2 max pooling, stride 2, on 8x9",
		src:    "Y[n,c,p,q] max= X[n,c,p*2+r,q*2+s]",
		inputs: [][]int64{{2, 3, 8, 9}},
		sizes:  map[string]int64{"r": 2, "s": 2},
		want:   map[string][]int64{"Y": ints(2, 3, 4, 4)},
	},
	{
		name: "avg_pool", desc: "2x2 average pooling, stride 2, on 8x9",
		src:    "Y[n,c,p,q] += X[n,c,p*2+r,q*2+s] * 0.25",
		inputs: [][]int64{{2, 3, 8, 9}},
		sizes:  map[string]int64{"r": 2, "s": 2},
		want:   map[string][]int64{"Y": ints(2, 3, 4, 4)},
	},
	{
		name: "softmax", desc: "row softmax in 4 statements (max, exp, sum, divide)",
		src:    "M[b] max= X[b,j]\nE[b,j] = exp(X[b,j] - M[b])\nS[b] += E[b,j]\nY[b,j] = E[b,j] / S[b]",
		inputs: [][]int64{{5, 7}},
		want:   map[string][]int64{"M": ints(5), "E": ints(5, 7), "S": ints(5), "Y": ints(5, 7)},
	},
	{
		name: "layer_norm", desc: "layer norm over the last dim, float constant N",
		src: "Mu[b] += X[b,j] / N\n" +
			"Var[b] += (X[b,j] - Mu[b]) * (X[b,j] - Mu[b]) / N\n" +
			"Y[b,j] = (X[b,j] - Mu[b]) * rsqrt(Var[b] + 1e-5) * G[j] + Bt[j]",
		inputs: [][]int64{{5, 7}, {7}, {7}},
		consts: map[string]parse.ConstValue{"N": floatConst(7)},
		want:   map[string][]int64{"Mu": ints(5), "Var": ints(5), "Y": ints(5, 7)},
	},
	{
		name: "milstm_gate", desc: "multiplicative-integration LSTM gate in 3 statements",
		src:    "WX[b,j] += W[j,k] * X[b,k]\nUH[b,j] += U[j,k] * H[b,k]\nY[b,j] = tanh(WX[b,j] * UH[b,j] + Bias[j])",
		inputs: [][]int64{{6, 5}, {3, 5}, {6, 4}, {3, 4}, {6}},
		want:   map[string][]int64{"WX": ints(3, 6), "UH": ints(3, 6), "Y": ints(3, 6)},
	},
	{
		name: "activations", desc: "relu, sigmoid, tanh, exp, abs and erf combined elementwise",
		src:    "Y[i,j] = relu(X[i,j]) + sigmoid(X[i,j]) * tanh(X[i,j]) - exp(-abs(X[i,j])) + erf(X[i,j])",
		inputs: [][]int64{{5, 7}},
		want:   map[string][]int64{"Y": ints(5, 7)},
	},
	{
		name: "broadcast_add", desc: "5x7 matrix plus a broadcast row of 7",
		src:    "Y[i,j] = A[i,j] + B[j]",
		inputs: [][]int64{{5, 7}, {7}},
		want:   map[string][]int64{"Y": ints(5, 7)},
	},
}

var dtypes = []ir.DType{ir.Float32, ir.Float64}

// cacheDir is this run's kernel cache, shared by every Builder of the run;
// builder is the Builder most tests use.
var (
	cacheDir string
	builder  *kernels.Builder
	noCC     bool
)

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	loops.MinParallelWork = 0 // small test shapes exercise the parallel code
	dir, err := os.MkdirTemp("", "neoflow-gotests-*")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	cacheDir = dir
	if _, err := exec.LookPath("cc"); err != nil {
		noCC = true
	} else if builder, err = newBuilder(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// newBuilder opens a Builder on this run's cache with the default compiler.
func newBuilder() (*kernels.Builder, error) {
	return kernels.NewBuilder(kernels.Options{CacheDir: cacheDir, Version: torchbridge.Version})
}

func needCC(t *testing.T) {
	t.Helper()
	if noCC {
		t.Fatal("no C compiler (cc) on PATH: the kernels need one")
	}
}

func (c opCase) spec(dt ir.DType) (*ir.Spec, error) {
	op, err := parse.Parse(c.src, parse.Options{Name: c.name, Consts: c.consts})
	if err != nil {
		return nil, fmt.Errorf("parse: %w", err)
	}
	spec, err := sema.Specialize(op, dt, c.inputs, c.sizes)
	if err != nil {
		return nil, fmt.Errorf("specialize: %w", err)
	}
	return spec, nil
}

// randomInputs draws standard normal inputs from a fixed seed, rounded to
// dt so that the kernel and the interpreter see the same values.
func randomInputs(spec *ir.Spec, seed int64) [][]float64 {
	rng := rand.New(rand.NewSource(seed))
	var out [][]float64
	for _, td := range spec.InputsDecl() {
		d := make([]float64, td.Elems())
		for i := range d {
			v := rng.NormFloat64()
			if spec.DType == ir.Float32 {
				v = float64(float32(v))
			}
			d[i] = v
		}
		out = append(out, d)
	}
	return out
}

// launch runs k on inputs in Go-allocated buffers of the spec's dtype and
// returns every tensor of spec.Tensors as float64. Outputs and temporaries
// start as NaN so that an element the kernel skips shows up.
func launch(k *kernels.Kernel, spec *ir.Spec, inputs [][]float64) ([][]float64, error) {
	var pin runtime.Pinner
	defer pin.Unpin()
	ptrs := make([]unsafe.Pointer, len(spec.Tensors))
	f32 := make([][]float32, len(spec.Tensors))
	f64 := make([][]float64, len(spec.Tensors))
	in := 0
	for i, td := range spec.Tensors {
		n := max(td.Elems(), 1)
		var src []float64
		if td.Role == ir.RoleInput {
			src = inputs[in]
			in++
		}
		if spec.DType == ir.Float32 {
			d := make([]float32, n)
			for j := range d {
				d[j] = float32(math.NaN())
			}
			for j, v := range src {
				d[j] = float32(v)
			}
			f32[i] = d
			ptrs[i] = unsafe.Pointer(&d[0])
		} else {
			d := make([]float64, n)
			for j := range d {
				d[j] = math.NaN()
			}
			copy(d, src)
			f64[i] = d
			ptrs[i] = unsafe.Pointer(&d[0])
		}
		pin.Pin(ptrs[i])
	}
	if err := k.Launch(ptrs, 2); err != nil {
		return nil, err
	}
	out := make([][]float64, len(spec.Tensors))
	for i, td := range spec.Tensors {
		if spec.DType == ir.Float64 {
			out[i] = f64[i][:td.Elems()]
			continue
		}
		out[i] = make([]float64, td.Elems())
		for j, v := range f32[i][:td.Elems()] {
			out[i][j] = float64(v)
		}
	}
	return out, nil
}

func tolerance(dt ir.DType) float64 {
	if dt == ir.Float32 {
		return 1e-4
	}
	return 1e-9
}

// within reports |got-want| <= tol*(1+|want|); NaN matches only NaN and an
// infinity only itself.
func within(got, want, tol float64) bool {
	if math.IsNaN(got) || math.IsNaN(want) {
		return math.IsNaN(got) && math.IsNaN(want)
	}
	if math.IsInf(want, 0) {
		return got == want
	}
	return math.Abs(got-want) <= tol*(1+math.Abs(want))
}

// unravel turns a flat row-major offset into a multi-index.
func unravel(flat int, shape []int64) []int64 {
	idx := make([]int64, len(shape))
	for d := len(shape) - 1; d >= 0; d-- {
		idx[d] = int64(flat) % shape[d]
		flat /= int(shape[d])
	}
	return idx
}

// TestOpsMatchInterpreter compiles every spine operator to a C kernel in
// float32 and float64 and compares every output and temporary with the
// reference interpreter, and every written tensor's shape with the table.
func TestOpsMatchInterpreter(t *testing.T) {
	needCC(t)
	for ci, c := range opCases {
		for _, dt := range dtypes {
			t.Run(c.name+"/"+dt.String(), func(t *testing.T) {
				spec, err := c.spec(dt)
				if err != nil {
					t.Fatalf("%s (%s): %v", c.name, c.desc, err)
				}
				written := 0
				for _, td := range spec.Tensors {
					if td.Role == ir.RoleInput {
						continue
					}
					written++
					want, ok := c.want[td.Name]
					if !ok {
						t.Errorf("%s (%s): %s %s has shape %v, which the table does not list", c.name, c.desc, td.Role, td.Name, td.Shape)
						continue
					}
					if !slices.Equal(td.Shape, want) {
						t.Errorf("%s (%s): %s %s shape: got %v want %v", c.name, c.desc, td.Role, td.Name, td.Shape, want)
					}
				}
				if written != len(c.want) {
					t.Errorf("%s (%s): got %d outputs and temporaries, want %d (%v)", c.name, c.desc, written, len(c.want), c.want)
				}
				if t.Failed() {
					return
				}

				inputs := randomInputs(spec, int64(1000+ci))
				want, err := interp.Run(spec, inputs)
				if err != nil {
					t.Fatalf("%s (%s): interpreter: %v", c.name, c.desc, err)
				}
				k, err := builder.Build(spec)
				if err != nil {
					t.Fatalf("%s (%s): build: %v", c.name, c.desc, err)
				}
				got, err := launch(k, spec, inputs)
				if err != nil {
					t.Fatalf("%s (%s): launch: %v", c.name, c.desc, err)
				}
				tol := tolerance(dt)
				for i, td := range spec.Tensors {
					if td.Role == ir.RoleInput {
						continue
					}
					if len(want[i]) != len(got[i]) {
						t.Errorf("%s %s %s: got %d elements want %d", c.name, dt, td.Name, len(got[i]), len(want[i]))
						continue
					}
					bad := 0
					for j := range want[i] {
						if within(got[i][j], want[i][j], tol) {
							continue
						}
						if bad < 3 {
							t.Errorf("%s (%s) %s %s %s%v: got %v want %v (tol %g)",
								c.name, c.desc, dt, td.Role, td.Name, unravel(j, td.Shape), got[i][j], want[i][j], tol)
						}
						bad++
					}
					if bad > 0 {
						t.Errorf("%s %s %s: %d of %d elements differ", c.name, dt, td.Name, bad, len(want[i]))
					}
				}
			})
		}
	}
}

// TestSecondBuilderHitsCache builds every op of the table with the shared
// Builder, then opens a second Builder on the same cache directory: every
// kernel must come from the cache.
func TestSecondBuilderHitsCache(t *testing.T) {
	needCC(t)
	specs := make(map[string]*ir.Spec)
	for _, c := range opCases {
		for _, dt := range dtypes {
			spec, err := c.spec(dt)
			if err != nil {
				t.Fatalf("%s (%s): %v", c.name, c.desc, err)
			}
			if _, err := builder.Build(spec); err != nil {
				t.Fatalf("%s %s: first build: %v", c.name, dt, err)
			}
			specs[c.name+"/"+dt.String()] = spec
		}
	}
	second, err := newBuilder()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range opCases {
		for _, dt := range dtypes {
			k, err := second.Build(specs[c.name+"/"+dt.String()])
			if err != nil {
				t.Fatalf("%s %s: second build: %v", c.name, dt, err)
			}
			if got := k.Outcome(); got != cache.Hit {
				t.Errorf("%s (%s) %s: second Builder outcome: got %v want %v", c.name, c.desc, dt, got, cache.Hit)
			}
		}
	}
	st := second.Stats()
	if want := int64(len(opCases) * len(dtypes)); st.Hits != want || st.Misses != 0 || st.Rebuilt != 0 {
		t.Errorf("second Builder stats: got %+v want %d hits and nothing else", st, want)
	}
}
