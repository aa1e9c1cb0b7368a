package testops

import (
	"github.com/pkg/errors"

	"github.com/neoflow/neoflow/core/autodiff"
	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/parse"
	"github.com/neoflow/neoflow/core/sema"
)

// Op is a test operator: its source, input shapes and optional sizes and
// constants.
type Op struct {
	Name   string
	Src    string
	Shapes [][]int64
	Sizes  map[string]int64
	Consts map[string]parse.ConstValue
	// Positive asks for inputs in (0.5, 1.5] instead of [-1, 1) (for log,
	// sqrt, pow, division).
	Positive bool
}

// Spec parses and specializes the op for dt.
func (o Op) Spec(dt ir.DType) (*ir.Spec, error) {
	op, err := parse.Parse(o.Src, parse.Options{Name: o.Name, Consts: o.Consts})
	if err != nil {
		return nil, errors.Wrapf(err, "parsing %s", o.Name)
	}
	spec, err := sema.Specialize(op, dt, o.Shapes, o.Sizes)
	if err != nil {
		return nil, errors.Wrapf(err, "specializing %s", o.Name)
	}
	return spec, nil
}

func shapes(s ...[]int64) [][]int64 { return s }

// All is the table, in a fixed order.
var All = []Op{
	{Name: "matmul", Src: "C[i, j] += A[i, k] * B[k, j]", Shapes: shapes([]int64{33, 20}, []int64{20, 37})},
	{Name: "matmul_aligned", Src: "C[i, j] += A[i, k] * B[k, j]", Shapes: shapes([]int64{64, 32}, []int64{32, 48})},
	{Name: "bmm", Src: "C[b, i, j] += A[b, i, k] * B[b, k, j]", Shapes: shapes([]int64{3, 5, 7}, []int64{3, 7, 19})},
	{Name: "conv_stride2", Src: "Y[n, k, p, q] += X[n, c, p*2 + r, q*2 + s] * W[k, c, r, s]",
		Shapes: shapes([]int64{2, 3, 17, 21}, []int64{4, 3, 3, 3})},
	{Name: "conv_pad", Src: "Y[n, k, p, q] += where(p + r - 1 >= 0 && p + r - 1 < H && q + s - 1 >= 0 && q + s - 1 < W, X[n, c, p + r - 1, q + s - 1], 0.0) * Wt[k, c, r, s]",
		Shapes: shapes([]int64{2, 3, 9, 11}, []int64{5, 3, 3, 3}), Sizes: map[string]int64{"p": 9, "q": 11},
		Consts: map[string]parse.ConstValue{"H": {Int: 9}, "W": {Int: 11}}},
	// The gather form of conv_stride2's input gradient (core/autodiff):
	// guards that skip inner loops once hoisted.
	{Name: "strided_grad", Src: "dX[n, c, x] += where((x - r) % 2 == 0 && (x - r) / 2 >= 0 && (x - r) / 2 < 7, dY[n, k, (x - r) / 2] * W[k, c, r], 0.0)",
		Shapes: shapes([]int64{2, 4, 7}, []int64{4, 3, 3}), Sizes: map[string]int64{"x": 15, "r": 3}},
	// The gather form of a padded conv's input gradient: a guard on the
	// lane axis, rendered as a blend with masked loads (kernels/cgen).
	{Name: "padded_grad", Src: "dX[n, c, x] += where(x - r >= 0 && x - r < 14, dY[n, c, x - r] * W[c, r], 0.0)",
		Shapes: shapes([]int64{2, 3, 14}, []int64{3, 3}), Sizes: map[string]int64{"x": 16, "r": 3}},
	// A blended where whose discarded operand is -inf or NaN.
	{Name: "guarded_log", Src: "Y[i, j] = where(j >= 3, log(X[i, j - 3]), X[i, 0] - 1.0)",
		Shapes: shapes([]int64{4, 21}), Sizes: map[string]int64{"j": 24}},
	{Name: "maxpool", Src: "Y[n, c, p, q] max= X[n, c, p*2 + r, q*2 + s]", Shapes: shapes([]int64{2, 3, 10, 13}),
		Sizes: map[string]int64{"r": 2, "s": 2}},
	{Name: "softmax", Src: "M[i] max= X[i, j]\nE[i, j] = exp(X[i, j] - M[i])\nS[i] += E[i, j]\nY[i, j] = E[i, j] / S[i]",
		Shapes: shapes([]int64{7, 19})},
	{Name: "sum_all", Src: "S[] += X[i, j]", Shapes: shapes([]int64{13, 29})},
	{Name: "prod_min", Src: "P[i] *= X[i, j]\nQ[i] min= X[i, j] + P[i]", Shapes: shapes([]int64{9, 3})},
	{Name: "depth2space", Src: "Y[n, c, h, w] = X[n, c + (h % 2) * 2 + (w % 2) * 4, h / 2, w / 2]",
		Shapes: shapes([]int64{2, 8, 3, 5}), Sizes: map[string]int64{"c": 2, "h": 6, "w": 10}},
	{Name: "unary_math", Src: "Y[i, j] = exp(X[i, j]) + tanh(X[i, j]) * sigmoid(X[i, j]) - relu(X[i, j]) + abs(X[i, j]) * erf(X[i, j]) - max(X[i, j], 0.25) + min(X[i, j], -0.25)",
		Shapes: shapes([]int64{5, 23})},
	{Name: "positive_math", Src: "Y[i] = log(X[i]) + sqrt(X[i]) * rsqrt(X[i]) + pow(X[i], 1.7) + X[i] / (X[i] + 1.0)",
		Shapes: shapes([]int64{41}), Positive: true},
	{Name: "value_mod", Src: "Y[i, j] = (X[i, j] * 7.0) % 0.75 + (X[i, j] * -3.0) % 1.5", Shapes: shapes([]int64{6, 17})},
	{Name: "neg_index_div", Src: "Y[i] = X[(i - 7) / 3 + 3] + X[(i - 5) % 4] + (i - 9) / 2 * 1.0 + (i - 9) % 4",
		Shapes: shapes([]int64{8}), Sizes: map[string]int64{"i": 15}},
	{Name: "index_values", Src: "Y[i, j] = where(i > j, i - j, j * 2 - i) + abs(i - 3) * 0.5 + max(i, j) - min(i - 2, j) + (i * j) % 3",
		Shapes: nil, Sizes: map[string]int64{"i": 5, "j": 21}},
}

// Lookup finds an op by name.
func Lookup(name string) (Op, bool) {
	for _, o := range All {
		if o.Name == name {
			return o, true
		}
	}
	return Op{}, false
}

// GradSpec derives the gradient of o's dt specialization with respect to
// every input and specializes it for o's shapes.
func (o Op) GradSpec(dt ir.DType) (*ir.Spec, *autodiff.GradOp, error) {
	fwd, err := o.Spec(dt)
	if err != nil {
		return nil, nil, err
	}
	wrt := make([]bool, len(fwd.InputsDecl()))
	for i := range wrt {
		wrt[i] = true
	}
	g, err := autodiff.Grad(fwd, wrt)
	if err != nil {
		return nil, nil, errors.Wrapf(err, "differentiating %s", o.Name)
	}
	var shapes [][]int64
	for _, d := range append(fwd.InputsDecl(), fwd.Outputs()...) {
		shapes = append(shapes, d.Shape)
	}
	spec, err := sema.Specialize(g.Op, dt, shapes, g.Sizes)
	if err != nil {
		return nil, nil, errors.Wrapf(err, "specializing the gradient of %s", o.Name)
	}
	return spec, g, nil
}
