package autodiff

import (
	"strings"
	"testing"

	"github.com/neoflow/neoflow/core/parse"
)

func ci(v int64) parse.ConstValue   { return parse.ConstValue{Int: v} }
func cf(v float64) parse.ConstValue { return parse.ConstValue{IsFloat: true, Float: v} }

var gradCases = []gcase{
	{name: "matmul", src: "Y[i,j] += A[i,k] * B[k,j]", shapes: [][]int64{{2, 3}, {3, 4}},
		explain: []string{"d_A[i, k] += d_Y[i, j] * B[k, j]", "d_B[k, j] += d_Y[i, j] * A[i, k]"}},
	{name: "bmm", src: "Y[b,i,j] += A[b,i,k] * B[b,k,j]", shapes: [][]int64{{2, 2, 3}, {2, 3, 2}}},
	{name: "conv2d_stride2", src: "Y[n,k,p,q] += X[n,c,p*2+r,q*2+s] * W[k,c,r,s]",
		shapes: [][]int64{{1, 2, 7, 8}, {2, 2, 3, 3}},
		explain: []string{"residue stepping r = x2 % 2 + 2 * r_step", "d_Y[n, k, x2 / 2 - r_step, x3 / 2 - s_step]",
			"reduces over k, r_step, s_step"}},
	// The kernel runs backwards: p = (x - 2 + r) / 2 uses r with
	// coefficient +1, so the step is r = (-x + 2) % 2 + 2 * r_step.
	{name: "conv1d_stride2_flipped", src: "Y[n,k,p] += X[n,c,p*2+2-r] * W[k,c,r]",
		shapes:  [][]int64{{1, 2, 9}, {2, 2, 3}},
		explain: []string{"residue stepping r = (-x2 + 2) % 2 + 2 * r_step", "d_Y[n, k, (x2 - 1) / 2 + r_step]"}},
	{name: "conv2d_stride3", src: "Y[n,k,p,q] += X[n,c,p*3+r,q*3+s] * W[k,c,r,s]",
		shapes: [][]int64{{1, 2, 8, 7}, {2, 2, 2, 2}}},
	{name: "conv2d_dilation2", src: "Y[n,k,p,q] += X[n,c,p+2*r,q+2*s] * W[k,c,r,s]",
		shapes: [][]int64{{1, 2, 7, 6}, {2, 2, 2, 2}}},
	{name: "conv2d_stride2_dilation2", src: "Y[n,k,p,q] += X[n,c,2*p+2*r,2*q+2*s] * W[k,c,r,s]",
		shapes: [][]int64{{1, 1, 8, 7}, {2, 1, 2, 2}}},
	{name: "conv2d_zero_padding",
		src:    "Y[n,k,p,q] += where(p+r-1 >= 0 && p+r-1 < H && q+s-1 >= 0 && q+s-1 < W, X[n,c,p+r-1,q+s-1], 0.0) * K[k,c,r,s]",
		consts: map[string]parse.ConstValue{"H": ci(5), "W": ci(4)},
		shapes: [][]int64{{1, 2, 5, 4}, {2, 2, 3, 3}}, sizes: map[string]int64{"p": 5, "q": 4}},
	{name: "conv_transposed_stride2",
		src: "Y[n,k,h,w] += where((h-r) % 2 == 0 && (h-r)/2 >= 0 && (h-r)/2 < P && (w-s) % 2 == 0 && (w-s)/2 >= 0 && (w-s)/2 < Q, " +
			"X[n,c,(h-r)/2,(w-s)/2], 0.0) * W[c,k,r,s]",
		consts: map[string]parse.ConstValue{"P": ci(3), "Q": ci(2)},
		shapes: [][]int64{{1, 2, 3, 2}, {2, 2, 3, 3}}, sizes: map[string]int64{"h": 7, "w": 5}},
	{name: "depth2space", src: "Y[n,c,h,w] = X[n, c*4 + (h%2)*2 + w%2, h/2, w/2]",
		shapes: [][]int64{{1, 8, 2, 3}}, sizes: map[string]int64{"c": 2, "h": 4, "w": 6},
		explain: []string{"d_Y[n, x1 / 4, 2 * x2 + x1 % 4 / 2, 2 * x3 + x1 % 4 % 2]"}},
	{name: "space2depth", src: "Y[n,k,h,w] = X[n, k/4, h*2 + (k%4)/2, w*2 + k%2]",
		shapes: [][]int64{{1, 2, 4, 6}}, sizes: map[string]int64{"k": 8, "h": 2, "w": 3}},
	{name: "pixel_shuffle", src: "Y[n,c,h,w] = X[n, (h%2*2 + w%2)*C + c, h/2, w/2]",
		consts: map[string]parse.ConstValue{"C": ci(3)},
		shapes: [][]int64{{2, 12, 2, 2}}, sizes: map[string]int64{"c": 3, "h": 4, "w": 4}},
	{name: "unfold_im2col", src: "Y[n,c,r,s,p,q] = X[n,c,p+r,q+s]",
		shapes: [][]int64{{1, 2, 4, 5}}, sizes: map[string]int64{"r": 2, "s": 3}},
	{name: "flip", src: "Y[i] = X[N-1-i] * S[i]", consts: map[string]parse.ConstValue{"N": ci(5)},
		shapes: [][]int64{{5}, {5}}},
	{name: "pad_where", src: "Y[i,j] = where(i >= 2 && i < 2 + N, X[i-2, j], 0.0)",
		consts: map[string]parse.ConstValue{"N": ci(3)}, shapes: [][]int64{{3, 2}}, sizes: map[string]int64{"i": 7}},
	{name: "reduce_several_axes", src: "Y[b] += X[a,b,c] * X[a,b,c] + X[a,b,c]", shapes: [][]int64{{2, 3, 2}}},
	{name: "reduce_all", src: "Y[] += exp(X[a,b])", shapes: [][]int64{{3, 2}}},
	{name: "maxpool_3s2", src: "Y[n,c,p,q] max= X[n,c,p*2+r,q*2+s]",
		shapes: [][]int64{{1, 2, 7, 7}}, sizes: map[string]int64{"r": 3, "s": 3}},
	{name: "minpool_2s2", src: "Y[n,c,p,q] min= X[n,c,p*2+r,q*2+s]",
		shapes: [][]int64{{1, 1, 6, 4}}, sizes: map[string]int64{"r": 2, "s": 2}},
	{name: "max_of_products", src: "Y[i] max= X[i,j] * W[j]", shapes: [][]int64{{3, 4}, {4}}},
	{name: "prod_reduce", src: "Y[i] *= X[i,j]", shapes: [][]int64{{3, 4}}},
	{name: "prod_reduce_zeros", src: "Y[i] *= X[i,j] * 2.0", shapes: [][]int64{{4, 4}},
		inputs: func(_ *randT) [][]float64 {
			return [][]float64{{
				0.5, -1.2, 0.7, 1.3, // no zero
				0.5, 0, 0.7, 1.3, // one zero
				0, 1.1, 0, -0.4, // two zeros
				0.9, 0.8, -0.6, 0, // one zero, last
			}}
		}},
	{name: "logsumexp", src: "M[b] max= X[b,j]\nS[b] += exp(X[b,j] - M[b])\nY[b] = log(S[b]) + M[b]", shapes: [][]int64{{2, 5}}},
	{name: "softmax", src: "M[b] max= X[b,j]\nE[b,j] = exp(X[b,j] - M[b])\nS[b] += E[b,j]\nY[b,j] = E[b,j] / S[b]",
		shapes: [][]int64{{3, 4}}},
	{name: "layernorm",
		src: "Mu[b] += X[b,j] / D\nV[b] += (X[b,j] - Mu[b]) * (X[b,j] - Mu[b]) / D\n" +
			"Y[b,j] = (X[b,j] - Mu[b]) * rsqrt(V[b] + 0.00001) * G[j] + Bt[j]",
		consts: map[string]parse.ConstValue{"D": cf(4)}, shapes: [][]int64{{3, 4}, {4}, {4}}},
	{name: "mi_lstm_gate",
		src: "Wx[b,h] += W[h,i] * X[b,i]\nUz[b,h] += U[h,j] * Z[b,j]\n" +
			"Y[b,h] = tanh(Al[h] * Wx[b,h] * Uz[b,h] + B1[h] * Wx[b,h] + B2[h] * Uz[b,h] + Bias[h])",
		shapes: [][]int64{{3, 2}, {2, 2}, {3, 4}, {2, 4}, {3}, {3}, {3}, {3}}},
	{name: "sublstm_cell",
		src: "A[b,g] += Wt[g,k] * X[b,k]\nR2[b,g] += Rt[g,k] * H[b,k]\nS[b,g] = sigmoid(A[b,g] + R2[b,g] + Bias[g])\n" +
			"C2[b,j] = S[b,N+j] * C[b,j] + S[b,2*N+j] - S[b,j+0]\nH2[b,j] = sigmoid(C2[b,j]) - S[b,3*N+j]",
		consts: map[string]parse.ConstValue{"N": ci(2)},
		shapes: [][]int64{{8, 3}, {2, 3}, {8, 2}, {2, 2}, {8}, {2, 2}}},
	{name: "lltm_cell",
		src: "Xc[b,k] = where(k < Hd, Hold[b,k], In[b,k-Hd])\nGw[b,g] += Wt[g,k] * Xc[b,k]\nG[b,g] = Gw[b,g] + Bias[g]\n" +
			"NC[b,j] = Cold[b,j] + where(G[b,2*Hd+j] > 0.0, G[b,2*Hd+j], exp(G[b,2*Hd+j]) - 1.0) * sigmoid(G[b,j+0])\n" +
			"NH[b,j] = tanh(NC[b,j]) * sigmoid(G[b,Hd+j])",
		consts: map[string]parse.ConstValue{"Hd": ci(2)},
		shapes: [][]int64{{2, 2}, {2, 3}, {6, 5}, {6}, {2, 2}}, sizes: map[string]int64{"k": 5}},
	{name: "concat", src: "Y[b,k] = where(k < N, A[b,k], B[b,k-N])", consts: map[string]parse.ConstValue{"N": ci(2)},
		shapes: [][]int64{{2, 2}, {2, 3}}, sizes: map[string]int64{"k": 5}},
	{name: "broadcast_add", src: "Y[i,j] = X[i,j] + B[j] * C[i]", shapes: [][]int64{{2, 3}, {3}, {2}}},
	{name: "elementwise_1", src: "Y[i] = exp(X[i]) + log(P[i]) + sqrt(P[i]) + rsqrt(P[i]) + tanh(X[i]) + sigmoid(X[i])",
		shapes: [][]int64{{4}, {4}}, inputs: func(r *randT) [][]float64 {
			return [][]float64{{-0.7, 0.2, 0.9, -0.3}, {0.5, 1.2, 2.0, 0.8}}
		}},
	{name: "elementwise_2", src: "Y[i] = relu(X[i]) * abs(X[i]) - erf(X[i]) + -X[i] / P[i] + pow(P[i], X[i]) + pow(X[i], 3.0)",
		shapes: [][]int64{{5}, {5}}, inputs: func(r *randT) [][]float64 {
			return [][]float64{{-0.7, 0.2, 0.9, -0.3, 0.6}, {0.5, 1.2, 2.0, 0.8, 1.5}}
		}},
	{name: "elementwise_minmax", src: "Y[i] = max(X[i], P[i]) * min(X[i], 0.3) + X[i] % P[i] + where(X[i] > P[i], X[i] * P[i], 2.0 * P[i])",
		shapes: [][]int64{{6}, {6}}, inputs: func(r *randT) [][]float64 {
			return [][]float64{{-0.7, 0.2, 0.9, -0.3, 2.6, -2.5}, {0.5, 1.2, 0.4, -0.8, 1.5, 0.7}}
		}},
	{name: "comparison_zero", src: "Y[i] = where(X[i] > 0.0, 1.0, 0.0) + W[i] * 2.0", shapes: [][]int64{{3}, {3}}},
	{name: "index_in_value", src: "Y[i] += X[i,j] * (j + 1) * (i - j)", shapes: [][]int64{{3, 3}}},
	{name: "indicator_square", src: "Y[i] += X[(i*i) % 5] * W[i]", shapes: [][]int64{{5}, {6}},
		explain: []string{"indicator fallback"}},
	{name: "indicator_product", src: "Y[i,j] = X[i*j] * W[i,j]", shapes: [][]int64{{7}, {3, 3}}},
	{name: "diagonal", src: "Y[i] = X[i,i] * X[i,i]", shapes: [][]int64{{3, 3}}},
	{name: "upsample_nearest", src: "Y[h] = X[h/2]", shapes: [][]int64{{3}}, sizes: map[string]int64{"h": 6}},
	{name: "tile_mod", src: "Y[h] = X[h%3] * W[h]", shapes: [][]int64{{3}, {8}}},
	{name: "shifted_window", src: "Y[i] += X[i+j] * X[2*i+j]", shapes: [][]int64{{9}}, sizes: map[string]int64{"i": 3, "j": 4}},
	{name: "guard_only_var", src: "Y[i] += X[j+k] * W[i]", shapes: [][]int64{{5}, {2}}, sizes: map[string]int64{"j": 3, "k": 3}},
	{name: "unused_reduction_var", src: "Y[i] += X[i] + B[j]", shapes: [][]int64{{3}, {4}}},
	{name: "capsule_conv", src: "C[b,k,p,q,i,j] += A[b,c,2*p+r,2*q+s,i,t] * B[k,c,r,s,t,j]",
		shapes: [][]int64{{1, 2, 4, 4, 2, 2}, {2, 2, 2, 2, 2, 2}}},
	{name: "zero_through_temp", src: "T[i] = where(X[i] > 0.0, 1.0, 0.0) + W[i]\nY[i] = T[i] * W[i]", shapes: [][]int64{{3}, {3}}},
	{name: "scalar_input", src: "Y[i] = X[] * W[i]\nZ[] += Y[i] * Y[i]", shapes: [][]int64{{}, {3}}},
	{name: "name_clash_renamed", src: "d_A[i] = A[i] * 2.0\nY[i] = d_A[i] * d_A[i]", shapes: [][]int64{{3}},
		explain: []string{"d_A_f[i] = A[i] * 2.0"}},
	{name: "mod_shifted_quotient", src: "Y[h] = X[(h + 7) % 3] * X[(h - 4) % 3] * W[h]", shapes: [][]int64{{3}, {7}}},
	{name: "nested_divmod", src: "Y[h] = X[h / 2 % 3, h % 2] * W[h]", shapes: [][]int64{{3, 2}, {9}}},
	{name: "maxpool_padded", src: "Y[p] max= where(p*2+r-1 >= 0 && p*2+r-1 < N, X[p*2+r-1], -100.0)",
		consts: map[string]parse.ConstValue{"N": ci(7)}, shapes: [][]int64{{7}}, sizes: map[string]int64{"p": 4, "r": 3}},
	{name: "nonoverlapping_window", src: "Y[p,q] += X[2*p+r, 2*q+s] * W[r,s]", shapes: [][]int64{{6, 4}, {2, 2}},
		explain: []string{"d_X[x0, x1] = d_Y[x0 / 2, x1 / 2] * W[x0 % 2, x1 % 2]"}},
	// Smith normal form inversion (forced with snf: Gauss-Jordan handles
	// these too; TestInversionRouting). Explain must name the method.
	{name: "snf_2i_3j", snf: true, src: "Y[i,j] += X[2*i + 3*j] * W[i,j]", shapes: [][]int64{{11}, {3, 3}},
		explain: []string{"exact inversion (Smith normal form); reduces over t"}},
	{name: "snf_rank2_free", snf: true, src: "Y[i,j,k] += X[2*i + 4*j, 3*i + 5*k] * W[i,j,k]",
		shapes: [][]int64{{9, 17}, {3, 2, 3}}, explain: []string{"x0 % 2 == 0", "exact inversion (Smith normal form)"}},
	{name: "snf_rotated_guarded", snf: true,
		src:    "Y[i,j] = where(i - j + 2 >= 0 && i - j + 2 < 5, X[i + j, i - j + 2], 0.0) * W[i,j]",
		shapes: [][]int64{{7, 5}, {4, 4}}, explain: []string{"(x0 + x1) % 2 == 0", "exact inversion (Smith normal form)"}},
	{name: "snf_3x3_even", snf: true, src: "Y[i,j,k] = X[2*i + 2*j + 4*k, 2*i + 4*j + 2*k, 4*i + 2*j + 2*k] * W[i,j,k]",
		shapes: [][]int64{{9, 9, 9}, {2, 2, 2}}, explain: []string{"% 8 == 0", "exact inversion (Smith normal form)"}},
	{name: "snf_equality_row", snf: true, src: "Y[i] += X[i + j, 2*i + 2*j + 1] * W[i]",
		shapes: [][]int64{{5, 10}, {3}}, sizes: map[string]int64{"j": 3}, explain: []string{"x1 == 2 * x0 + 1"}},
	{name: "snf_divmod", snf: true, src: "Y[i,j] = X[(2*i + 3*j) / 4, (i + j) % 3] * W[i,j]",
		shapes: [][]int64{{4, 3}, {4, 4}}, explain: []string{"exact inversion (Smith normal form)"}},
	// i + 2*j is even (i has extent 1), so X is never read: Fourier-Motzkin
	// finds no solution in range and the gather is zero.
	{name: "snf_no_solution", snf: true, src: "Y[i,j] = where((i + 2*j) % 2 - 1 >= 0, X[(i + 2*j) % 2 - 1], 0.0) * W[i,j]",
		shapes: [][]int64{{1}, {1, 3}}, explain: []string{"d_X[x0] = where(0 > 1, W[0, 0], 0.0)"}},
	{name: "snf_conv_stride2", snf: true, src: "Y[n,k,p,q] += X[n,c,p*2+r,q*2+s] * W[k,c,r,s]",
		shapes: [][]int64{{1, 2, 7, 6}, {2, 2, 3, 2}}, explain: []string{"exact inversion (Smith normal form); reduces over k, t"}},
	{name: "wrt_subset", src: "Y[i,j] += A[i,k] * B[k,j]", shapes: [][]int64{{2, 3}, {3, 2}}, wrt: []bool{false, true}},
	{name: "two_outputs", src: "Y[i] = X[i] * 2.0\nZ[i] = exp(W[i])", shapes: [][]int64{{3}, {3}}, wrt: []bool{true, false}},
	// A scalar read where an index appears only in the guard: the gradient
	// anchors that index in another read (the body's, else the forward's).
	{name: "guard_only_index_scalar", src: "T0[] += V[i] * 2.0\nT1[j] += where(i > 0, T0[], 0.5) + W[j] + V[i]",
		shapes: [][]int64{{3}, {4}}},
	{name: "guard_only_index_scalar_no_body_read", src: "T0[] += V[i] * 2.0\nT1[] += where(i > 0, T0[], 0.5) + V[i]",
		shapes: [][]int64{{3}}},
}

func TestGradTable(t *testing.T) {
	for _, c := range gradCases {
		t.Run(c.name, func(t *testing.T) {
			g := c.run(t)
			ex := Explain(g)
			if c.snf {
				checkSNFNotes(t, g, false)
			}
			for _, frag := range c.explain {
				if !strings.Contains(ex, frag) {
					t.Errorf("Explain lacks %q:\n%s", frag, ex)
				}
			}
			if testing.Verbose() {
				t.Logf("\n%s", ex)
			}
		})
	}
}

// checkSNFNotes checks that a gradient derived with forceSNF inverted its
// reads through the Smith normal form, and used the indicator form only
// for reads that are not quasi-affine (allowed when nonAffineOK).
func checkSNFNotes(t *testing.T, g *GradOp, nonAffineOK bool) {
	t.Helper()
	snf := false
	for _, n := range g.notes {
		if strings.Contains(n, "exact inversion (Smith normal form)") {
			snf = true
		}
		if strings.Contains(n, "indicator") && !(nonAffineOK && strings.Contains(n, "is not quasi-affine")) {
			t.Errorf("indicator form for a quasi-affine read: %s", n)
		}
		if strings.Contains(n, "exact inversion (") && !strings.Contains(n, "Smith normal form") {
			t.Errorf("not through the Smith normal form: %s", n)
		}
	}
	if !snf && !nonAffineOK {
		t.Errorf("no read inverted through the Smith normal form:\n%s", Explain(g))
	}
}

// TestGradTableSNF runs the whole table with every quasi-affine read
// inverted through the Smith normal form: the gradients must match finite
// differences, and only the reads that are not quasi-affine may use the
// indicator form.
func TestGradTableSNF(t *testing.T) {
	for _, c := range gradCases {
		c.snf = true
		t.Run(c.name, func(t *testing.T) {
			g := c.run(t)
			checkSNFNotes(t, g, true)
		})
	}
}

// TestInversionRouting pins down which method inverts which read by
// default: Gauss-Jordan elimination whenever it succeeds (it does on all
// of these, including the systems with non-unit coefficients and several
// dependent variables), the indicator form only for reads that are not
// quasi-affine.
func TestInversionRouting(t *testing.T) {
	for _, c := range gradCases {
		t.Run(c.name, func(t *testing.T) {
			spec := specialize(t, c)
			g, err := Grad(spec, allTrue(len(spec.Op.Inputs)))
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range g.notes {
				switch {
				case strings.Contains(n, "Smith normal form"):
					t.Errorf("default routing used the Smith normal form: %s", n)
				case strings.Contains(n, "indicator") && !strings.Contains(n, "is not quasi-affine"):
					t.Errorf("indicator form for a quasi-affine read: %s", n)
				}
			}
		})
	}
}
