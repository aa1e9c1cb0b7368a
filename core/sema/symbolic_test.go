package sema

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/neoflow/neoflow/core/bounds"
	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/parse"
)

type symTest struct {
	desc   string
	src    string
	shapes [][]int64 // the representative shapes
	dims   map[string][]string
	least  map[string]int64
	want   []string // per statement: its symbolic variables, "i:s j:t"
	guards string   // the launch guards, printed
	err    string
}

var symTests = []symTest{
	{
		desc: "a batch dimension through a softmax", src: "M[i] max= X[i, j]\nE[i, j] = exp(X[i, j] - M[i])\nS[i] += E[i, j]\nY[i, j] = E[i, j] / S[i]",
		shapes: [][]int64{{8, 5}}, dims: map[string][]string{"X": {"s"}},
		want: []string{"i:s", "i:s", "i:s", "i:s"},
	},
	{
		desc: "batch and sequence of a linear layer", src: "Y[b, t, o] += X[b, t, k] * W[o, k]",
		shapes: [][]int64{{4, 6, 3}, {2, 3}}, dims: map[string][]string{"X": {"s", "t"}},
		want: []string{"b:s t:t"},
	},
	{
		desc: "a reduction over a symbolic length", src: "Y[b] += X[b, t]",
		shapes: [][]int64{{4, 6}}, dims: map[string][]string{"X": {"", "t"}},
		want: []string{"t:t"},
	},
	{
		desc: "a guarded shift along a symbolic length", src: "Y[b, t] = where(t > 0, X[b, t - 1], 0.0) + X[b, t]",
		shapes: [][]int64{{4, 6}}, dims: map[string][]string{"X": {"", "t"}},
		want: []string{"t:t"},
	},
	{
		desc: "an unguarded shift reads past a symbolic end", src: "Y[b, t] = X[b, t] + X[b, t / 2 + 2]",
		shapes: [][]int64{{4, 6}}, dims: map[string][]string{"X": {"", "t"}},
		err: "access X[b, t / 2 + 2] may be out of bounds for some sizes: dimension 1 index t / 2 + 2 is neither proven nor guarded within [0, size t)",
	},

	{
		desc: "a window of one size into another", src: "Y[i] = X[i] + Z[i + 2]",
		shapes: [][]int64{{5}, {9}}, dims: map[string][]string{"X": {"s"}, "Z": {"t"}},
		want: []string{"i:s"}, guards: "[-$s + $t - 2 >= 0]",
	},
	{
		desc: "a guarded shift that needs a least size", src: "Y[i] = where(i < 7, X[i + 1], 0.0) + X[i]",
		shapes: [][]int64{{8}}, dims: map[string][]string{"X": {"s"}},
		want: []string{"i:s"}, guards: "[$s - 8 >= 0]",
	},
	{
		desc: "a fixed window within a least size", src: "Y[i] += X[i, k]\nZ[k] += X[i, k]",
		shapes: [][]int64{{8, 4}}, dims: map[string][]string{"X": {"s"}}, least: map[string]int64{"s": 2},
		want: []string{"i:s", "i:s"},
	},
	{
		desc: "two sizes that disagree", src: "Y[i] = X[i]\nV[j] = Z[j]",
		shapes: [][]int64{{8}, {6}}, dims: map[string][]string{"X": {"s"}, "Z": {"s"}},
		err: "size s is 8 in one dimension and 6",
	},
}

func symString(m map[string]string) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, k+":"+m[k])
	}
	return strings.Join(parts, " ")
}

func TestProveSymbolic(t *testing.T) {
	for _, tc := range symTests {
		t.Run(tc.desc, func(t *testing.T) {
			op := mustParse(t, tc.src, parse.Options{})
			spec, err := Specialize(op, ir.Float32, tc.shapes, nil)
			if err != nil {
				t.Fatal(err)
			}
			got, guards, err := ProveSymbolic(spec, tc.dims, tc.least, nil)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("got %v, want an error containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var gs []string
			for _, m := range got {
				gs = append(gs, symString(m))
			}
			if !slices.Equal(gs, tc.want) {
				t.Errorf("symbolic variables: got %q, want %q", gs, tc.want)
			}
			if g := fmt.Sprint(guards); len(guards) > 0 || tc.guards != "" {
				if g != tc.guards {
					t.Errorf("guards: got %s, want %s", g, tc.guards)
				}
			}
			crossCheck(t, op, tc, guards)
		})
	}
}

// crossCheck specializes an accepted op concretely, with its bounds proof,
// at every combination of sizes from each size variable's least value to
// nine past it that meets the launch guards: what ProveSymbolic proves for
// those sizes the concrete proof must accept at each. At least one
// combination must meet them.
func crossCheck(t *testing.T, op *ir.Op, tc symTest, guards []bounds.Guard) {
	t.Helper()
	var names []string
	for _, dims := range tc.dims {
		for _, s := range dims {
			if s != "" && !slices.Contains(names, s) {
				names = append(names, s)
			}
		}
	}
	slices.Sort(names)
	met := 0
	for combo := 0; combo < pow(10, len(names)); combo++ {
		values, c := map[string]int64{}, combo
		for _, s := range names {
			values[s] = max(tc.least[s], 1) + int64(c%10)
			c /= 10
		}
		named := map[string]int64{}
		for s, v := range values {
			named["$"+s] = v
		}
		if slices.ContainsFunc(guards, func(g bounds.Guard) bool { return !g.Holds(named) }) {
			continue
		}
		met++
		var shapes [][]int64
		for i, name := range op.Inputs {
			shape := slices.Clone(tc.shapes[i])
			for d, s := range tc.dims[name] {
				if s != "" {
					shape[d] = values[s]
				}
			}
			shapes = append(shapes, shape)
		}
		if _, err := Specialize(op, ir.Float32, shapes, nil); err != nil {
			t.Errorf("proven for sizes %v, but shapes %v do not specialize: %v", values, shapes, err)
		}
	}
	if met == 0 {
		t.Errorf("no sizes tried meet the guards %v", guards)
	}
}

func pow(b, e int) int {
	n := 1
	for range e {
		n *= b
	}
	return n
}
