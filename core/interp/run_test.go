package interp

import (
	"math"
	"strings"
	"testing"

	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/parse"
	"github.com/neoflow/neoflow/core/sema"
)

// specialize parses and specializes src, failing the test on error.
func specialize(t *testing.T, src string, dtype ir.DType, shapes [][]int64, sizes map[string]int64) *ir.Spec {
	t.Helper()
	op, err := parse.Parse(src, parse.Options{})
	if err != nil {
		t.Fatalf("parse %q: %v", src, err)
	}
	spec, err := sema.Specialize(op, dtype, shapes, sizes)
	if err != nil {
		t.Fatalf("specialize %q: %v", src, err)
	}
	return spec
}

// seq returns n values start, start+step, ...
func seq(n int, start, step float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = start + float64(i)*step
	}
	return out
}

func close(a, b float64) bool {
	return math.Abs(a-b) <= 1e-12*math.Max(1, math.Abs(b)) || (math.IsNaN(a) && math.IsNaN(b)) || a == b
}

func checkData(t *testing.T, what string, got, want []float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: got %d values, want %d", what, len(got), len(want))
	}
	for i := range got {
		if !close(got[i], want[i]) {
			t.Errorf("%s[%d]: got %v, want %v\n got  %v\n want %v", what, i, got[i], want[i], got, want)
			return
		}
	}
}

// TestRunSmall runs small ops and compares the last tensor (the first
// output for single-output ops) with hand-computed data.
func TestRunSmall(t *testing.T) {
	tests := []struct {
		desc   string
		src    string
		shapes [][]int64
		sizes  map[string]int64
		inputs [][]float64
		tensor string // the tensor to compare; "Y" by default
		want   []float64
	}{
		{
			desc:   "sum reduction",
			src:    "Y[i] += A[i, j]",
			shapes: [][]int64{{2, 3}},
			inputs: [][]float64{{1, 2, 3, 4, 5, 6}},
			want:   []float64{6, 15},
		},
		{
			desc:   "product reduction",
			src:    "Y[i] *= A[i, j]",
			shapes: [][]int64{{2, 3}},
			inputs: [][]float64{{1, 2, 3, 4, 5, 6}},
			want:   []float64{6, 120},
		},
		{
			desc:   "max reduction",
			src:    "Y[i] max= A[i, j]",
			shapes: [][]int64{{2, 3}},
			inputs: [][]float64{{1, -2, 3, -4, -5, -6}},
			want:   []float64{3, -4},
		},
		{
			desc:   "min reduction",
			src:    "Y[i] min= A[i, j]",
			shapes: [][]int64{{2, 3}},
			inputs: [][]float64{{1, -2, 3, -4, -5, -6}},
			want:   []float64{-2, -6},
		},
		{
			desc:   "assignment",
			src:    "Y[j, i] = A[i, j]",
			shapes: [][]int64{{2, 3}},
			inputs: [][]float64{{1, 2, 3, 4, 5, 6}},
			want:   []float64{1, 4, 2, 5, 3, 6},
		},
		{
			desc:   "reduction without reduction axes",
			src:    "Y[i] += A[i] * 2.0",
			shapes: [][]int64{{3}},
			inputs: [][]float64{{1, 2, 3}},
			want:   []float64{2, 4, 6},
		},
		{
			desc:   "scalar output",
			src:    "S[] += X[i]",
			shapes: [][]int64{{4}},
			inputs: [][]float64{{1, 2, 3, 4}},
			tensor: "S",
			want:   []float64{10},
		},
		{
			desc:   "broadcasting add",
			src:    "Y[i,j] = A[i,j] + B[j]",
			shapes: [][]int64{{2, 3}, {3}},
			inputs: [][]float64{{1, 2, 3, 4, 5, 6}, {10, 20, 30}},
			want:   []float64{11, 22, 33, 14, 25, 36},
		},
		{
			desc:  "index floor division on negative values",
			src:   "Y[i] = (i - 5) / 2",
			sizes: map[string]int64{"i": 10},
			want:  []float64{-3, -2, -2, -1, -1, 0, 0, 1, 1, 2},
		},
		{
			desc:  "index floor modulo on negative values",
			src:   "Y[i] = (i - 5) % 3",
			sizes: map[string]int64{"i": 7},
			want:  []float64{1, 2, 0, 1, 2, 0, 1},
		},
		{
			desc:   "value floor modulo",
			src:    "Y[i] = A[i] % 3.0",
			shapes: [][]int64{{4}},
			inputs: [][]float64{{-7, 7, -0.5, 4.5}},
			want:   []float64{2, 1, 2.5, 1.5},
		},
		{
			desc:   "value modulo by a negative divisor",
			src:    "Y[i] = A[i] % -3.0",
			shapes: [][]int64{{2}},
			inputs: [][]float64{{7, -7}},
			want:   []float64{-2, -1},
		},
		{
			desc:   "value true division",
			src:    "Y[i] = A[i] / 2",
			shapes: [][]int64{{2}},
			inputs: [][]float64{{-7, 3}},
			want:   []float64{-3.5, 1.5},
		},
		{
			desc:   "index promoted to value",
			src:    "Y[i] = A[i] + i / 2 * 0.5",
			shapes: [][]int64{{4}},
			inputs: [][]float64{{0, 0, 0, 0}},
			want:   []float64{0, 0, 0.5, 0.5},
		},
		{
			desc:   "where is lazy",
			src:    "Y[i] = where(i < 4, A[i], B[i - 4])",
			shapes: [][]int64{{4}, {3}},
			sizes:  map[string]int64{"i": 7},
			inputs: [][]float64{{1, 2, 3, 4}, {5, 6, 7}},
			want:   []float64{1, 2, 3, 4, 5, 6, 7},
		},
		{
			desc:   "padding guard",
			src:    "Y[i] += where(i+r-1 >= 0 && i+r-1 < 4, X[i+r-1], 0.0) * W[r]",
			shapes: [][]int64{{4}, {3}},
			sizes:  map[string]int64{"i": 4},
			inputs: [][]float64{{1, 2, 3, 4}, {1, 10, 100}},
			want:   []float64{210, 321, 432, 43},
		},
		{
			desc:   "value comparison and logic",
			src:    "Y[i] = where(A[i] > i && !(i == 2) || A[i] < -5.0, 1.0, 0.0)",
			shapes: [][]int64{{4}},
			inputs: [][]float64{{1, 0, 9, -9}},
			want:   []float64{1, 0, 0, 1},
		},
		{
			desc:   "math functions",
			src:    "Y[i] = exp(A[i]) + log(A[i]) + sqrt(A[i]) + rsqrt(A[i]) + tanh(A[i]) + sigmoid(A[i]) + relu(-A[i]) + erf(A[i]) + pow(A[i], 3.0) + abs(-A[i]) + min(A[i], 1.5) + max(A[i], 1.5)",
			shapes: [][]int64{{2}},
			inputs: [][]float64{{1, 2}},
			want: func() []float64 {
				var out []float64
				for _, x := range []float64{1, 2} {
					out = append(out, math.Exp(x)+math.Log(x)+math.Sqrt(x)+1/math.Sqrt(x)+math.Tanh(x)+1/(1+math.Exp(-x))+0+
						math.Erf(x)+x*x*x+x+math.Min(x, 1.5)+math.Max(x, 1.5))
				}
				return out
			}(),
		},
		{
			desc:   "relu of positive and negative",
			src:    "Y[i] = relu(A[i])",
			shapes: [][]int64{{3}},
			inputs: [][]float64{{-1, 0, 2}},
			want:   []float64{0, 0, 2},
		},
		{
			desc:   "space to depth",
			src:    "Y[n, c, h, w] = X[n, c/4, h*2 + (c%4)/2, w*2 + c%2]",
			shapes: [][]int64{{1, 1, 2, 2}},
			inputs: [][]float64{{1, 2, 3, 4}},
			want:   []float64{1, 2, 3, 4},
		},
		{
			desc:   "channel shuffle",
			src:    "Y[n, c, h, w] = X[n, (c%2)*2 + c/2, h, w]",
			shapes: [][]int64{{1, 4, 1, 1}},
			inputs: [][]float64{{10, 20, 30, 40}},
			want:   []float64{10, 30, 20, 40},
		},
		{
			desc:   "depth to space",
			src:    "Y[n,c,h,w] = X[n, c*4 + (h%2)*2 + w%2, h/2, w/2]",
			shapes: [][]int64{{1, 4, 1, 1}},
			inputs: [][]float64{{1, 2, 3, 4}},
			want:   []float64{1, 2, 3, 4},
		},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			spec := specialize(t, tc.src, ir.Float64, tc.shapes, tc.sizes)
			out, err := Run(spec, tc.inputs)
			if err != nil {
				t.Fatal(err)
			}
			name := tc.tensor
			if name == "" {
				name = "Y"
			}
			for i, d := range spec.Tensors {
				if d.Name == name {
					checkData(t, name, out[i], tc.want)
				}
			}
		})
	}
}

func TestRunIndexFunctions(t *testing.T) {
	spec := specialize(t, "Y[i] = A[min(i, 2)] * 100 + max(i - 2, 0) * 10 + abs(i - 1) + B[i]", ir.Float64, [][]int64{{3}, {5}}, nil)
	out, err := Run(spec, [][]float64{{1, 2, 3}, {0, 0, 0, 0, 0}})
	if err != nil {
		t.Fatal(err)
	}
	checkData(t, "Y", out[2], []float64{101, 200, 301, 312, 323})
}

func TestRunMatmul(t *testing.T) {
	const m, k, n = 3, 4, 5
	spec := specialize(t, "Y[i,j] += A[i,k] * B[k,j]", ir.Float64, [][]int64{{m, k}, {k, n}}, nil)
	a, b := seq(m*k, -1, 0.25), seq(k*n, 2, -0.5)
	out, err := Run(spec, [][]float64{a, b})
	if err != nil {
		t.Fatal(err)
	}
	want := make([]float64, m*n)
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			for l := 0; l < k; l++ {
				want[i*n+j] += a[i*k+l] * b[l*n+j]
			}
		}
	}
	checkData(t, "A", out[0], a)
	checkData(t, "B", out[1], b)
	checkData(t, "Y", out[2], want)
}

func TestRunConv(t *testing.T) {
	// Stride 2, dilation 2, and zero padding 1 on a 2-channel 7x6 input.
	const N, C, H, W, K, R, S = 2, 2, 7, 6, 3, 2, 3
	const P, Q = 3, 3
	src := "Y[n,k,p,q] += where(p*2+r*2-1 >= 0 && p*2+r*2-1 < 7 && q*2+s*2-1 >= 0 && q*2+s*2-1 < 6, " +
		"X[n,c,p*2+r*2-1,q*2+s*2-1], 0.0) * Wt[k,c,r,s]"
	spec := specialize(t, src, ir.Float64, [][]int64{{N, C, H, W}, {K, C, R, S}}, map[string]int64{"p": P, "q": Q})
	x, w := seq(N*C*H*W, -3, 0.125), seq(K*C*R*S, 1, -0.0625)
	out, err := Run(spec, [][]float64{x, w})
	if err != nil {
		t.Fatal(err)
	}
	want := make([]float64, N*K*P*Q)
	for n := 0; n < N; n++ {
		for k := 0; k < K; k++ {
			for p := 0; p < P; p++ {
				for q := 0; q < Q; q++ {
					sum := 0.0
					for c := 0; c < C; c++ {
						for r := 0; r < R; r++ {
							for s := 0; s < S; s++ {
								h, v := p*2+r*2-1, q*2+s*2-1
								if h < 0 || h >= H || v < 0 || v >= W {
									continue
								}
								sum += x[((n*C+c)*H+h)*W+v] * w[((k*C+c)*R+r)*S+s]
							}
						}
					}
					want[((n*K+k)*P+p)*Q+q] = sum
				}
			}
		}
	}
	checkData(t, "Y", out[2], want)
}

func TestRunSoftmax(t *testing.T) {
	src := "M[i] max= X[i,j]\nE[i,j] = exp(X[i,j] - M[i])\nS[i] += E[i,j]\nY[i,j] = E[i,j] / S[i]"
	const rows, cols = 3, 4
	spec := specialize(t, src, ir.Float64, [][]int64{{rows, cols}}, nil)
	x := seq(rows*cols, -2, 0.7)
	out, err := Run(spec, [][]float64{x})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 5 {
		t.Fatalf("got %d tensors, want 5 (X, Y, M, E, S)", len(out))
	}
	want := make([]float64, rows*cols)
	wantMax := make([]float64, rows)
	for i := 0; i < rows; i++ {
		row := x[i*cols : (i+1)*cols]
		mx := math.Inf(-1)
		for _, v := range row {
			mx = math.Max(mx, v)
		}
		wantMax[i] = mx
		sum := 0.0
		for _, v := range row {
			sum += math.Exp(v - mx)
		}
		for j, v := range row {
			want[i*cols+j] = math.Exp(v-mx) / sum
		}
	}
	checkData(t, "Y", out[1], want)
	checkData(t, "M", out[2], wantMax)
}

func TestRunFloat32Rounding(t *testing.T) {
	spec := specialize(t, "T[i] = A[i] / 3.0\nY[i] = T[i] * 3.0 - A[i]", ir.Float32, [][]int64{{2}}, nil)
	in := []float64{1, 0.1}
	out, err := Run(spec, [][]float64{in})
	if err != nil {
		t.Fatal(err)
	}
	a := []float64{float64(float32(1)), float64(float32(0.1))}
	checkData(t, "A", out[0], a)
	var tmp, y []float64
	for _, v := range a {
		tv := float64(float32(v / 3))
		tmp = append(tmp, tv)
		y = append(y, float64(float32(tv*3-v)))
	}
	checkData(t, "Y", out[1], y)
	checkData(t, "T", out[2], tmp)
	if out[0][1] == 0.1 {
		t.Errorf("got input 0.1 stored exactly, want it rounded to float32")
	}
}

func TestRunCopiesInputs(t *testing.T) {
	spec := specialize(t, "Y[i] = A[i]", ir.Float64, [][]int64{{2}}, nil)
	in := []float64{1, 2}
	out, err := Run(spec, [][]float64{in})
	if err != nil {
		t.Fatal(err)
	}
	out[0][0] = 99
	if in[0] != 1 {
		t.Errorf("got caller's input %v after changing the result, want it untouched", in[0])
	}
}

func TestRunErrors(t *testing.T) {
	spec := specialize(t, "Y[i] = A[i]", ir.Float64, [][]int64{{3}}, nil)
	// A corrupted spec: Y and i claim 5 elements, A has 3.
	bad := specialize(t, "Y[i] = A[i]", ir.Float64, [][]int64{{3}}, nil)
	bad.Tensors[1].Shape = []int64{5}
	bad.Stmts[0].Spatial[0].Extent = 5
	tests := []struct {
		desc   string
		spec   *ir.Spec
		inputs [][]float64
		want   string
	}{
		{"nil spec", nil, nil, "interp: nil spec"},
		{"too few inputs", spec, nil, "spec has more inputs than the 0 given"},
		{"too many inputs", spec, [][]float64{{1, 2, 3}, {1}}, "spec has 1 inputs, got 2"},
		{"wrong input length", spec, [][]float64{{1, 2}}, "input A has shape [3] (3 elements) but 2 values were given"},
		{"out of bounds at run time", bad, [][]float64{{1, 2, 3}}, "interp: access A[i] out of bounds: dimension 0 index 3 not in [0, 3)"},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			out, err := Run(tc.spec, tc.inputs)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got error %v, want one containing %q", err, tc.want)
			}
			if out != nil {
				t.Errorf("got output %v with the error, want nil", out)
			}
		})
	}
}

// TestRunMaxMinRule checks the exact max/min/relu rule of core/ir on NaN,
// infinities and signed zeros, elementwise and folded.
func TestRunMaxMinRule(t *testing.T) {
	nan, inf, negZero := math.NaN(), math.Inf(1), math.Copysign(0, -1)
	same := func(a, b float64) bool {
		return math.IsNaN(a) && math.IsNaN(b) || a == b && math.Signbit(a) == math.Signbit(b)
	}
	for _, c := range []struct{ a, b, max, min float64 }{
		{nan, 1, nan, nan},
		{1, nan, nan, nan},
		{inf, nan, nan, nan},
		{nan, -inf, nan, nan},
		{-inf, nan, nan, nan},
		{0, negZero, negZero, negZero},
		{negZero, 0, 0, 0},
		{1, 2, 2, 1},
		{-inf, inf, inf, -inf},
	} {
		// M and N fold [a, b] from -inf and +inf: the same results.
		spec := specialize(t, "Y[i] = max(A[i], B[i])\nZ[i] = min(A[i], B[i])\nM[] max= C[j]\nN[] min= C[j]",
			ir.Float64, [][]int64{{1}, {1}, {2}}, nil)
		out, err := Run(spec, [][]float64{{c.a}, {c.b}, {c.a, c.b}})
		if err != nil {
			t.Fatal(err)
		}
		for i, name := range spec.Tensors {
			want := c.max
			switch name.Name {
			case "Z", "N":
				want = c.min
			case "A", "B", "C":
				continue
			}
			if !same(out[i][0], want) {
				t.Errorf("%s for (%v, %v) = %v, want %v", name.Name, c.a, c.b, out[i][0], want)
			}
		}
	}
	spec := specialize(t, "M[] max= A[i]\nN[] min= A[i]\nR[i] = relu(A[i])", ir.Float64, [][]int64{{4}}, nil)
	for _, c := range []struct {
		in       []float64
		max, min float64
		relu     []float64
	}{
		{[]float64{1, inf, nan, 2}, nan, nan, []float64{1, inf, nan, 2}},
		{[]float64{0, negZero, -1, negZero}, negZero, -1, []float64{0, 0, 0, 0}},
		{[]float64{negZero, 0, -1, 0}, 0, -1, []float64{0, 0, 0, 0}},
	} {
		out, err := Run(spec, [][]float64{c.in})
		if err != nil {
			t.Fatal(err)
		}
		if len(out) != 4 || spec.Tensors[3].Name != "R" {
			t.Fatalf("unexpected tensors %v", spec.Tensors)
		}
		if !same(out[1][0], c.max) || !same(out[2][0], c.min) {
			t.Errorf("fold of %v: max %v, min %v; want %v, %v", c.in, out[1][0], out[2][0], c.max, c.min)
		}
		for i, w := range c.relu {
			if !same(out[3][i], w) {
				t.Errorf("relu(%v) = %v, want %v", c.in[i], out[3][i], w)
			}
		}
	}
}
