package loops

import (
	"strings"
	"testing"

	"github.com/neoflow/neoflow/core/ir"
)

func logOf(e ir.Expr) ir.Expr { return &ir.Call{Fn: ir.FuncLog, Args: []ir.Expr{e}} }

// rowSpec is Y[g, j] = rhs over X[64, 100] and S[64].
func rowSpec(rhs ir.Expr) *ir.Spec {
	return spec("rows", ir.Float32,
		[]*ir.TensorDecl{tensor("X", ir.RoleInput, 64, 100), tensor("S", ir.RoleInput, 64), tensor("Y", ir.RoleOutput, 64, 100)},
		stmt("Y", ir.Assign, rhs, []ir.Var{v("g", 64), v("j", 100)}))
}

func TestHoistInvariantsTakesARowsCallOutOfItsLanes(t *testing.T) {
	fn := lower(t, rowSpec(bin(ir.Sub, at("X", ix("g"), ix("j")), logOf(at("S", ix("g"))))))
	d := Dump(fn)
	body := d[strings.Index(d, "parallel("):] // the loops, without the statement's header
	if !strings.Contains(body, "%inv0[] = log(S[g])") || strings.Count(body, "log(") != 2 {
		// the main lanes and the remainder each get their own scalar
		t.Errorf("log(S[g]) not computed once before each lane loop:\n%s", d)
	}
	if strings.Contains(body, "- log(") {
		t.Errorf("a lane loop still calls log:\n%s", d)
	}
}

func TestHoistInvariantsLeavesGuardedCallsInPlace(t *testing.T) {
	// where(j < 50, log(S[g]), 0): the branch is taken at some points only
	fn := lower(t, rowSpec(where(bin(ir.Lt, ix("j"), lit(50)), logOf(at("S", ix("g"))), flit(0))))
	if d := Dump(fn); strings.Contains(d, "%inv") {
		t.Errorf("a call under a where's branch was hoisted:\n%s", d)
	}
	// where(j < 50 && log(S[g]) > 0, X[g, j], 0): && evaluates its right side only where j < 50
	cond := &ir.Binary{Op: ir.And, X: bin(ir.Lt, ix("j"), lit(50)), Y: bin(ir.Gt, logOf(at("S", ix("g"))), flit(0))}
	fn = lower(t, rowSpec(where(cond, at("X", ix("g"), ix("j")), flit(0))))
	if d := Dump(fn); strings.Contains(d, "%inv") {
		t.Errorf("a call on the right of && was hoisted:\n%s", d)
	}
}

func TestHoistInvariantsKeepsReadsOfWhatTheLoopWrites(t *testing.T) {
	// for j { T[j] = X[j]; Y[j] = log(T[0]) }: T[0] changes in the loop
	s := spec("w", ir.Float32, []*ir.TensorDecl{tensor("X", ir.RoleInput, 8), tensor("T", ir.RoleOutput, 8), tensor("Y", ir.RoleOutput, 8)},
		stmt("T", ir.Assign, at("X", ix("j")), []ir.Var{v("j", 8)}))
	loop := &Loop{Var: "j", Extent: 8, Body: []Node{
		&Store{Dst: &ir.Access{Tensor: "T", Indices: []ir.Expr{ix("j")}}, Op: ir.Assign, Value: at("X", ix("j"))},
		&Store{Dst: &ir.Access{Tensor: "Y", Indices: []ir.Expr{ix("j")}}, Op: ir.Assign, Value: logOf(at("T", lit(0)))},
	}}
	fn := HoistInvariants(&Func{Spec: s, Nests: []*Nest{{Stmt: s.Stmts[0], Body: []Node{loop}}}})
	if d := Dump(fn); strings.Contains(d, "%inv") {
		t.Errorf("a read of a tensor the loop writes was hoisted:\n%s", d)
	}
	// the same with X[0]: hoisted
	loop.Body[1].(*Store).Value = logOf(at("X", lit(0)))
	fn = HoistInvariants(&Func{Spec: s, Nests: []*Nest{{Stmt: s.Stmts[0], Body: []Node{loop}}}})
	if len(fn.Nests[0].Body) != 3 {
		t.Errorf("log(X[0]) not hoisted:\n%s", Dump(fn))
	}
}
