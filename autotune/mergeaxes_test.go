package autotune

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/neoflow/neoflow/core/interp"
	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/loops"
	"github.com/neoflow/neoflow/internal/hostbuf"
	"github.com/neoflow/neoflow/internal/testops"
)

// TestMergedAxesMatchTheOriginal builds every test op and its gradient
// whose reduction axes merge (loops.MergeReductionAxes), float64, under
// the default schedules, the first build's and the search's first seeds
// (tiles and lanes over the merged axis), and compares the kernels'
// outputs with the interpreter's on the original, unmerged spec.
func TestMergedAxesMatchTheOriginal(t *testing.T) {
	b := testBuilder(t)
	merged := 0
	together := map[string]bool{"gw": true, "bnsum": true, "maxhw": true, "outer": true}
	apart := map[string]bool{"guarded": true, "shifted": true}
	for _, o := range append(mergeOps(), testops.All...) {
		specs := map[string]*ir.Spec{}
		if spec, err := o.Spec(ir.Float64); err == nil {
			specs[o.Name] = spec
		}
		if g, _, err := o.GradSpec(ir.Float64); err == nil {
			specs["d_"+o.Name] = g
		}
		for name, spec := range specs {
			m := loops.MergeReductionAxes(spec)
			if apart[name] && m != spec {
				t.Errorf("%s merged axes it must keep apart:\n%s", name, ir.PrintSpec(m))
			}
			if together[name] && m == spec {
				t.Errorf("%s merged no axes", name)
			}
			if m == spec {
				continue
			}
			merged++
			t.Run(name, func(t *testing.T) {
				inputs := hostbuf.RandomInputs(spec, o.Positive, 3)
				want, err := interp.Run(spec, inputs)
				if err != nil {
					t.Fatal(err)
				}
				sp := NewSpace(m)
				variants := [][]loops.Schedule{nil}
				if f := FirstSchedules(m); f != nil {
					variants = append(variants, f)
				}
				for i, g := range sp.Seeds() {
					if i > 0 && i < 6 {
						variants = append(variants, sp.Decode(g))
					}
				}
				for _, scheds := range variants {
					checkAgainst(t, b, m, scheds, inputs, want, 3) // want: the unmerged op's
				}
			})
		}
	}
	if merged < 5 {
		t.Fatalf("only %d test specs merge axes; the test checks too little", merged)
	}
	t.Logf("%d specs merge axes", merged)
}

// mergeOps are ops with reductions over adjacent dimensions: fixed ones
// (a grouped 1x1 convolution's weight gradient, batch-norm sums, a max, a
// reduction over the first two dimensions, axes that must stay apart) and
// generated ones: a sum of products of two tensors read with random axis
// orders, some of them guarded.
func mergeOps() []testops.Op {
	ops := []testops.Op{
		{Name: "gw", Src: "GW[o,c] += T[n,o,h,w] * X[n,(o/2)*3+c,h,w]", Shapes: [][]int64{{2, 4, 5, 7}, {2, 6, 5, 7}}, Sizes: map[string]int64{"c": 3}},
		{Name: "bnsum", Src: "S[c] += X[n,c,h,w] * X[n,c,h,w]", Shapes: [][]int64{{3, 4, 5, 6}}},
		{Name: "maxhw", Src: "M[n,c] max= X[n,c,h,w]", Shapes: [][]int64{{2, 3, 4, 9}}},
		{Name: "outer", Src: "Y[c] += X[n,h,c]", Shapes: [][]int64{{3, 5, 4}}},
		{Name: "guarded", Src: "Y[c] += where(w > 2, X[c,h,w], 0.0)", Shapes: [][]int64{{3, 4, 5}}},
		{Name: "shifted", Src: "Y[c] += X[c,h,w+1]", Shapes: [][]int64{{3, 4, 6}}, Sizes: map[string]int64{"w": 5}},
	}
	r := rand.New(rand.NewPCG(7, 11))
	names := []string{"a", "b", "c", "d"}
	for i := range 24 {
		rank := 3 + r.IntN(2)
		ext := make([]int64, rank)
		for d := range ext {
			ext[d] = int64(1 + r.IntN(6))
		}
		perm := r.Perm(rank)
		out := perm[:1+r.IntN(rank-1)]
		var outIdx []string
		for _, d := range out {
			outIdx = append(outIdx, names[d])
		}
		order := r.Perm(rank)
		if r.IntN(2) == 0 { // the output axes first, then the others in order: a merge is likely
			order = append(slices.Clone(out), slices.DeleteFunc(slices.Sorted(slices.Values(perm)), func(d int) bool { return slices.Contains(out, d) })...)
		}
		var xIdx []string
		xShape := make([]int64, rank)
		for k, d := range order {
			xIdx = append(xIdx, names[d])
			xShape[k] = ext[d]
		}
		rhs := fmt.Sprintf("X[%s]", strings.Join(xIdx, ","))
		shapes := [][]int64{xShape}
		if r.IntN(2) == 0 { // a second read of every axis in statement order
			rhs += fmt.Sprintf(" * Z[%s]", strings.Join(names[:rank], ","))
			shapes = append(shapes, ext)
		}
		if r.IntN(4) == 0 {
			rhs = fmt.Sprintf("where(%s > 0, %s, 0.0)", names[r.IntN(rank)], rhs)
		}
		ops = append(ops, testops.Op{Name: fmt.Sprintf("gen%d", i), Src: fmt.Sprintf("Y[%s] += %s", strings.Join(outIdx, ","), rhs), Shapes: shapes})
	}
	return ops
}
