package sema

import (
	"fmt"
	"strings"
	"testing"

	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/parse"
)

// specString summarizes a spec: its tensors as "X input [1 2]" and its
// statements' axes as "n=1 k=2 | c=3" (spatial | reduction).
func specString(s *ir.Spec) (tensors, axes []string) {
	for _, t := range s.Tensors {
		tensors = append(tensors, fmt.Sprintf("%s %v %v", t.Name, t.Role, t.Shape))
	}
	for _, b := range s.Stmts {
		var parts []string
		for _, v := range b.Spatial {
			parts = append(parts, fmt.Sprintf("%s=%d", v.Name, v.Extent))
		}
		parts = append(parts, "|")
		for _, v := range b.Reduction {
			parts = append(parts, fmt.Sprintf("%s=%d", v.Name, v.Extent))
		}
		axes = append(axes, strings.Join(parts, " "))
	}
	return tensors, axes
}

type specCase struct {
	desc    string
	src     string
	opts    parse.Options
	dtype   ir.DType // Float32 when zero
	shapes  [][]int64
	sizes   map[string]int64
	tensors []string // for valid cases
	axes    []string // for valid cases, one per statement
	err     []string // error fragments for invalid cases
}

var specCases = []specCase{
	{
		desc:    "matmul",
		src:     "Y[i,j] += A[i,k] * B[k,j]",
		shapes:  [][]int64{{2, 3}, {3, 4}},
		tensors: []string{"A input [2 3]", "B input [3 4]", "Y output [2 4]"},
		axes:    []string{"i=2 j=4 | k=3"},
	},
	{
		desc:    "batched matmul",
		src:     "Y[b,i,j] += A[b,i,k] * B[b,k,j]",
		shapes:  [][]int64{{5, 2, 3}, {5, 3, 4}},
		tensors: []string{"A input [5 2 3]", "B input [5 3 4]", "Y output [5 2 4]"},
		axes:    []string{"b=5 i=2 j=4 | k=3"},
	},
	{
		desc:    "conv with stride and dilation",
		src:     "Y[n,k,p,q] += X[n,c,p*2+r*2,q*2+s*2] * W[k,c,r,s]",
		opts:    parse.Options{Name: "conv"},
		shapes:  [][]int64{{1, 2, 9, 10}, {4, 2, 3, 3}},
		tensors: []string{"X input [1 2 9 10]", "W input [4 2 3 3]", "Y output [1 4 3 3]"},
		axes:    []string{"n=1 k=4 p=3 q=3 | c=2 r=3 s=3"},
	},
	{
		desc:    "conv with fixed input order",
		src:     "Y[n,k,p,q] += X[n,c,p+r,q+s] * W[k,c,r,s]",
		opts:    parse.Options{Inputs: []string{"W", "X"}},
		shapes:  [][]int64{{4, 2, 3, 3}, {1, 2, 5, 5}},
		tensors: []string{"W input [4 2 3 3]", "X input [1 2 5 5]", "Y output [1 4 3 3]"},
		axes:    []string{"n=1 k=4 p=3 q=3 | c=2 r=3 s=3"},
	},
	{
		desc: "zero padding",
		src: "Y[n,k,p,q] += where(p+r-1 >= 0 && p+r-1 < 8 && q+s-1 >= 0 && q+s-1 < 8, " +
			"X[n,c,p+r-1,q+s-1], 0.0) * W[k,c,r,s]",
		shapes:  [][]int64{{1, 2, 8, 8}, {4, 2, 3, 3}},
		sizes:   map[string]int64{"p": 8, "q": 8},
		tensors: []string{"X input [1 2 8 8]", "W input [4 2 3 3]", "Y output [1 4 8 8]"},
		axes:    []string{"n=1 k=4 p=8 q=8 | r=3 s=3 c=2"}, // first appearance: r in the guard
	},
	{
		desc:    "concatenation",
		src:     "Y[i] = where(i < 4, A[i], B[i - 4])",
		shapes:  [][]int64{{4}, {3}},
		sizes:   map[string]int64{"i": 7},
		tensors: []string{"A input [4]", "B input [3]", "Y output [7]"},
		axes:    []string{"i=7 |"},
	},
	{
		desc:    "concatenation with negated guard",
		src:     "Y[i] = where(!(i < 4), B[i - 4], A[i])",
		shapes:  [][]int64{{3}, {4}},
		sizes:   map[string]int64{"i": 7},
		tensors: []string{"B input [3]", "A input [4]", "Y output [7]"},
		axes:    []string{"i=7 |"},
	},
	{
		desc:    "depth to space",
		src:     "Y[n,c,h,w] = X[n, c*4 + (h%2)*2 + w%2, h/2, w/2]",
		shapes:  [][]int64{{1, 8, 3, 5}},
		tensors: []string{"X input [1 8 3 5]", "Y output [1 2 6 10]"},
		axes:    []string{"n=1 c=2 h=6 w=10 |"},
	},
	{
		desc:    "space to depth",
		src:     "Y[n, c, h, w] = X[n, c/4, h*2 + (c%4)/2, w*2 + c%2]",
		shapes:  [][]int64{{1, 2, 4, 6}},
		tensors: []string{"X input [1 2 4 6]", "Y output [1 8 2 3]"},
		axes:    []string{"n=1 c=8 h=2 w=3 |"},
	},
	{
		desc:    "channel shuffle",
		src:     "Y[n, c, h, w] = X[n, (c%G)*(C/G) + c/G, h, w]",
		opts:    parse.Options{Consts: ints("G", 2, "C", 8)},
		shapes:  [][]int64{{1, 8, 2, 3}},
		tensors: []string{"X input [1 8 2 3]", "Y output [1 8 2 3]"},
		axes:    []string{"n=1 c=8 h=2 w=3 |"},
	},
	{
		desc:    "capsule conv",
		src:     "Y[n,k,p,q,i,j] += X[n,c,p*2+r,q*2+s,i,l] * W[k,c,r,s,l,j]",
		shapes:  [][]int64{{1, 2, 7, 7, 4, 4}, {3, 2, 3, 3, 4, 4}},
		tensors: []string{"X input [1 2 7 7 4 4]", "W input [3 2 3 3 4 4]", "Y output [1 3 3 3 4 4]"},
		axes:    []string{"n=1 k=3 p=3 q=3 i=4 j=4 | c=2 r=3 s=3 l=4"},
	},
	{
		desc:    "max pooling",
		src:     "Y[n,c,p,q] max= X[n,c,p*2+r,q*2+s]",
		shapes:  [][]int64{{1, 2, 8, 7}},
		sizes:   map[string]int64{"r": 2, "s": 2},
		tensors: []string{"X input [1 2 8 7]", "Y output [1 2 4 3]"},
		axes:    []string{"n=1 c=2 p=4 q=3 | r=2 s=2"},
	},
	{
		desc:    "softmax",
		src:     "M[i] max= X[i,j]\nE[i,j] = exp(X[i,j] - M[i])\nS[i] += E[i,j]\nY[i,j] = E[i,j] / S[i]",
		shapes:  [][]int64{{2, 5}},
		tensors: []string{"X input [2 5]", "Y output [2 5]", "M temp [2]", "E temp [2 5]", "S temp [2]"},
		axes:    []string{"i=2 | j=5", "i=2 j=5 |", "i=2 | j=5", "i=2 j=5 |"},
	},
	{
		desc: "layer norm",
		src: "Mu[i] += X[i,j] * invN\nD[i,j] = X[i,j] - Mu[i]\nV[i] += D[i,j] * D[i,j] * invN\n" +
			"Y[i,j] = D[i,j] * rsqrt(V[i] + eps) * G[j] + B[j]",
		opts:    parse.Options{Consts: ints("invN", 0.25, "eps", 1e-5)},
		shapes:  [][]int64{{3, 4}, {4}, {4}},
		tensors: []string{"X input [3 4]", "G input [4]", "B input [4]", "Y output [3 4]", "Mu temp [3]", "D temp [3 4]", "V temp [3]"},
		axes:    []string{"i=3 | j=4", "i=3 j=4 |", "i=3 | j=4", "i=3 j=4 |"},
	},
	{
		desc:    "broadcasting add",
		src:     "Y[i,j] = A[i,j] + B[j]",
		dtype:   ir.Float64,
		shapes:  [][]int64{{2, 3}, {3}},
		tensors: []string{"A input [2 3]", "B input [3]", "Y output [2 3]"},
		axes:    []string{"i=2 j=3 |"},
	},
	{
		desc:    "scalar output",
		src:     "S[] += X[i]",
		shapes:  [][]int64{{6}},
		tensors: []string{"X input [6]", "S output []"},
		axes:    []string{"| i=6"},
	},
	{
		desc:    "two outputs",
		src:     "Y[i] = A[i] * 2.0\nZ[i] = A[i] + 1.0",
		shapes:  [][]int64{{3}},
		tensors: []string{"A input [3]", "Y output [3]", "Z output [3]"},
		axes:    []string{"i=3 |", "i=3 |"},
	},
	{
		desc:    "left-hand-only index with size",
		src:     "Y[i,j] = A[i]",
		shapes:  [][]int64{{3}},
		sizes:   map[string]int64{"j": 2},
		tensors: []string{"A input [3]", "Y output [3 2]"},
		axes:    []string{"i=3 j=2 |"},
	},
	{
		desc:    "guard on an opaque atom",
		src:     "Y[h] = where(h/2 < 3, X[h/2], 0.0)",
		shapes:  [][]int64{{3}},
		sizes:   map[string]int64{"h": 10},
		tensors: []string{"X input [3]", "Y output [10]"},
		axes:    []string{"h=10 |"},
	},
	{
		desc:    "guard from two facts",
		src:     "Y[i,j] = where(i - j >= 0 && j >= 1, A[i - j + j - 1], 0.0) + B[i] + C[j]",
		shapes:  [][]int64{{4}, {4}, {3}},
		tensors: []string{"A input [4]", "B input [4]", "C input [3]", "Y output [4 3]"},
		axes:    []string{"i=4 j=3 |"},
	},
	{
		desc:    "index where in an access",
		src:     "Y[i] = A[where(i < 3, i, 2)]",
		shapes:  [][]int64{{3}},
		sizes:   map[string]int64{"i": 5},
		tensors: []string{"A input [3]", "Y output [5]"},
		axes:    []string{"i=5 |"},
	},
	{
		desc:    "index min clamps",
		src:     "Y[i] = A[min(i, 2)] + B[i]",
		shapes:  [][]int64{{3}, {6}},
		tensors: []string{"A input [3]", "B input [6]", "Y output [6]"},
		axes:    []string{"i=6 |"},
	},
	{
		desc:    "same name in two statements",
		src:     "T[i] = A[i]\nY[i] = T[i / 2]",
		shapes:  [][]int64{{3}},
		tensors: []string{"A input [3]", "Y output [6]", "T temp [3]"},
		axes:    []string{"i=3 |", "i=6 |"},
	},
	{
		desc:    "dead guarded branch",
		src:     "Y[i] = where(i < 0, A[i + 100], A[i]) + B[i]",
		shapes:  [][]int64{{3}, {3}},
		tensors: []string{"A input [3]", "B input [3]", "Y output [3]"},
		axes:    []string{"i=3 |"},
	},
	{
		// The inner guard narrows i to 0, which leaves the atom the
		// outer guard bounded, (i + j) / 2 % 2, without values: dead.
		desc:    "dead nested guards, the inner one on a variable",
		src:     "Y[j] += where((i + j) / 2 % 2 - 1 >= 0, where(i <= 0, A[(i + j) / 2 % 2 - 1], 0.0), 0.0) + B[i, j]",
		shapes:  [][]int64{{2}, {4, 1}},
		tensors: []string{"A input [2]", "B input [4 1]", "Y output [1]"},
		axes:    []string{"j=1 | i=4"},
	},

	// Errors.
	{
		desc:   "zero padding without sizes",
		src:    "Y[n,k,p,q] += where(p+r-1 >= 0 && p+r-1 < 8 && q+s-1 >= 0 && q+s-1 < 8, X[n,c,p+r-1,q+s-1], 0.0) * W[k,c,r,s]",
		shapes: [][]int64{{1, 2, 8, 8}, {4, 2, 3, 3}},
		err: []string{"1:7:", "cannot infer the range of index p (it appears only in composite accesses, or in guarded ones " +
			"whose guards do not bound it, and indexes no dimension plainly); " +
			"pass its size explicitly, e.g. sizes={'p': ...}", "sizes={'p': ...} (q is unknown too)"},
	},
	{
		// The guarded accesses decide (Tensor Comprehensions' rule): A[i]
		// under i < 4 bounds nothing, B[i - 4] under i >= 4 gives 4 + 3.
		desc:    "concatenation without size",
		src:     "Y[i] = where(i < 4, A[i], B[i - 4])",
		shapes:  [][]int64{{4}, {3}},
		tensors: []string{"A input [4]", "B input [3]", "Y output [7]"},
		axes:    []string{"i=7 |"},
	},
	{
		desc:    "lower-triangular product",
		src:     "Y[i,j] += where(k <= i, L[i,k], 0.0) * B[k,j]",
		shapes:  [][]int64{{5, 5}, {5, 3}},
		tensors: []string{"L input [5 5]", "B input [5 3]", "Y output [5 3]"},
		axes:    []string{"i=5 j=3 | k=5"},
	},
	{
		desc:    "guarded padding: the largest output that keeps the window in bounds",
		src:     "Y[p] += where(p + r >= 1, X[p + r - 1], 0.0) * W[r]",
		shapes:  [][]int64{{8}, {3}},
		tensors: []string{"X input [8]", "W input [3]", "Y output [7]"},
		axes:    []string{"p=7 | r=3"},
	},
	{
		// The guards keep i below k's extent whatever i's: the dimension
		// i indexes plainly gives it (Tensor Comprehensions' rule).
		desc:    "upper-triangular product",
		src:     "Y[i,j] += where(k >= i, U[i,k], 0.0) * B[k,j]",
		shapes:  [][]int64{{5, 5}, {5, 3}},
		tensors: []string{"U input [5 5]", "B input [5 3]", "Y output [5 3]"},
		axes:    []string{"i=5 j=3 | k=5"},
	},
	{
		desc:    "an index only a guarded access reads plainly",
		src:     "Y[i] = where(i < 4, A[i], 0.0)",
		shapes:  [][]int64{{6}},
		tensors: []string{"A input [6]", "Y output [6]"},
		axes:    []string{"i=6 |"},
	},
	{
		desc:   "concatenation too long",
		src:    "Y[i] = where(i < 4, A[i], B[i - 4])",
		shapes: [][]int64{{4}, {3}},
		sizes:  map[string]int64{"i": 8},
		err:    []string{"1:27:", "access B[i - 4] may be out of bounds: dimension 0 index i - 4 ranges over [0, 3] but B has size 3 there"},
	},
	{
		desc:   "max pooling without window sizes",
		src:    "Y[n,c,p,q] max= X[n,c,p*2+r,q*2+s]",
		shapes: [][]int64{{1, 2, 8, 8}},
		err:    []string{"cannot infer the range of index p", "(q, r, s are unknown too)"},
	},
	{
		desc:   "left-hand-only index",
		src:    "Y[i,j] = A[i]",
		shapes: [][]int64{{3}},
		err:    []string{"1:5:", "cannot infer the range of index j (it appears in no tensor access on the right-hand side)"},
	},
	{
		desc:   "inconsistent ranges",
		src:    "Y[i,j] += A[i,k] * B[k,j]",
		shapes: [][]int64{{2, 3}, {4, 5}},
		err:    []string{"1:22:", "inconsistent ranges for index k: A dim 1 gives 3 but B dim 0 gives 4"},
	},
	{
		desc:    "a size smaller than a dimension reads a prefix",
		src:     "Y[b,u] = A[b,u] * G[b,u] + G[b,N+u]",
		opts:    parse.Options{Consts: map[string]parse.ConstValue{"N": {Int: 3}}},
		shapes:  [][]int64{{2, 3}, {2, 6}},
		sizes:   map[string]int64{"u": 3},
		tensors: []string{"A input [2 3]", "G input [2 6]", "Y output [2 3]"},
		axes:    []string{"b=2 u=3 |"},
	},
	{
		desc:   "size contradicts a direct use",
		src:    "Y[i] = A[i]",
		shapes: [][]int64{{3}},
		sizes:  map[string]int64{"i": 4},
		err:    []string{"inconsistent ranges for index i: sizes gives 4 but A dim 0 has only 3"},
	},
	{
		desc:   "out of bounds neighbour",
		src:    "Y[i] = A[i] + A[i+1]",
		shapes: [][]int64{{4}},
		err:    []string{"1:15:", "access A[i + 1] may be out of bounds: dimension 0 index i + 1 ranges over [1, 4] but A has size 4 there"},
	},
	{
		desc:   "conv window too large for size",
		src:    "Y[n,k,p,q] += X[n, c, p*2+r, q*2+s] * W[k,c,r,s]",
		shapes: [][]int64{{1, 2, 8, 8}, {4, 2, 3, 3}},
		sizes:  map[string]int64{"p": 5},
		err:    []string{"access X[n, c, p * 2 + r, q * 2 + s] may be out of bounds: dimension 2 index p * 2 + r ranges over [0, 10] but X has size 8 there"},
	},
	{
		desc:   "half guarded padding",
		src:    "Y[i] += where(i+r-1 >= 0, X[i+r-1], 0.0) * W[r]",
		shapes: [][]int64{{8}, {3}},
		sizes:  map[string]int64{"i": 8},
		err:    []string{"access X[i + r - 1] may be out of bounds: dimension 0 index i + r - 1 ranges over [0, 8] but X has size 8 there"},
	},
	{
		desc:   "never in bounds",
		src:    "Y[i] = A[i + 5]",
		shapes: [][]int64{{3}},
		err:    []string{"1:8:", "access A[i + 5] can never be in bounds: dimension 0 index i + 5 ranges over [5, 5] even when i = 0, but A has size 3 there"},
	},
	{
		desc:   "wrong number of inputs",
		src:    "Y[n,k,p,q] += X[n,c,p+r,q+s] * W[k,c,r,s]",
		opts:   parse.Options{Name: "conv"},
		shapes: [][]int64{{1, 2, 5, 5}, {4, 2, 3, 3}, {1}},
		err:    []string{"op conv takes 2 inputs (X, W), got 3"},
	},
	{
		desc:   "input rank",
		src:    "Y[n,k,p,q] += X[n,c,p+r,q+s] * W[k,c,r,s]",
		shapes: [][]int64{{2, 5, 5}, {4, 2, 3, 3}},
		err:    []string{"1:15:", "input X has rank 3 but is used with 4 indices"},
	},
	{
		desc:   "zero-size dimension",
		src:    "Y[i] = A[i]",
		shapes: [][]int64{{0}},
		err:    []string{"input A has shape [0] with a zero-size dimension 0: every dimension must be at least 1"},
	},
	{
		desc:   "negative dimension",
		src:    "Y[i,j] = A[i,j]",
		shapes: [][]int64{{2, -1}},
		err:    []string{"input A has shape [2, -1] with a negative dimension 1"},
	},
	{
		desc:   "size of an unused index",
		src:    "Y[i] = A[i]",
		shapes: [][]int64{{3}},
		sizes:  map[string]int64{"z": 3},
		err:    []string{"sizes names index z, which the op does not use"},
	},
	{
		desc:   "size below one",
		src:    "Y[i] = A[i]",
		shapes: [][]int64{{3}},
		sizes:  map[string]int64{"i": 0},
		err:    []string{"size of index i must be at least 1, got 0"},
	},
	{
		desc:   "invalid dtype",
		src:    "Y[i] = A[i]",
		dtype:  ir.InvalidDType - 1,
		shapes: [][]int64{{3}},
		err:    []string{"unsupported dtype dtype(-1)"},
	},
	{
		desc:   "check error first",
		src:    "Y[i] = A[i] + Z[i]",
		opts:   parse.Options{Inputs: []string{"A"}},
		shapes: [][]int64{{3}},
		err:    []string{"unknown tensor Z"},
	},
}

func TestSpecialize(t *testing.T) {
	for _, tc := range specCases {
		t.Run(tc.desc, func(t *testing.T) {
			op := mustParse(t, tc.src, tc.opts)
			dtype := tc.dtype
			if dtype == ir.InvalidDType {
				dtype = ir.Float32
			}
			spec, err := Specialize(op, dtype, tc.shapes, tc.sizes)
			checkErr(t, err, tc.err...)
			if err != nil {
				return
			}
			if spec.Op != op || spec.DType != dtype {
				t.Errorf("got spec op %p dtype %v, want %p %v", spec.Op, spec.DType, op, dtype)
			}
			tensors, axes := specString(spec)
			if got, want := strings.Join(tensors, "; "), strings.Join(tc.tensors, "; "); got != want {
				t.Errorf("tensors:\ngot  %s\nwant %s", got, want)
			}
			if got, want := strings.Join(axes, "; "), strings.Join(tc.axes, "; "); got != want {
				t.Errorf("axes:\ngot  %s\nwant %s", got, want)
			}
			for i, b := range spec.Stmts {
				if b.Stmt != op.Stmts[i] {
					t.Errorf("statement %d: got %v, want the op's statement", i, b.Stmt)
				}
			}
		})
	}
}

// TestSpecializeCopiesShapes checks that the spec does not alias the
// caller's shape slices.
func TestSpecializeCopiesShapes(t *testing.T) {
	op := mustParse(t, "Y[i] = A[i]", parse.Options{})
	shape := []int64{3}
	spec, err := Specialize(op, ir.Float64, [][]int64{shape}, nil)
	if err != nil {
		t.Fatal(err)
	}
	shape[0] = 99
	if got := spec.Tensors[0].Shape[0]; got != 3 {
		t.Errorf("got input shape %d after the caller's change, want 3", got)
	}
}
