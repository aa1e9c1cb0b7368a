package loops

import (
	"slices"
	"strings"
	"testing"

	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/parse"
	"github.com/neoflow/neoflow/core/sema"
)

// parsed specializes src (float32) with the given input shapes and sizes.
func parsed(t *testing.T, src string, shapes [][]int64, sizes map[string]int64) *ir.Spec {
	t.Helper()
	op, err := parse.Parse(src, parse.Options{Name: "s"})
	if err != nil {
		t.Fatalf("%s: %v", src, err)
	}
	s, err := sema.Specialize(op, ir.Float32, shapes, sizes)
	if err != nil {
		t.Fatalf("%s: %v", src, err)
	}
	return s
}

type scatterCase struct {
	src    string
	shapes [][]int64
	sizes  map[string]int64
	// scatter: the statement lowers as a scatter; dump lists fragments
	// of its dump.
	scatter bool
	dump    []string
}

var scatterCases = []scatterCase{
	{src: "d_X[z] += where((i*i) % 5 == z, d_Y[i], 0.0)", shapes: [][]int64{{7}}, sizes: map[string]int64{"z": 5, "i": 7},
		scatter: true, dump: []string{"d_X[i * i % 5] += d_Y[i]"}},
	// z == e, an integer zero.
	{src: "d_X[z] += where(z == (i*i) % 5, d_Y[i], 0)", shapes: [][]int64{{7}}, sizes: map[string]int64{"z": 5, "i": 7},
		scatter: true, dump: []string{"d_X[i * i % 5] += d_Y[i]"}},
	// Out of range on both sides: both checks.
	{src: "d_X[z] += where(i*i - 4 == z, d_Y[i], 0.0)", shapes: [][]int64{{7}}, sizes: map[string]int64{"z": 5, "i": 7},
		scatter: true, dump: []string{"if i * i - 4 >= 0 && i * i - 4 < 5", "d_X[i * i - 4] += d_Y[i]"}},
	{src: "d_X[z1, z2] += where(i*j == z1 && j == z2, d_Y[i, j] * W[j], 0.0)", shapes: [][]int64{{4, 3}, {3}},
		sizes:   map[string]int64{"z1": 9, "z2": 3, "i": 4, "j": 3},
		scatter: true, dump: []string{"d_X[i * j, j] += d_Y[i, j] * W[j]", "for i < 4", "for j < 3"}},
	// The equalities split over nested wheres; guards kept in order.
	{src: "d_X[z1, z2] += where(i % 2 == 1 && i*j == z1, where(j == z2 && d_Y[i, j] > 0.0, d_Y[i, j], 0.0), 0.0)", shapes: [][]int64{{4, 3}},
		sizes:   map[string]int64{"z1": 5, "z2": 3, "i": 4, "j": 3},
		scatter: true, dump: []string{"if i % 2 == 1 && i * j < 5 && d_Y[i, j] > 0.0", "d_X[i * j, j] += d_Y[i, j]"}},
	// What autodiff emits: a never-taken read of X around the indicator,
	// and one after it for a variable only the guards use.
	{src: "d_X[x0] += where(0 > 1, X[0], where(i * i == x0, d_Y[i], 0.0))", shapes: [][]int64{{5}, {3}},
		sizes: map[string]int64{"x0": 5, "i": 3}, scatter: true, dump: []string{"d_X[i * i] += d_Y[i]"}},
	{src: "d_X[x0] += where(i * j % 5 == x0, where(j == A[i], d_Y[i], 0.0), 0.0) + where(j < 0, X[j], 0.0)",
		shapes: [][]int64{{3}, {3}, {5}}, sizes: map[string]int64{"x0": 5, "i": 3, "j": 4},
		scatter: true, dump: []string{"if j == A[i]", "d_X[i * j % 5] += d_Y[i]"}},
	// An extent-1 reduction variable is bound to 0.
	{src: "d_X[z] += where(i * k == z, d_Y[i, k], 0.0)", shapes: [][]int64{{4, 1}}, sizes: map[string]int64{"z": 5, "i": 4, "k": 1},
		scatter: true, dump: []string{"d_X[0] += d_Y[i, 0]"}},

	// z2 has no equality: a free axis, looped inside the guard (the
	// guard on it inside), in blocks of 16 lanes run in parallel when it
	// is long enough.
	{src: "d_X[z1, z2] += where(i*j == z1 && z2 < 2, d_Y[i, j], 0.0)", shapes: [][]int64{{4, 3}}, sizes: map[string]int64{"z1": 9, "z2": 3, "i": 4, "j": 3},
		scatter: true, dump: []string{"vector for z2 < 3", "if z2 < 2", "d_X[i * j, z2] += d_Y[i, j]"}},
	{src: "d_X[z1, z2] += where(i*j == z1, d_Y[i, z2] * W[j], 0.0)", shapes: [][]int64{{4, 3}, {3}}, sizes: map[string]int64{"z1": 9, "i": 4, "j": 3},
		scatter: true, dump: []string{"d_X[i * j, z2] += d_Y[i, z2] * W[j]"}},
	{src: "Y[v, f] += where(v == e / 2, X[e, f], 0.0)", shapes: [][]int64{{5, 64}}, sizes: map[string]int64{"v": 3},
		scatter: true, dump: []string{"parallel(1) for f.blk < 4", "vector for f.ln < 16", "Y[e / 2, f.blk * 16 + f.ln] += X[e, f.blk * 16 + f.ln]"}},

	// Look-alikes keep the gather.
	// z in the body.
	{src: "d_X[z] += where((i*i) % 5 == z, d_Y[i] * z, 0.0)", shapes: [][]int64{{7}}, sizes: map[string]int64{"z": 5, "i": 7}},
	// A free variable in the target.
	{src: "d_X[z1, z2] += where(i + z2 == z1, d_Y[i, z2], 0.0)", shapes: [][]int64{{4, 3}}, sizes: map[string]int64{"z1": 9, "i": 4}},
	// z in another conjunct, in e, twice.
	{src: "d_X[z] += where((i*i) % 5 == z && z > 0, d_Y[i], 0.0)", shapes: [][]int64{{7}}, sizes: map[string]int64{"z": 5, "i": 7}},
	{src: "d_X[z1, z2] += where(i + z2 == z1 && j == z2, d_Y[i, j], 0.0)", shapes: [][]int64{{4, 3}}, sizes: map[string]int64{"z1": 9, "z2": 3, "i": 4, "j": 3}},
	{src: "d_X[z] += where((i*i) % 5 == z && i % 5 == z, d_Y[i], 0.0)", shapes: [][]int64{{7}}, sizes: map[string]int64{"z": 5, "i": 7}},
	// Not a zero else branch, not +=, not a where at the top.
	{src: "d_X[z] += where((i*i) % 5 == z, d_Y[i], 1.0)", shapes: [][]int64{{7}}, sizes: map[string]int64{"z": 5, "i": 7}},
	{src: "d_X[z] max= where((i*i) % 5 == z, d_Y[i], 0.0)", shapes: [][]int64{{7}}, sizes: map[string]int64{"z": 5, "i": 7}},
	{src: "d_X[z] += where((i*i) % 5 == z, d_Y[i], 0.0) * 2.0", shapes: [][]int64{{7}}, sizes: map[string]int64{"z": 5, "i": 7}},
	{src: "d_X[z] += where((i*i) % 5 == z || i == 0, d_Y[i], 0.0)", shapes: [][]int64{{7}}, sizes: map[string]int64{"z": 5, "i": 7}},
	// A value equality.
	{src: "d_X[z] += where(d_Y[i] == z, d_Y[i], 0.0)", shapes: [][]int64{{7}}, sizes: map[string]int64{"z": 5, "i": 7}},
	// A plain gather.
	{src: "C[i, j] += A[i, k] * B[k, j]", shapes: [][]int64{{4, 3}, {3, 5}}},
}

func TestScatterRecognition(t *testing.T) {
	for _, c := range scatterCases {
		s := parsed(t, c.src, c.shapes, c.sizes)
		sched := DefaultSchedule(s, 0)
		if sched.Scatter != c.scatter {
			t.Errorf("%s: scatter %v, want %v", c.src, sched.Scatter, c.scatter)
			continue
		}
		got := Dump(lower(t, s))
		gather, err := LowerWith(s, GatherSchedule)
		if err != nil {
			t.Fatal(err)
		}
		if !c.scatter {
			// Lowered exactly as before.
			if want := Dump(gather); got != want {
				t.Errorf("%s: lowering changed:\n%s\nwant\n%s", c.src, got, want)
			}
			continue
		}
		if strings.Contains(Dump(gather), "scatter") {
			t.Errorf("%s: GatherSchedule gives a scatter:\n%s", c.src, Dump(gather))
		}
		for _, want := range append(c.dump, "block  // zero fill", "scatter over") {
			if !strings.Contains(got, want) {
				t.Errorf("%s: dump lacks %q:\n%s", c.src, want, got)
			}
		}
		// The scatter loops are serial and scalar, but those of free axes.
		sc := lower(t, s).Nests[0].Body[1].(*Block)
		var visit func([]Node)
		visit = func(ns []Node) {
			for _, n := range ns {
				switch n := n.(type) {
				case *Loop:
					if (n.Parallel || n.Vector) && !freeAxisLoop(s.Stmts[0], n.Var) {
						t.Errorf("%s: scatter loop %s is parallel or vector", c.src, n.Var)
					}
					visit(n.Body)
				case *If:
					visit(n.Body)
				}
			}
		}
		visit(sc.Body)
	}
}

func TestScatterScheduleErrors(t *testing.T) {
	s := matmulSpec(ir.Float32, 4, 4, 4)
	if _, err := LowerStmt(s, 0, Schedule{VectorWidth: 1, Scatter: true}); err == nil || !strings.Contains(err.Error(), "scatter form") {
		t.Errorf("scatter schedule on matmul: %v", err)
	}
	g := goldenSpecs()["scatter_2d"]
	// The fill has no reduction axis to put lanes on.
	if _, err := LowerStmt(g, 0, Schedule{VectorWidth: 2, VectorAxis: "i", Scatter: true}); err == nil {
		t.Error("scatter fill with lanes over a reduction axis accepted")
	}
	// A custom fill schedule.
	n, err := LowerStmt(g, 0, Schedule{VectorWidth: 2, Order: []string{"z2", "z1"}, ParallelDepth: 1, Scatter: true})
	if err != nil {
		t.Fatal(err)
	}
	got := Dump(&Func{Spec: g, Nests: []*Nest{n}})
	for _, want := range []string{"(scatter, vector 2 order [z2 z1], parallel 1)", "parallel(1) for z2 < 3", "vector for z1.l < 2", "remainder: z1 in [4, 5)"} {
		if !strings.Contains(got, want) {
			t.Errorf("dump lacks %q:\n%s", want, got)
		}
	}
}

func TestConstBool(t *testing.T) {
	ext := map[string]int64{"i": 4, "j": 3}
	for _, c := range []struct {
		e        ir.Expr
		val, ok  bool
		describe string
	}{
		{bin(ir.Gt, lit(0), lit(1)), false, true, "0 > 1"},
		{bin(ir.Lt, ix("j"), lit(0)), false, true, "j < 0"},
		{bin(ir.Ge, ix("j"), lit(0)), true, true, "j >= 0"},
		{bin(ir.Lt, ix("i"), lit(2)), false, false, "i < 2"},
		{bin(ir.Le, bin(ir.Mul, ix("i"), ix("j")), lit(6)), true, true, "i * j <= 6"},
		{bin(ir.Eq, bin(ir.Mod, ix("i"), lit(3)), lit(5)), false, true, "i % 3 == 5"},
		{bin(ir.Ne, lit(2), lit(2)), false, true, "2 != 2"},
		{bin(ir.And, bin(ir.Lt, ix("i"), lit(2)), bin(ir.Gt, lit(0), lit(1))), false, true, "i < 2 && 0 > 1"},
		{bin(ir.Or, bin(ir.Lt, ix("i"), lit(2)), bin(ir.Gt, lit(0), lit(1))), false, false, "i < 2 || 0 > 1"},
		{&ir.Unary{Op: ir.Not, X: bin(ir.Lt, ix("j"), lit(0))}, true, true, "!(j < 0)"},
		{bin(ir.Gt, flit(0), flit(1)), false, false, "0.0 > 1.0 (values are not decided)"},
		{bin(ir.Lt, ix("k"), lit(0)), false, false, "k unknown"},
	} {
		val, ok := constBool(c.e, ext)
		if ok != c.ok || ok && val != c.val {
			t.Errorf("%s: got %v, %v; want %v, %v", c.describe, val, ok, c.val, c.ok)
		}
	}
}

// freeAxisLoop reports whether loop variable v runs over a free axis of
// scatter statement st (a spatial axis, or a block or lane of one): the
// scatter block has no loop over a target axis.
func freeAxisLoop(st *ir.BoundStmt, v string) bool {
	base, _, _ := strings.Cut(v, ".")
	return slices.ContainsFunc(st.Spatial, func(ax ir.Var) bool { return ax.Name == base })
}
