package ir_test

import (
	"strings"
	"testing"

	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/parse"
)

func mustParse(t *testing.T, src string, consts map[string]parse.ConstValue) *ir.Op {
	t.Helper()
	op, err := parse.Parse(src, parse.Options{Consts: consts})
	if err != nil {
		t.Fatal(err)
	}
	return op
}

func mustExpr(t *testing.T, src string) ir.Expr {
	t.Helper()
	e, err := parse.Expr(src)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestBatchedPrependsTheIndexToBatchedInputsAndWrittenTensors(t *testing.T) {
	op := mustParse(t, "T[i] += X[i, k] * W[k]\nY[i] = tanh(T[i]) + B[i]", nil)
	got := ir.Print(ir.Batched(op, map[string]bool{"X": true}, "vb"))
	want := "T[vb, i] += X[vb, i, k] * W[k]\nY[vb, i] = tanh(T[vb, i]) + B[i]"
	if got != want {
		t.Fatalf("got\n%swant\n%s", got, want)
	}
	if ir.Print(op) != "T[i] += X[i, k] * W[k]\nY[i] = tanh(T[i]) + B[i]" {
		t.Fatalf("the op itself changed: %s", ir.Print(op))
	}
}

func TestFreshNameAvoidsEveryNameTheOpUses(t *testing.T) {
	op := mustParse(t, "vb[i] = X[i, vb_] * C", map[string]parse.ConstValue{"C": {IsFloat: true, Float: 2}})
	if got := ir.FreshName(op, "vb"); got != "vb__" {
		t.Fatalf("got %s", got)
	}
	if got := ir.FreshName(op, "C"); got != "C_" {
		t.Fatalf("a constant's name: got %s", got)
	}
}

func TestInstanceRenamesSubstitutesAndReadsThroughTemplates(t *testing.T) {
	op := mustParse(t, "H[b, j] = tanh(X[b, j]) * W[j] * S\nG[b, j] = H[b, j] * H[b, j] + N", map[string]parse.ConstValue{
		"S": {IsFloat: true, Float: 1}, "N": {Int: 3},
	})
	reads := map[string]ir.Expr{
		"X": mustExpr(t, "T3[_1, _0] * 2.0"), // a transposed, scaled input
		"W": mustExpr(t, "P1[_0]"),
	}
	inst, err := ir.Instance(op, "U4_", "u4_", reads)
	if err != nil {
		t.Fatal(err)
	}
	want := "U4_H[u4_b, u4_j] = tanh(T3[u4_j, u4_b] * 2.0) * P1[u4_j] * 1.0\nU4_G[u4_b, u4_j] = U4_H[u4_b, u4_j] * U4_H[u4_b, u4_j] + 3"
	if got := ir.Print(inst); got != want {
		t.Fatalf("got\n%swant\n%s", got, want)
	}
	if len(inst.Inputs) != 0 || len(inst.Consts) != 0 {
		t.Fatalf("inputs %v, consts %v: want none", inst.Inputs, inst.Consts)
	}
}

func TestInstanceRefusesMissingAndIllFittingReads(t *testing.T) {
	op := mustParse(t, "Y[i, j] = X[i, j] + W[j]", nil)
	cases := []struct {
		reads map[string]ir.Expr
		want  string
	}{
		{map[string]ir.Expr{"X": mustExpr(t, "A[_0, _1]")}, "no read is given for input W"},
		{map[string]ir.Expr{"X": mustExpr(t, "A[_0, _2]"), "W": mustExpr(t, "B[_0]")}, "names index _2, which is not _0 to _1"},
		{map[string]ir.Expr{"X": mustExpr(t, "A[_0, _1]"), "W": mustExpr(t, "B[i]")}, "names index i"},
	}
	for _, c := range cases {
		_, err := ir.Instance(op, "U_", "u_", c.reads)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("got %v, want an error containing %q", err, c.want)
		}
	}
}
