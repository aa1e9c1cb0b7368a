package loops

import (
	"strings"
	"testing"

	"github.com/neoflow/neoflow/core/ir"
)

// stridedGradSpec is the gradient of a stride-2 read X[2*p + r] with
// respect to X, in the gather form core/autodiff derives:
//
//	dX[n, x] += where((x - r) % 2 == 0 && (x - r) / 2 >= 0 && (x - r) / 2 < P,
//	                  dY[n, (x - r) / 2, k] * W[r, k], 0.0)
func stridedGradSpec(red ir.ReduceOp, elseV float64) *ir.Spec {
	const n, x, p, r, k = 3, 9, 4, 3, 16
	xr := bin(ir.Sub, ix("x"), ix("r"))
	q := bin(ir.Div, xr, lit(2))
	cond := bin(ir.And, bin(ir.And,
		bin(ir.Eq, bin(ir.Mod, xr, lit(2)), lit(0)),
		bin(ir.Ge, q, lit(0))),
		bin(ir.Lt, q, lit(p)))
	body := bin(ir.Mul, at("dY", ix("n"), q, ix("k")), at("W", ix("r"), ix("k")))
	return spec("grad", ir.Float32,
		[]*ir.TensorDecl{tensor("dY", ir.RoleInput, n, p, k), tensor("W", ir.RoleInput, r, k), tensor("dX", ir.RoleOutput, n, x)},
		stmt("dX", red, where(cond, body, flit(elseV)), []ir.Var{v("n", n), v("x", x)}, v("r", r), v("k", k)))
}

func TestHoistGolden(t *testing.T) {
	s := stridedGradSpec(ir.Sum, 0)
	for name, sched := range map[string]Schedule{
		// Lanes over k: the guards go outside the lane loop, into r.
		"hoist_default": DefaultSchedule(s, 0),
		// Straight into dX: the guards go between the tile loops.
		"hoist_tiled": {Tiling: &Tiling{
			Splits: []Split{{Axis: "k", Factors: []int64{4}}},
			Loops:  []string{"n", "r", "x", "k.t0", "k.t1"},
			AccAt:  5,
		}},
	} {
		t.Run(name, func(t *testing.T) {
			n, err := LowerStmt(s, 0, sched)
			if err != nil {
				t.Fatal(err)
			}
			golden(t, name, Dump(&Func{Spec: s, Nests: []*Nest{n}}))
		})
	}
}

func TestHoistKeeps(t *testing.T) {
	xr := bin(ir.Sub, ix("x"), ix("r"))
	guard := bin(ir.Eq, bin(ir.Mod, xr, lit(2)), lit(0))
	for _, c := range []struct {
		name  string
		store *Store
		want  string // in the dump, or "" for unchanged
	}{
		{"assign", &Store{Dst: &ir.Access{Tensor: "Y"}, Op: ir.Assign, Value: where(guard, flit(1), flit(0))}, ""},
		{"non-identity else", &Store{Dst: &ir.Access{Tensor: "Y"}, Op: ir.Sum, Value: where(guard, flit(1), flit(2))}, ""},
		{"max with -inf", &Store{Dst: &ir.Access{Tensor: "Y"}, Op: ir.Max, Value: where(guard, flit(1), flit(Identity(ir.Max)))}, "if (x - r) % 2 == 0"},
		{"tensor read", &Store{Dst: &ir.Access{Tensor: "Y"}, Op: ir.Sum, Value: where(bin(ir.Gt, at("X", ix("x")), flit(0)), flit(1), flit(0))}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := dump([]Node{c.store})
			after := dump(HoistGuards([]Node{c.store}))
			if c.want == "" && after != before {
				t.Errorf("changed:\n%s\nto\n%s", before, after)
			}
			if c.want != "" && !strings.Contains(after, c.want) {
				t.Errorf("no %q in\n%s", c.want, after)
			}
		})
	}
}

// TestHoistLaneAndCollapse checks that a guard on a lane variable stays in
// the lane loop's where, and that no If lands between collapsed loops.
func TestHoistLaneAndCollapse(t *testing.T) {
	cond := bin(ir.And, bin(ir.Lt, ix("a"), lit(3)), bin(ir.Lt, ix("l"), lit(2)))
	st := &Store{Dst: &ir.Access{Tensor: "Y"}, Op: ir.Sum, Value: where(cond, flit(1), flit(0))}
	lane := &Loop{Var: "l", Extent: 4, Vector: true, Body: []Node{st}}
	inner := &Loop{Var: "b", Extent: 5, Body: []Node{lane}}
	outer := &Loop{Var: "a", Extent: 6, Parallel: true, Collapse: 2, Body: []Node{inner}}
	got := dump(HoistGuards([]Node{outer}))
	// a < 3 may not sit between a and b (collapsed): it goes inside b,
	// outside the lane loop; l < 2 stays in the where.
	want := []string{"for a <", "for b <", "if a < 3", "vector for l <", "where(l < 2"}
	pos := 0
	for _, w := range want {
		i := strings.Index(got[pos:], w)
		if i < 0 {
			t.Fatalf("%q missing or out of order in\n%s", w, got)
		}
		pos += i
	}
}

func dump(nodes []Node) string {
	var b strings.Builder
	dumpNodes(&b, nodes, 0)
	return b.String()
}
