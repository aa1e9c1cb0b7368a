package autodiff

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/parse"
	"github.com/neoflow/neoflow/core/sema"
)

// Repeated factors and terms (product.go, table.go), checked against finite
// differences like the gradient table.
var repeatCases = []gcase{
	{name: "power_as_product", src: "Y[i] = X[i] * X[i] * X[i] * W[i]", shapes: [][]int64{{3}, {3}},
		explain: []string{"3.0 * (X[i] * X[i])"}},
	{name: "power_as_pow", src: "Y[i] = X[i] * X[i] * W[i] * X[i] * X[i] * X[i] * X[i]", shapes: [][]int64{{3}, {3}},
		explain: []string{"6.0 * pow(X[i], 5.0)"}},
	{name: "repeated_subexpressions", src: "Y[i] = exp(X[i]) * (X[i] + W[i]) * exp(X[i]) * W[i] * (X[i] + W[i]) * exp(X[i])",
		shapes: [][]int64{{4}, {4}}},
	{name: "repeated_index_factor", src: "Y[i] = X[i] * i * X[i] * i * i * i * i * i", shapes: [][]int64{{4}}},
	{name: "repeated_negative_base", src: "Y[i] = X[i] * X[i] * X[i] * X[i] * X[i] * X[i] * X[i]", shapes: [][]int64{{5}},
		lo: -1.5, hi: -0.5},
	{name: "repeated_guarded", src: "Y[i] = where(i > 0, X[i - 1], 1.0) * where(i > 0, X[i - 1], 1.0) * X[i] * where(i > 0, X[i - 1], 1.0)",
		shapes: [][]int64{{5}}},
	{name: "repeated_in_reduction", src: "Y[i] += X[i, k] * W[k] * X[i, k] * X[i, k] * X[i, k] * X[i, k] * X[i, k]",
		shapes: [][]int64{{2, 3}, {3}}},
	{name: "repeated_terms", src: "Y[i] = X[i] + X[i] + 2.0 * X[i] + X[i] - X[i] + X[i] * W[i] + X[i] * W[i]",
		shapes: [][]int64{{3}, {3}}, explain: []string{"d_X[i] = 3.0 * d_Y[i] + ", "2.0 * (d_Y[i] * W[i])"}},
	{name: "shifted_terms_inlined", src: "Y[i] = X[i] + X[i + 1] * W[i] + X[i + 2]", shapes: [][]int64{{6}, {4}},
		sizes: map[string]int64{"i": 4}, explain: []string{"sum of 3 parts, 3 inlined"}},
	{name: "shifted_and_reduced_parts", src: "Y[i] += X[i + k] * W[k] + X[i]", shapes: [][]int64{{6}, {3}},
		sizes: map[string]int64{"i": 4}},
}

func TestGradRepeats(t *testing.T) {
	for _, c := range repeatCases {
		t.Run(c.name, func(t *testing.T) {
			ex := Explain(c.run(t))
			for _, frag := range c.explain {
				if !strings.Contains(ex, frag) {
					t.Errorf("Explain lacks %q:\n%s", frag, ex)
				}
			}
		})
	}
}

// longExpr is "Y[i] = " and n terms joined by op: X[i] (same), X[i + k]
// (shifted) or Tk[i] (inputs).
func longExpr(n int, op, kind string) string {
	terms := make([]string, n)
	for k := range terms {
		switch kind {
		case "same":
			terms[k] = "X[i]"
		case "shifted":
			terms[k] = fmt.Sprintf("X[i + %d]", k)
		default:
			terms[k] = fmt.Sprintf("T%d[i]", k)
		}
	}
	return "Y[i] = " + strings.Join(terms, " "+op+" ")
}

// within runs f and fails the test when it takes longer than limit (or
// than the test's deadline allows) instead of hanging.
func within(t *testing.T, limit time.Duration, f func()) {
	t.Helper()
	if dl, ok := t.Deadline(); ok {
		limit = min(limit, time.Until(dl)/2)
	}
	done := make(chan struct{})
	start := time.Now()
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
		t.Logf("took %v", time.Since(start))
	case <-time.After(limit):
		t.Fatalf("did not finish within %v", limit)
	}
}

// TestGradLongExpressions: a 2,000-factor product and a 2,000-term sum of
// one read differentiate in well under a second (the derivative of the
// product is 2000 * pow(X[i], 1999)) and match finite differences; sums of
// 2,000 distinct reads are linear too.
func TestGradLongExpressions(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		shapes    [][]int64
		maxNodes  int // of the gradient op
	}{
		{"product_2000", longExpr(2000, "*", "same"), [][]int64{{3}}, 20},
		{"sum_2000", longExpr(2000, "+", "same"), [][]int64{{3}}, 20},
		{"sum_2000_shifted", longExpr(2000, "+", "shifted"), [][]int64{{2002}}, 50_000},
		{"sum_2000_inputs", longExpr(2000, "+", "inputs"), nil, 20_000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := gcase{name: tc.name, src: tc.src, shapes: tc.shapes, lo: 0.999, hi: 1.001}
			if tc.shapes == nil {
				for range 2000 {
					c.shapes = append(c.shapes, []int64{2})
				}
			}
			var g *GradOp
			var err error
			var spec *ir.Spec
			within(t, 5*time.Second, func() {
				op, perr := parse.Parse(c.src, parse.Options{Name: c.name})
				if perr != nil {
					err = perr
					return
				}
				if spec, err = sema.Specialize(op, ir.Float64, c.shapes, nil); err == nil {
					g, err = Grad(spec, allTrue(len(op.Inputs)))
				}
			})
			if err != nil {
				t.Fatal(err)
			}
			if n := ir.OpNodes(g.Op); n > tc.maxNodes {
				t.Errorf("the gradient op has %d nodes, want at most %d", n, tc.maxNodes)
			}
			if tc.name == "product_2000" || tc.name == "sum_2000" {
				r := rand.New(rand.NewPCG(1, 2))
				xs := randomInputs(r, spec, c.lo, c.hi)
				_, gs := gradSpec(t, spec, allTrue(1))
				checkFD(t, spec, g, gs, xs, randomGrads(r, spec), allTrue(1), 1e-5)
			}
		})
	}
}

// TestGradTooLarge: a gradient past ir.MaxNodes (the partials of a product
// of many distinct reads are quadratic) is refused at once with an
// "expression too large" error naming the limit.
func TestGradTooLarge(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		shapes    [][]int64
	}{
		{"shifted_product", longExpr(2000, "*", "shifted"), [][]int64{{2002}}},
		{"product_of_inputs", longExpr(1000, "*", "inputs"), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			shapes := tc.shapes
			if shapes == nil {
				for range 1000 {
					shapes = append(shapes, []int64{2})
				}
			}
			var err error
			within(t, 5*time.Second, func() {
				op, perr := parse.Parse(tc.src, parse.Options{Name: tc.name})
				if perr != nil {
					err = perr
					return
				}
				spec, serr := sema.Specialize(op, ir.Float64, shapes, nil)
				if serr != nil {
					err = serr
					return
				}
				_, err = Grad(spec, allTrue(len(op.Inputs)))
			})
			want := fmt.Sprintf("expression too large: the gradient of op %s (through statement 1, ", tc.name)
			if err == nil || !strings.HasPrefix(err.Error(), want) || !strings.Contains(err.Error(), "the limit is 50000 (ir.MaxNodes)") {
				t.Fatalf("got %v, want an error starting %q", err, want)
			}
		})
	}
}
