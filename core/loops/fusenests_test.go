package loops

import (
	"slices"
	"testing"

	"github.com/neoflow/neoflow/core/ir"
)

// softmaxSpec is a row softmax over X[64, 100] in three statements, the
// third reading the first two's results at its row (rowRead) or, when
// not, at row 0.
func softmaxSpec(rowRead bool) *ir.Spec {
	row := ix("g")
	if !rowRead {
		row = lit(0)
	}
	return spec("softmax", ir.Float32,
		[]*ir.TensorDecl{
			tensor("X", ir.RoleInput, 64, 100), tensor("Y", ir.RoleOutput, 64, 100),
			tensor("M", ir.RoleTemp, 64), tensor("S", ir.RoleTemp, 64),
		},
		stmt("M", ir.Max, at("X", ix("a"), ix("b")), []ir.Var{v("a", 64)}, v("b", 100)),
		stmt("S", ir.Sum, &ir.Call{Fn: ir.FuncExp, Args: []ir.Expr{bin(ir.Sub, at("X", ix("c"), ix("d")), at("M", ix("c")))}},
			[]ir.Var{v("c", 64)}, v("d", 100)),
		stmt("Y", ir.Assign, bin(ir.Div, &ir.Call{Fn: ir.FuncExp, Args: []ir.Expr{bin(ir.Sub, at("X", ix("g"), ix("j")), at("M", row))}}, at("S", row)),
			[]ir.Var{v("g", 64), v("j", 100)}),
	)
}

func TestFuseNestsRunsARowSoftmaxAsOneNest(t *testing.T) {
	fn := lower(t, softmaxSpec(true))
	if len(fn.Nests) != 1 {
		t.Fatalf("%d nests, want 1:\n%s", len(fn.Nests), Dump(fn))
	}
	n := fn.Nests[0]
	if !slices.Equal(n.Members, []int{0, 1, 2}) {
		t.Errorf("members %v, want [0 1 2]", n.Members)
	}
	outer := n.Body[0].(*Loop)
	if !outer.Parallel || outer.Var != "a" || len(outer.Body) != 3 {
		t.Fatalf("want one parallel loop over a holding three scopes:\n%s", Dump(fn))
	}
	for name, tu := range uses(n.Body) {
		for _, a := range tu.access {
			if Uses(a, "c") || Uses(a, "g") {
				t.Errorf("%s: %s still indexes by its own row variable:\n%s", name, ir.ExprString(a), Dump(fn))
			}
		}
	}
}

func TestFuseNestsKeepsDependencesAcrossRowsApart(t *testing.T) {
	// Y reads M[0] and S[0]: row 0's results, which a fused loop would read
	// before computing them in every iteration but the first.
	fn := lower(t, softmaxSpec(false))
	if len(fn.Nests) != 2 {
		t.Fatalf("%d nests, want 2 (M and S fused, Y apart):\n%s", len(fn.Nests), Dump(fn))
	}
	if !slices.Equal(fn.Nests[0].Members, []int{0, 1}) || fn.Nests[1].Index != 2 {
		t.Errorf("nests %v and %d, want [0 1] and 2", fn.Nests[0].Members, fn.Nests[1].Index)
	}
}

func TestFuseNestsNeedsTheSameOuterLoops(t *testing.T) {
	// Different row counts: nothing to share.
	s := spec("rows", ir.Float32,
		[]*ir.TensorDecl{tensor("X", ir.RoleInput, 64, 8), tensor("Y", ir.RoleOutput, 64), tensor("Z", ir.RoleOutput, 32)},
		stmt("Y", ir.Sum, at("X", ix("a"), ix("b")), []ir.Var{v("a", 64)}, v("b", 8)),
		stmt("Z", ir.Sum, at("X", ix("c"), ix("d")), []ir.Var{v("c", 32)}, v("d", 8)),
	)
	if fn := lower(t, s); len(fn.Nests) != 2 {
		t.Errorf("%d nests, want 2:\n%s", len(fn.Nests), Dump(fn))
	}
	// A serial outer loop and a parallel one: not fused (the serial one
	// may carry a reduction across its iterations).
	a := &Nest{Schedule: Schedule{}, Stmt: s.Stmts[0], Body: []Node{&Loop{Var: "a", Extent: 8, Parallel: true, Collapse: 1}}}
	b := &Nest{Schedule: Schedule{}, Stmt: s.Stmts[1], Index: 1, Body: []Node{&Loop{Var: "c", Extent: 8}}}
	if fuseNests(a, b) != nil {
		t.Error("a parallel and a serial outer loop fused")
	}
	// The second nest's inner loop already runs over the first's outer
	// variable: renaming would capture it.
	c := &Nest{Schedule: Schedule{}, Stmt: s.Stmts[1], Index: 1, Body: []Node{&Loop{Var: "c", Extent: 8, Parallel: true, Collapse: 1,
		Body: []Node{&Loop{Var: "a", Extent: 2}}}}}
	if fuseNests(a, c) != nil {
		t.Error("fused although the inner loop reuses the outer variable's name")
	}
}

func TestSliced(t *testing.T) {
	acc := func(idx ...ir.Expr) *ir.Access { return &ir.Access{Tensor: "T", Indices: idx} }
	outer := []string{"o"}
	cases := []struct {
		access []*ir.Access
		want   bool
	}{
		{[]*ir.Access{acc(ix("o"), ix("j")), acc(ix("o"), lit(0))}, true},
		{[]*ir.Access{acc(ix("j"), ix("o")), acc(lit(3), ix("o"))}, true},
		{[]*ir.Access{acc(ix("o"), ix("j")), acc(ix("j"), ix("o"))}, false},          // different dimensions
		{[]*ir.Access{acc(ix("o"), bin(ir.Add, ix("o"), ix("j")))}, false},           // o in another dimension
		{[]*ir.Access{acc(bin(ir.Add, ix("o"), lit(1)), ix("j"))}, false},            // a neighbouring row
		{[]*ir.Access{acc(ix("o"), ix("j")), acc(lit(0), ix("j"))}, false},           // row 0 from every row
		{[]*ir.Access{acc(ix("o"), at("I", ix("o"))), acc(ix("o"), ix("j"))}, false}, // o inside an index read
		{[]*ir.Access{acc(ix("o"), ix("o"))}, false},                                 // the diagonal
		{[]*ir.Access{acc(ix("o")), acc(ix("o"))}, true},
	}
	for i, c := range cases {
		if got := sliced(c.access, outer); got != c.want {
			t.Errorf("case %d: sliced = %v, want %v", i, got, c.want)
		}
	}
}
