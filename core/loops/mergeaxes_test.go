package loops

import (
	"strings"
	"testing"

	"github.com/neoflow/neoflow/core/ir"
)

// A batch-norm sum S[c] += X[n, c, h, w] merges h and w into one axis of
// H*W, read contiguously (flat stride 1, so lanes choose it), and its
// nest indexes X by the merged axis alone; n stays apart (not next to h
// in X). A statement of a fused group keeps its axes.
func TestMergeReductionAxes(t *testing.T) {
	sum := stmt("S", ir.Sum, at("X", ix("n"), ix("c"), ix("h"), ix("w")), []ir.Var{v("c", 3)}, v("n", 2), v("h", 4), v("w", 5))
	sp := spec("bn", ir.Float32, []*ir.TensorDecl{tensor("X", ir.RoleInput, 2, 3, 4, 5), tensor("S", ir.RoleOutput, 3)}, sum)
	m := MergeReductionAxes(sp)
	if m == sp {
		t.Fatal("nothing merged")
	}
	st := m.Stmts[0]
	if got := ir.ExprString(st.Stmt.RHS); got != "X[n, c, h_w / 5, h_w % 5]" {
		t.Errorf("right-hand side %s", got)
	}
	if len(st.Reduction) != 2 || st.Reduction[1] != (ir.Var{Name: "h_w", Extent: 20}) {
		t.Errorf("reduction axes %v", st.Reduction)
	}
	if m.Op.Stmts[0] != st.Stmt || sp.Stmts[0].Stmt.RHS == st.Stmt.RHS {
		t.Error("the op's statements are not the merged ones, or the original changed")
	}
	a := st.Stmt.RHS.(*ir.Access)
	if s, ok := flatStride(m, a, "h_w"); !ok || s != 1 {
		t.Errorf("flat stride of h_w %d, %v; want 1", s, ok)
	}
	if got := ir.ExprString(FlatIndex(a, []int64{2, 3, 4, 5})); got != "n * 60 + c * 20 + h_w" {
		t.Errorf("flat index %s", got)
	}
	fn, err := Lower(m)
	if err != nil {
		t.Fatal(err)
	}
	if dump := Dump(fn); !strings.Contains(dump, "vector for h_w") {
		t.Errorf("the lanes do not run over h_w:\n%s", dump)
	}

	// In a fused group, the members share their axes: none merges.
	ew := stmt("E", ir.Assign, at("S", ix("c")), []ir.Var{v("c", 3)})
	ew.Joined = true
	grp := spec("grp", ir.Float32, []*ir.TensorDecl{tensor("X", ir.RoleInput, 2, 3, 4, 5), tensor("S", ir.RoleTemp, 3), tensor("E", ir.RoleOutput, 3)}, sum, ew)
	if MergeReductionAxes(grp) != grp {
		t.Error("a grouped statement merged its axes")
	}
}
