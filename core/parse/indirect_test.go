package parse

import (
	"testing"

	"github.com/neoflow/neoflow/core/ir"
)

func TestIndirectReadsAreMarked(t *testing.T) {
	op, err := Parse("O[b, d] += E[I[J[b], k], d] * I[b, k]", Options{})
	if err != nil {
		t.Fatal(err)
	}
	var marked, values []string
	ir.Walk(op.Stmts[0].RHS, func(e ir.Expr) bool {
		if a, ok := e.(*ir.Access); ok {
			if a.Indirect {
				marked = append(marked, ir.ExprString(a))
			} else {
				values = append(values, ir.ExprString(a))
			}
		}
		return true
	})
	if len(marked) != 2 || marked[0] != "I[J[b], k]" || marked[1] != "J[b]" {
		t.Errorf("indirect reads %v, want I[J[b], k] and J[b]", marked)
	}
	if len(values) != 2 || values[0] != "E[I[J[b], k], d]" || values[1] != "I[b, k]" {
		t.Errorf("value reads %v", values)
	}
	if k := ir.KindOf(op.Stmts[0].RHS.(*ir.Binary).X.(*ir.Access).Indices[0]); k != ir.KindIndex {
		t.Errorf("kind of an indirect read: %v", k)
	}
}

func TestScatterIsRewrittenAsASum(t *testing.T) {
	op, err := Parse("Y[Dst[e], f] += X[Src[e], f] * Norm[e]\nZ[Dst[e]] += Norm[e]; W[v_Dst] += Y[v_Dst, 0]", Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"Y[v_Dst, f] += where(v_Dst == Dst[e], X[Src[e], f] * Norm[e], 0.0)",
		"Z[v_Dst_2] += where(v_Dst_2 == Dst[e], Norm[e], 0.0)",
		"W[v_Dst] += Y[v_Dst, 0]",
	}
	for i, s := range op.Stmts {
		if got := ir.StmtString(s); got != want[i] {
			t.Errorf("statement %d: %s, want %s", i+1, got, want[i])
		}
	}
	d, via, ok := ir.ScatterTarget(op.Stmts[0], "v_Dst")
	if !ok || d != 0 || ir.ExprString(via) != "Dst[e]" || !via.Indirect {
		t.Errorf("ScatterTarget: %d %v %v", d, via, ok)
	}
	if _, _, ok := ir.ScatterTarget(op.Stmts[0], "f"); ok {
		t.Error("f is no scatter target")
	}
	if _, _, ok := ir.ScatterTarget(op.Stmts[2], "v_Dst"); ok {
		t.Error("a plain variable named v_Dst is no scatter target")
	}
}
