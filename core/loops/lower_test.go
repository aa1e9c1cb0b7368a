package loops

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/neoflow/neoflow/core/ir"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from %s (run go test -update after checking):\n%s", name, path, got)
	}
}

func lower(t *testing.T, s *ir.Spec) *Func {
	t.Helper()
	fn, err := Lower(s)
	if err != nil {
		t.Fatal(err)
	}
	return fn
}

func goldenSpecs() map[string]*ir.Spec {
	f32, f64 := ir.Float32, ir.Float64
	in, out, tmp := ir.RoleInput, ir.RoleOutput, ir.RoleTemp
	return map[string]*ir.Spec{
		"matmul":     matmulSpec(f32, 64, 48, 32),
		"matmul_f64": matmulSpec(f64, 64, 48, 32),
		"tail":       matmulSpec(f32, 8, 20, 5),
		"scalar_sum": spec("sum", f64, []*ir.TensorDecl{tensor("X", in, 100), tensor("S", out)},
			stmt("S", ir.Sum, at("X", ix("i")), nil, v("i", 100))),
		"inner1": spec("col", f32, []*ir.TensorDecl{tensor("X", in, 300, 7), tensor("Y", out, 300, 1)},
			stmt("Y", ir.Max, at("X", ix("i"), ix("k")), []ir.Var{v("i", 300), v("z", 1)}, v("k", 7))),
		"collapse": spec("relu4", f32, []*ir.TensorDecl{tensor("X", in, 2, 4, 8, 32), tensor("Y", out, 2, 4, 8, 32)},
			stmt("Y", ir.Assign, &ir.Call{Fn: ir.FuncRelu, Args: []ir.Expr{at("X", ix("n"), ix("c"), ix("h"), ix("w"))}},
				[]ir.Var{v("n", 2), v("c", 4), v("h", 8), v("w", 32)})),
		"tail_nocollapse": spec("scale", f32, []*ir.TensorDecl{tensor("X", in, 2, 40), tensor("Y", out, 2, 40)},
			stmt("Y", ir.Assign, bin(ir.Mul, at("X", ix("a"), ix("b")), flit(0.5)),
				[]ir.Var{v("a", 2), v("b", 40)})),
		"vec1d": spec("neg", f32, []*ir.TensorDecl{tensor("X", in, 100), tensor("Y", out, 100)},
			stmt("Y", ir.Assign, &ir.Unary{Op: ir.Neg, X: at("X", ix("i"))}, []ir.Var{v("i", 100)})),
		"tail1": spec("prod", f64, []*ir.TensorDecl{tensor("X", in, 9, 3), tensor("Y", out, 9)},
			stmt("Y", ir.Prod, at("X", ix("i"), ix("r")), []ir.Var{v("i", 9)}, v("r", 3))),
		"temps": spec("softmax", f32,
			[]*ir.TensorDecl{tensor("X", in, 4, 10), tensor("Y", out, 4, 10), tensor("M", tmp, 4), tensor("S", tmp, 4)},
			stmt("M", ir.Max, at("X", ix("i"), ix("j")), []ir.Var{v("i", 4)}, v("j", 10)),
			stmt("S", ir.Sum, &ir.Call{Fn: ir.FuncExp, Args: []ir.Expr{bin(ir.Sub, at("X", ix("i"), ix("j")), at("M", ix("i")))}},
				[]ir.Var{v("i", 4)}, v("j", 10)),
			stmt("Y", ir.Assign, bin(ir.Div, &ir.Call{Fn: ir.FuncExp, Args: []ir.Expr{bin(ir.Sub, at("X", ix("i"), ix("j")), at("M", ix("i")))}}, at("S", ix("i"))),
				[]ir.Var{v("i", 4), v("j", 10)})),
		// W is larger than X: lanes over k, j outside b.
		"lane_reduce": spec("gate", f32, []*ir.TensorDecl{tensor("W", in, 6, 37), tensor("X", in, 4, 37), tensor("WX", out, 4, 6)},
			stmt("WX", ir.Sum, bin(ir.Mul, at("W", ix("j"), ix("k")), at("X", ix("b"), ix("k"))),
				[]ir.Var{v("b", 4), v("j", 6)}, v("k", 37))),
		// Lanes over j (17 = 16 + 1) inside the other reduction loop r.
		"lane_reduce_tail1": spec("rowmax", f32, []*ir.TensorDecl{tensor("X", in, 3, 5, 17), tensor("M", out, 3)},
			stmt("M", ir.Max, at("X", ix("i"), ix("r"), ix("j")), []ir.Var{v("i", 3)}, v("r", 5), v("j", 17))),
		// The store is strided by 2 in a, both reads contiguous: lanes
		// over a, which moves innermost.
		"lane_spatial": spec("transpose2", f64, []*ir.TensorDecl{tensor("X", in, 2, 20), tensor("Z", in, 2, 20), tensor("Y", out, 20, 2)},
			stmt("Y", ir.Assign, bin(ir.Add, at("X", ix("b"), ix("a")), at("Z", ix("b"), ix("a"))),
				[]ir.Var{v("a", 20), v("b", 2)})),
		// The indicator gradient of Y[i] += X[(i*i) % 5] * ...: a zero
		// fill and a serial scatter; i*i % 5 is always in range.
		"scatter_square": spec("grad", f32, []*ir.TensorDecl{tensor("d_Y", in, 7), tensor("d_X", out, 5)},
			stmt("d_X", ir.Sum, where(bin(ir.Eq, bin(ir.Mod, bin(ir.Mul, ix("i"), ix("i")), lit(5)), ix("z")), at("d_Y", ix("i")), flit(0)),
				[]ir.Var{v("z", 5)}, v("i", 7))),
		// Two targets (z2 == j reversed), a guard before the equalities
		// and one reading a tensor after them, the dead branches autodiff
		// adds to read X, and i * j in [0, 6] checked against 5 only from
		// above.
		"scatter_2d": spec("grad2", f64,
			[]*ir.TensorDecl{tensor("d_Y", in, 4, 3), tensor("W", in, 3), tensor("X", in, 5, 3), tensor("d_X", out, 5, 3)},
			stmt("d_X", ir.Sum, bin(ir.Add,
				where(bin(ir.Gt, lit(0), lit(1)), at("X", lit(0), lit(0)),
					where(bin(ir.And, bin(ir.And, bin(ir.And,
						bin(ir.Eq, bin(ir.Mod, ix("i"), lit(2)), lit(0)),
						bin(ir.Eq, bin(ir.Mul, ix("i"), ix("j")), ix("z1"))),
						bin(ir.Eq, ix("z2"), ix("j"))),
						bin(ir.Gt, at("W", ix("j")), flit(0))),
						bin(ir.Mul, at("d_Y", ix("i"), ix("j")), at("W", ix("j"))), flit(0))),
				where(bin(ir.Lt, ix("j"), lit(0)), at("X", ix("j"), lit(0)), flit(0))),
				[]ir.Var{v("z1", 5), v("z2", 3)}, v("i", 4), v("j", 3))),
	}
}

func TestGoldenDumps(t *testing.T) {
	for name, s := range goldenSpecs() {
		t.Run(name, func(t *testing.T) { golden(t, name, Dump(lower(t, s))) })
	}
}

func TestDefaultSchedule(t *testing.T) {
	specs := goldenSpecs()
	for _, c := range []struct {
		name string
		stmt int
		want string
	}{
		{"matmul", 0, "vector 16, parallel 1"},
		{"matmul_f64", 0, "vector 8, parallel 1"},
		{"tail", 0, "vector 16, parallel 1"},
		{"scalar_sum", 0, "vector 8 over i, parallel 0"},
		{"inner1", 0, "vector 1, parallel 1"},
		{"collapse", 0, "vector 16, parallel 3"},
		{"tail_nocollapse", 0, "vector 16, parallel 1"},
		{"vec1d", 0, "vector 16, parallel 1"},
		{"tail1", 0, "vector 8, parallel 0"},
		{"temps", 0, "vector 4, parallel 0"},
		{"temps", 2, "vector 10, parallel 1"},
		{"lane_reduce", 0, "vector 16 over k order [j b], parallel 2"},
		{"lane_reduce_tail1", 0, "vector 16 over j, parallel 1"},
		{"lane_spatial", 0, "vector 8 over a order [b a], parallel 1"},
		{"scatter_square", 0, "scatter, vector 5, parallel 0"},
		{"scatter_2d", 0, "scatter, vector 3, parallel 1"},
	} {
		if got := DefaultSchedule(specs[c.name], c.stmt).String(); got != c.want {
			t.Errorf("%s stmt %d: got %s, want %s", c.name, c.stmt, got, c.want)
		}
	}
}

func TestLanesInnermostAndIndependent(t *testing.T) {
	fn := lower(t, matmulSpec(ir.Float32, 64, 48, 32))
	var visit func(nodes []Node, inLane bool)
	lanes := 0
	visit = func(nodes []Node, inLane bool) {
		for _, n := range nodes {
			if lp, ok := n.(*Loop); ok {
				if inLane {
					t.Errorf("loop %s nested in a lane loop", lp.Var)
				}
				if lp.Vector {
					lanes++
					if lp.Var != "j.l" || lp.Extent != 16 {
						t.Errorf("lane loop %s < %d", lp.Var, lp.Extent)
					}
				}
				visit(lp.Body, lp.Vector)
			}
		}
	}
	visit(fn.Nests[0].Body, false)
	if lanes != 3 {
		t.Errorf("got %d lane loops (init, update, store), want 3", lanes)
	}
}

func TestScheduleErrors(t *testing.T) {
	s := matmulSpec(ir.Float32, 64, 8, 32)
	for _, c := range []struct {
		sched Schedule
		want  string
	}{
		{Schedule{VectorWidth: 16}, "exceeds the extent 8"},
		{Schedule{VectorWidth: 0}, "vector width 0"},
		{Schedule{VectorWidth: 8, ParallelDepth: 2}, "parallel depth 2"},
	} {
		_, err := LowerStmt(s, 0, c.sched)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: got %v, want error containing %q", c.sched, err, c.want)
		}
	}
	// A depth that reaches past the remainder is rejected.
	s = matmulSpec(ir.Float32, 4, 40, 2)
	if _, err := LowerStmt(s, 0, Schedule{VectorWidth: 16, ParallelDepth: 2}); err == nil {
		t.Error("collapse over a loop followed by a remainder accepted")
	}
}

func TestSpecErrors(t *testing.T) {
	bad := matmulSpec(ir.Float32, 4, 4, 4)
	bad.Stmts[0].Spatial[1].Extent = 5
	if _, err := Lower(bad); err == nil || !strings.Contains(err.Error(), "extent 5") {
		t.Errorf("shape mismatch: %v", err)
	}
	bad = matmulSpec(ir.Float32, 4, 4, 4)
	bad.Stmts[0].Reduction = nil
	if _, err := Lower(bad); err == nil || !strings.Contains(err.Error(), "index variable k") {
		t.Errorf("unbound variable: %v", err)
	}
	bad = matmulSpec(ir.InvalidDType, 4, 4, 4)
	if _, err := Lower(bad); err == nil {
		t.Error("invalid dtype accepted")
	}
	if _, err := Lower(nil); err == nil {
		t.Error("nil spec accepted")
	}
}

func TestLowerWithCustomSchedule(t *testing.T) {
	s := matmulSpec(ir.Float32, 6, 10, 3)
	fn, err := LowerWith(s, func(*ir.Spec, int) Schedule { return Schedule{VectorWidth: 4, ParallelDepth: 1} })
	if err != nil {
		t.Fatal(err)
	}
	got := Dump(fn)
	for _, want := range []string{"(vector 4, parallel 1)", "parallel(1) for i < 6", "for j.o < 2", "vector for j.l < 4", "remainder: j in [8, 10)", "vector for j.l < 2"} {
		if !strings.Contains(got, want) {
			t.Errorf("dump lacks %q:\n%s", want, got)
		}
	}
	fn, err = LowerWith(s, func(*ir.Spec, int) Schedule { return Schedule{VectorWidth: 1} })
	if err != nil {
		t.Fatal(err)
	}
	if got := Dump(fn); strings.Contains(got, "vector for") || strings.Contains(got, "parallel(") {
		t.Errorf("scalar serial schedule:\n%s", got)
	}
}

// TestLaneAxisChoice checks the contiguity-driven lane axis on the shapes
// that motivated it and that the good cases keep their layout.
func TestLaneAxisChoice(t *testing.T) {
	f32, in, out := ir.Float32, ir.RoleInput, ir.RoleOutput
	mul := func(x, y ir.Expr) ir.Expr { return bin(ir.Mul, x, y) }
	add := func(x, y ir.Expr) ir.Expr { return bin(ir.Add, x, y) }
	for _, c := range []struct {
		name string
		s    *ir.Spec
		want string
	}{
		{"milstm gate", spec("gate", f32, []*ir.TensorDecl{tensor("W", in, 1024, 512), tensor("X", in, 64, 512), tensor("WX", out, 64, 1024)},
			stmt("WX", ir.Sum, mul(at("W", ix("j"), ix("k")), at("X", ix("b"), ix("k"))),
				[]ir.Var{v("b", 64), v("j", 1024)}, v("k", 512))),
			"vector 16 over k order [j b], parallel 1"},
		{"row max", spec("rowmax", f32, []*ir.TensorDecl{tensor("X", in, 512, 1024), tensor("M", out, 512)},
			stmt("M", ir.Max, at("X", ix("b"), ix("j")), []ir.Var{v("b", 512)}, v("j", 1024))),
			"vector 16 over j, parallel 1"},
		{"column max keeps spatial lanes", spec("colmax", f32, []*ir.TensorDecl{tensor("X", in, 512, 1024), tensor("M", out, 1024)},
			stmt("M", ir.Max, at("X", ix("b"), ix("j")), []ir.Var{v("j", 1024)}, v("b", 512))),
			"vector 16, parallel 1"},
		{"matmul", matmulSpec(f32, 256, 256, 256), "vector 16, parallel 1"},
		{"strided conv keeps q", spec("conv", f32, []*ir.TensorDecl{tensor("X", in, 8, 32, 32, 32), tensor("W", in, 32, 32, 3, 3), tensor("Y", out, 8, 32, 14, 14)},
			stmt("Y", ir.Sum, mul(at("X", ix("n"), ix("c"), add(mul(ix("p"), lit(2)), mul(ix("r"), lit(2))), add(mul(ix("q"), lit(2)), mul(ix("s"), lit(2)))),
				at("W", ix("k"), ix("c"), ix("r"), ix("s"))),
				[]ir.Var{v("n", 8), v("k", 32), v("p", 14), v("q", 14)}, v("c", 32), v("r", 3), v("s", 3))),
			"vector 14, parallel 2"},
		{"non-affine index keeps the innermost axis", spec("d2s", f32, []*ir.TensorDecl{tensor("X", in, 64, 32), tensor("Y", out, 64, 64)},
			stmt("Y", ir.Assign, at("X", ix("i"), bin(ir.Div, ix("j"), lit(2))), []ir.Var{v("i", 64), v("j", 64)})),
			"vector 16, parallel 1"},
		{"no spatial axes", spec("sum", f32, []*ir.TensorDecl{tensor("X", in, 40, 3), tensor("S", out)},
			stmt("S", ir.Sum, at("X", ix("i"), ix("j")), nil, v("i", 40), v("j", 3))),
			"vector 1, parallel 0"},
	} {
		if got := DefaultSchedule(c.s, 0).String(); got != c.want {
			t.Errorf("%s: got %s, want %s", c.name, got, c.want)
		}
		if _, err := Lower(c.s); err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
	}
}

func TestScheduleAxisErrors(t *testing.T) {
	s := matmulSpec(ir.Float32, 8, 8, 32)
	for _, c := range []struct {
		sched Schedule
		want  string
	}{
		{Schedule{VectorWidth: 16, VectorAxis: "z"}, "not an axis"},
		{Schedule{VectorWidth: 64, VectorAxis: "k"}, "exceeds the extent 32"},
		{Schedule{VectorWidth: 4, VectorAxis: "i"}, "not the innermost"},
		{Schedule{VectorWidth: 1, Order: []string{"j"}}, "does not list"},
		{Schedule{VectorWidth: 1, Order: []string{"j", "j"}}, "not a permutation"},
	} {
		_, err := LowerStmt(s, 0, c.sched)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: got %v, want error containing %q", c.sched, err, c.want)
		}
	}
	if _, err := LowerStmt(s, 0, Schedule{VectorWidth: 4, VectorAxis: "i", Order: []string{"j", "i"}, ParallelDepth: 1}); err != nil {
		t.Errorf("spatial lanes over i, innermost by order: %v", err)
	}
}

// A statement with less work than MinParallelWork runs on the calling
// thread; a large one gets parallel loops.
func TestSmallWorkStaysSerial(t *testing.T) {
	saved := MinParallelWork
	defer func() { MinParallelWork = saved }()
	MinParallelWork = 1 << 15
	for _, tc := range []struct {
		desc         string
		rows, cols   int64
		wantParallel bool
	}{
		{"8 elements", 1, 8, false},
		{"64x64", 64, 64, false},
		{"512x512", 512, 512, true},
	} {
		spec := &ir.Spec{DType: ir.Float32, Stmts: []*ir.BoundStmt{{
			Stmt:    &ir.Stmt{Tensor: "Y"},
			Spatial: []ir.Var{{Name: "i", Extent: tc.rows}, {Name: "j", Extent: tc.cols}},
		}}}
		s := DefaultSchedule(spec, 0)
		if got := s.ParallelDepth > 0; got != tc.wantParallel {
			t.Errorf("%s: parallel %v (depth %d), want %v", tc.desc, got, s.ParallelDepth, tc.wantParallel)
		}
	}
}
