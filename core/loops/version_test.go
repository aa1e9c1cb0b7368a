package loops

import (
	"strings"
	"testing"

	"github.com/neoflow/neoflow/core/ir"
)

// paddedSpec is a 1-D padded correlation, Y[x] += where(x + r - 1 >= 0 &&
// x + r - 1 < 40, X[x + r - 1], 0.0) * W[r] over 40 points, with cond in
// place of the guard when it is not nil.
func paddedSpec(cond ir.Expr) *ir.Spec {
	xr := bin(ir.Sub, bin(ir.Add, ix("x"), ix("r")), lit(1))
	if cond == nil {
		cond = bin(ir.And, bin(ir.Ge, xr, lit(0)), bin(ir.Lt, xr, lit(40)))
	}
	return spec("padded", ir.Float32,
		[]*ir.TensorDecl{tensor("X", ir.RoleInput, 40), tensor("W", ir.RoleInput, 3), tensor("Y", ir.RoleOutput, 40)},
		stmt("Y", ir.Sum, bin(ir.Mul, where(cond, at("X", xr), flit(0)), at("W", ix("r"))), []ir.Var{v("x", 40)}, v("r", 3)))
}

func TestVersionLanes(t *testing.T) {
	s := paddedSpec(nil)
	n, err := LowerStmt(s, 0, DefaultSchedule(s, 0))
	if err != nil {
		t.Fatal(err)
	}
	d := Dump(&Func{Spec: s, Nests: []*Nest{n}})
	// Two lane tiles and the remainder of 8, each versioned: an unguarded
	// copy first, under the guard at both lane ends.
	if got := strings.Count(d, "lanes versioned"); got != 2 {
		t.Errorf("%d versioned lane loops, want 2 (the tiles and the remainder):\n%s", got, d)
	}
	if !strings.Contains(d, "+= X[x.o * 16 + x.l + r - 1] * W[r]") {
		t.Errorf("no unguarded copy:\n%s", d)
	}
	if !strings.Contains(d, "where(x.o * 16 + x.l + r - 1 >= 0") {
		t.Errorf("the guarded loop is gone:\n%s", d)
	}
	// Guards that are not affine in the lane, or read a tensor, stay.
	x := bin(ir.Add, ix("x"), ix("r"))
	for name, c := range map[string]ir.Expr{
		"modulo": bin(ir.And, bin(ir.Eq, bin(ir.Mod, x, lit(2)), lit(0)), bin(ir.Lt, x, lit(41))),
		"ne":     bin(ir.Ne, x, lit(7)),
		"tensor": bin(ir.Lt, at("W", ix("r")), flit(0.5)),
	} {
		s := paddedSpec(c)
		n, err := LowerStmt(s, 0, DefaultSchedule(s, 0))
		if err != nil {
			t.Fatal(err)
		}
		if d := Dump(&Func{Spec: s, Nests: []*Nest{n}}); strings.Contains(d, "versioned") {
			t.Errorf("%s: versioned:\n%s", name, d)
		}
	}
}
