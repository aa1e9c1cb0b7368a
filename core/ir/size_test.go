package ir

import (
	"math"
	"strings"
	"testing"
)

func TestNodeCounter(t *testing.T) {
	x := &Access{Tensor: "X", Indices: []Expr{&Index{Name: "i"}}}
	e := Expr(&Binary{Op: Mul, X: x, Y: &Call{Fn: FuncExp, Args: []Expr{x}}})
	if n := (NodeCounter{}).Nodes(e); n != 6 { // *, X, i, exp, X, i
		t.Errorf("nodes: got %d want 6", n)
	}
	// A DAG whose tree doubles at every level: counted in linear time,
	// saturating instead of overflowing.
	d := Expr(x)
	for range 200 {
		d = &Binary{Op: Add, X: d, Y: d}
	}
	if n := (NodeCounter{}).Nodes(d); n != math.MaxInt32 {
		t.Errorf("doubling DAG: got %d want the saturated %d", n, math.MaxInt32)
	}
	op := &Op{Name: "big", Stmts: []*Stmt{{Tensor: "Y", Indices: []*Index{{Name: "i"}}, RHS: d}}}
	err := CheckSize(op)
	if err == nil || !strings.HasPrefix(err.Error(), ErrTooLarge+": op big has 2147483647 nodes, the limit is 50000") {
		t.Errorf("CheckSize: got %v", err)
	}
	small := &Op{Stmts: []*Stmt{{Tensor: "Y", Indices: []*Index{{Name: "i"}}, RHS: e}}}
	if err := CheckSize(small); err != nil || OpNodes(small) != 7 {
		t.Errorf("small op: %d nodes, error %v", OpNodes(small), err)
	}
}
