package loops

import (
	"strings"
	"testing"

	"github.com/neoflow/neoflow/core/ir"
)

// TestCheckReach runs the lowering's buffer check on hand-built nests: a
// local read may not leave its Local even under a guard, a guarded tensor
// read may (cgen masks it), an unguarded one may not.
func TestCheckReach(t *testing.T) {
	s := spec("r", ir.Float32,
		[]*ir.TensorDecl{tensor("X", ir.RoleInput, 8), tensor("Y", ir.RoleOutput, 8)},
		stmt("Y", ir.Assign, at("X", ix("i")), []ir.Var{v("i", 8)}))
	guard := bin(ir.Lt, ix("i"), lit(4))
	local := &Local{Name: "%buf", Len: 4}
	body := func(value ir.Expr) []Node {
		return []Node{local, &Loop{Var: "i", Extent: 8, Body: []Node{
			&Store{Dst: at("Y", ix("i")).(*ir.Access), Op: ir.Assign, Value: value}}}}
	}
	for _, c := range []struct {
		name  string
		body  []Node
		fails string
	}{
		{"local read under a where", body(where(guard, at("%buf", ix("i")), flit(0))), "%buf[i]: index 0 may lie outside [0, 4)"},
		{"clamped local read", body(where(guard, at("%buf", clampIndex(ix("i"), 4)), flit(0))), ""},
		{"local read under an If", []Node{local, &Loop{Var: "i", Extent: 8, Body: []Node{&If{Cond: guard, Body: []Node{
			&Store{Dst: at("Y", ix("i")).(*ir.Access), Op: ir.Assign, Value: at("%buf", ix("i"))}}}}}}, "%buf[i]"},
		{"local write", []Node{local, &Loop{Var: "i", Extent: 5, Body: []Node{
			&Store{Dst: at("%buf", ix("i")).(*ir.Access), Op: ir.Assign, Value: flit(1)}}}}, "%buf[i]"},
		{"undeclared local", body(at("%buf", lit(0)))[1:], "before its declaration"},
		{"guarded tensor read", body(where(bin(ir.Ge, ix("i"), lit(2)), at("X", bin(ir.Sub, ix("i"), lit(2))), flit(0))), ""},
		{"short-circuit guard", body(where(bin(ir.And, guard, bin(ir.Gt, at("X", bin(ir.Add, ix("i"), lit(4))), flit(0))), flit(1), flit(0))), ""},
		{"unguarded tensor read", body(at("X", bin(ir.Sub, ix("i"), lit(2)))), "X[i - 2]: index 0 may lie outside [0, 8)"},
		{"unbounded index", body(at("X", bin(ir.Mul, ix("j"), lit(2)))), "X[j * 2]"},
	} {
		err := checkReach(s, &Nest{Stmt: s.Stmts[0], Body: c.body})
		switch {
		case c.fails == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.fails != "" && (err == nil || !strings.Contains(err.Error(), c.fails)):
			t.Errorf("%s: got %v, want an error with %q", c.name, err, c.fails)
		}
	}
}
