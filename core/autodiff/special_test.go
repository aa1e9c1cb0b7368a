package autodiff

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/neoflow/neoflow/core/interp"
	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/parse"
	"github.com/neoflow/neoflow/core/sema"
)

// runGrad evaluates the gradient op of c on given inputs and output
// gradients and returns d_<In> by input name.
func runGrad(t *testing.T, c gcase, dtype ir.DType, xs, dys [][]float64) map[string][]float64 {
	t.Helper()
	op, err := parse.Parse(c.src, parse.Options{Name: c.name, Consts: c.consts})
	if err != nil {
		t.Fatal(err)
	}
	spec, err := sema.Specialize(op, dtype, c.shapes, c.sizes)
	if err != nil {
		t.Fatal(err)
	}
	wrt := allTrue(len(spec.Op.Inputs))
	g, gs := gradSpec(t, spec, wrt)
	return analytic(t, g, gs, spec, xs, dys, wrt)
}

// TestMaxPoolTies checks the first-arg-max rule on exact ties: the
// gradient of each window goes to its first maximum in row-major order of
// the window offsets (r, s).
func TestMaxPoolTies(t *testing.T) {
	c := gcase{name: "maxpool_ties", src: "Y[p,q] max= X[p*2+r, q*2+s]", shapes: [][]int64{{5, 5}},
		sizes: map[string]int64{"r": 3, "s": 3}}
	x := make([]float64, 25)
	for i := range x {
		x[i] = 1
	}
	x[0*5+2] = 2 // (0,2): offset (0,2) of window (0,0), (0,0) of window (0,1)
	x[1*5+0] = 2 // (1,0): offset (1,0) of window (0,0), later than (0,2)
	dy := []float64{1, 2, 3, 4}
	want := make([]float64, 25)
	want[0*5+2] = 1 + 2 // windows (0,0) and (0,1)
	want[2*5+0] = 3     // window (1,0): all ones, first offset (0,0)
	want[2*5+2] = 4     // window (1,1)
	for _, dt := range []ir.DType{ir.Float64, ir.Float32} {
		got := runGrad(t, c, dt, [][]float64{x}, [][]float64{dy})["X"]
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("%s: d_X = %v, want %v", dt, got, want)
			}
		}
	}
	// min= follows the same rule.
	c.src = "Y[p,q] min= X[p*2+r, q*2+s]"
	for i := range x {
		x[i] = -x[i]
	}
	got := runGrad(t, c, ir.Float64, [][]float64{x}, [][]float64{dy})["X"]
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("min=: d_X = %v, want %v", got, want)
		}
	}
}

// TestProdZeros checks the product rule at rows with 0, 1 and 2 zeros
// against hand-computed values.
func TestProdZeros(t *testing.T) {
	c := gcase{name: "prod", src: "Y[i] *= X[i,j]", shapes: [][]int64{{3, 3}}}
	x := []float64{2, 3, 4, 2, 0, 5, 0, 3, 0}
	got := runGrad(t, c, ir.Float64, [][]float64{x}, [][]float64{{1, 1, 1}})["X"]
	want := []float64{12, 8, 6, 0, 10, 0, 0, 0, 0}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("d_X = %v, want %v", got, want)
		}
	}
}

// TestFloat32 compares float32 gradients with float64 ones, including a
// max= over computed values (stored before comparing).
func TestFloat32(t *testing.T) {
	for _, c := range []gcase{
		{name: "max_of_products", src: "Y[i] max= X[i,j] * W[j] + 0.1", shapes: [][]int64{{3, 5}, {5}}},
		{name: "conv", src: "Y[n,k,p,q] += X[n,c,p*2+r,q*2+s] * W[k,c,r,s]", shapes: [][]int64{{1, 2, 7, 7}, {2, 2, 3, 3}}},
	} {
		spec := specialize(t, c)
		r := rand.New(rand.NewPCG(3, 4))
		xs := randomInputs(r, spec, 0, 0)
		for _, v := range xs {
			for i := range v {
				v[i] = float64(float32(v[i]))
			}
		}
		dys := randomGrads(r, spec)
		for _, v := range dys {
			for i := range v {
				v[i] = float64(float32(v[i]))
			}
		}
		g64 := runGrad(t, c, ir.Float64, xs, dys)
		g32 := runGrad(t, c, ir.Float32, xs, dys)
		for in, v := range g64 {
			for i := range v {
				if math.Abs(v[i]-g32[in][i]) > 1e-5*(1+math.Abs(v[i])) {
					t.Fatalf("%s: d_%s[%d]: float32 %g, float64 %g", c.name, in, i, g32[in][i], v[i])
				}
			}
		}
	}
}

// TestDoubleBackward differentiates gradient ops: the second gradient
// must match finite differences of the first gradient op.
func TestDoubleBackward(t *testing.T) {
	for _, c := range []gcase{
		{name: "matmul", src: "Y[i,j] += A[i,k] * B[k,j]", shapes: [][]int64{{2, 3}, {3, 2}}},
		{name: "softmax2", src: "S[b] += exp(X[b,j])\nY[b,j] = exp(X[b,j]) / S[b]", shapes: [][]int64{{2, 3}}},
		{name: "conv_stride2", src: "Y[n,k,p,q] += X[n,c,p*2+r,q*2+s] * W[k,c,r,s]", shapes: [][]int64{{1, 1, 5, 5}, {2, 1, 3, 3}}},
		{name: "maxpool", src: "Y[p] max= X[p*2+r] * X[p*2+r]", shapes: [][]int64{{7}}, sizes: map[string]int64{"r": 3}, lo: 0.1, hi: 1},
		{name: "depth2space", src: "Y[n,c,h,w] = X[n, c*4 + (h%2)*2 + w%2, h/2, w/2] * X[n, c*4 + (h%2)*2 + w%2, h/2, w/2]",
			shapes: [][]int64{{1, 4, 2, 2}}, sizes: map[string]int64{"c": 1, "h": 4, "w": 4}},
		{name: "conv_transposed", src: "Y[n,k,h,w] += where((h-r) % 2 == 0 && (h-r)/2 >= 0 && (h-r)/2 < 2 && (w-s) % 2 == 0 && (w-s)/2 >= 0 && (w-s)/2 < 2, " +
			"X[n,c,(h-r)/2,(w-s)/2], 0.0) * W[c,k,r,s]", shapes: [][]int64{{1, 1, 2, 2}, {1, 2, 2, 2}}, sizes: map[string]int64{"h": 4, "w": 4}},
		{name: "indicator", src: "Y[i] += X[(i*i) % 3] * X[i % 3] * W[i]", shapes: [][]int64{{3}, {4}}},
		{name: "lltm", src: "Xc[b,k] = where(k < 2, Hold[b,k], In[b,k-2])\nG[b,g] += Wt[g,k] * Xc[b,k]\n" +
			"NC[b,j] = Cold[b,j] + where(G[b,4+j] > 0.0, G[b,4+j], exp(G[b,4+j]) - 1.0) * sigmoid(G[b,j+0])\n" +
			"NH[b,j] = tanh(NC[b,j]) * sigmoid(G[b,2+j])",
			shapes: [][]int64{{1, 2}, {1, 2}, {6, 4}, {1, 2}}, sizes: map[string]int64{"k": 4}},
		{name: "prod", src: "Y[i] *= X[i,j] * X[i,j]", shapes: [][]int64{{2, 3}}},
		// Tensors named as gradients are (Tensor Comprehensions' hand-written
		// gradient ops): d_d_A is the first gradient's input, so the second
		// names the gradient of its output d_A d_d_A_1.
		{name: "named_like_a_gradient", src: "d_A[i] = A[i] * A[i]", shapes: [][]int64{{3}}},
		{name: "input_named_like_a_gradient", src: "Y[i] = d_Y[i] * d_Y[i]", shapes: [][]int64{{3}}},
		// Smith normal form at both orders: the first gradient's reads
		// (quotients of z-affine forms) are inverted through it again.
		{name: "snf_rank2_free", snf: true, src: "Y[i,j,k] += X[2*i + 4*j, 3*i + 5*k] * W[i,j,k]",
			shapes: [][]int64{{9, 17}, {3, 2, 3}}},
		{name: "snf_rotated", snf: true, src: "Y[i,j] = X[i + j, i - j + 3] * X[i + j, i - j + 3] * W[i,j]",
			shapes: [][]int64{{7, 7}, {4, 4}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			spec := specialize(t, c)
			opts := gradOptions{forceSNF: c.snf}
			g1, s1 := gradSpecOpts(t, spec, allTrue(len(spec.Op.Inputs)), opts)
			g2, s2 := gradSpecOpts(t, s1, allTrue(len(s1.Op.Inputs)), opts)
			if c.snf {
				checkSNFNotes(t, g1, false)
				checkSNFNotes(t, g2, false)
			}
			r := rand.New(rand.NewPCG(5, 6))
			xs := randomInputs(r, s1, c.lo, c.hi)
			dys := randomGrads(r, s1)
			checkFD(t, s1, g2, s2, xs, dys, allTrue(len(s1.Op.Inputs)), 1e-6)
			if testing.Verbose() {
				t.Logf("first:\n%s\nsecond:\n%s", Explain(g1), Explain(g2))
			}
		})
	}
}

func TestErrors(t *testing.T) {
	mk := func(src string, dt ir.DType, shapes ...[]int64) *ir.Spec {
		op, err := parse.Parse(src, parse.Options{})
		if err != nil {
			t.Fatal(err)
		}
		s, err := sema.Specialize(op, dt, shapes, nil)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	mm := mk("Y[i,j] += A[i,k] * B[k,j]", ir.Float64, []int64{2, 3}, []int64{3, 2})
	for _, c := range []struct {
		spec *ir.Spec
		wrt  []bool
		want string
	}{
		{nil, nil, "nil spec"},
		{mm, []bool{true}, "wrt has 1 entries but op has 2 inputs (A, B)"},
		{mm, []bool{false, false}, "wrt selects no input"},
		{mk("Y[] max= X[i,j]", ir.Float32, []int64{4097, 4097}), []bool{true},
			"the max= reduction has 16785409 points, more than float32 represents exactly (2^24)"},
	} {
		_, err := Grad(c.spec, c.wrt)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Grad error %v, want it to contain %q", err, c.want)
		}
	}
	// Within the float32 limit, it works.
	if _, err := Grad(mk("Y[] max= X[i,j]", ir.Float32, []int64{4096, 4096}), []bool{true}); err != nil {
		t.Errorf("2^24 points: %v", err)
	}
}

// TestRoundTrip checks the GradOp contract: Source is the printed op, it
// parses back to an equal op, inputs and outputs are named as promised,
// and Explain parses back too.
func TestRoundTrip(t *testing.T) {
	c := gcase{name: "lltm_like", src: "G[b,g] += W[g,k] * X[b,k]\nY[b,j] = tanh(G[b,j+0]) * sigmoid(G[b,N+j])\nZ[b] += G[b,j+0]",
		consts: map[string]parse.ConstValue{"N": ci(2)}, shapes: [][]int64{{4, 3}, {2, 3}}}
	spec := specialize(t, c)
	g, gs := gradSpec(t, spec, []bool{true, true})
	if g.Op.Source != ir.Print(g.Op) {
		t.Errorf("Source is not Print(Op)")
	}
	consts := map[string]parse.ConstValue{"N": ci(2)}
	back, err := parse.Parse(g.Op.Source, parse.Options{Inputs: g.Op.Inputs, Consts: consts})
	if err != nil || !ir.EqualOp(back, g.Op) {
		t.Errorf("Source does not parse back: %v", err)
	}
	if got := strings.Join(g.Op.Inputs, ","); got != "W,X,d_Y,d_Z" {
		t.Errorf("inputs %s", got)
	}
	var outs []string
	for _, o := range gs.Outputs() {
		outs = append(outs, o.Name)
	}
	if got := strings.Join(outs, ","); got != "d_W,d_X" {
		t.Errorf("outputs %s", got)
	}
	ex := Explain(g)
	if _, err := parse.Parse(ex, parse.Options{Inputs: g.Op.Inputs, Consts: consts}); err != nil {
		t.Errorf("Explain does not parse: %v\n%s", err, ex)
	}
	// The interpreter agrees with finite differences too.
	r := rand.New(rand.NewPCG(7, 8))
	checkFD(t, spec, g, gs, randomInputs(r, spec, 0, 0), randomGrads(r, spec), []bool{true, true}, 1e-6)
	_ = interp.Run
}
