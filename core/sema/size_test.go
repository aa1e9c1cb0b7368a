package sema

import (
	"strings"
	"testing"

	"github.com/neoflow/neoflow/core/ir"
)

// longSum is Y[i] = X[i] + ... + X[i], n terms, built as IR.
func longSum(n int) *ir.Op {
	x := func() ir.Expr { return &ir.Access{Tensor: "X", Indices: []ir.Expr{&ir.Index{Name: "i"}}} }
	e := x()
	for range n - 1 {
		e = &ir.Binary{Op: ir.Add, X: e, Y: x()}
	}
	return &ir.Op{Name: "long", Inputs: []string{"X"}, Stmts: []*ir.Stmt{{Tensor: "Y", Indices: []*ir.Index{{Name: "i"}}, RHS: e}}}
}

// TestCheckSize: an op built as IR (as gradient ops are) past ir.MaxNodes
// is refused by Check, and so by Specialize; one at the limit checks.
func TestCheckSize(t *testing.T) {
	op := longSum
	ok := op(ir.MaxNodes / 3) // 3n - 1 expression nodes and one left-hand side index: 49,999
	if err := Check(ok); err != nil {
		t.Fatalf("%d nodes: %v", ir.OpNodes(ok), err)
	}
	big := op(ir.MaxNodes/3 + 1)
	_, err := Specialize(big, ir.Float64, [][]int64{{4}}, nil)
	want := "expression too large: op long has 50001 nodes, the limit is 50000 (ir.MaxNodes)"
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("got %v, want %q", err, want)
	}
	// A 2,000-term sum specializes (its time: BenchmarkSpecializeLongSum).
	if _, err := Specialize(op(2000), ir.Float64, [][]int64{{4}}, nil); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkSpecializeLongSum: specializing a 2,000-term sum.
func BenchmarkSpecializeLongSum(b *testing.B) {
	op := longSum(2000)
	for b.Loop() {
		if _, err := Specialize(op, ir.Float64, [][]int64{{4}}, nil); err != nil {
			b.Fatal(err)
		}
	}
}
