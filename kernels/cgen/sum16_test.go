package cgen

import (
	"strings"
	"testing"

	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/pipeline"
	"github.com/neoflow/neoflow/internal/testops"
)

// TestHalfSumKeepsItsOperand: a combining store into a 16-bit tensor
// (here the CPU schedule's serial scatter) adds the whole value,
// Y + (a - b), as the float32 store Y += a - b does.
func TestHalfSumKeepsItsOperand(t *testing.T) {
	o := testops.Op{Name: "scatter16", Src: "d_X[z] += where(i % 5 == z, d_Y[i] - W[i], 0.0)",
		Shapes: [][]int64{{7}, {7}}, Sizes: map[string]int64{"z": 5, "i": 7}}
	spec, err := o.Spec(ir.Float16)
	if err != nil {
		t.Fatal(err)
	}
	fn, err := pipeline.Lower(spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	mod, err := RenderCUDA(fn, "k")
	if err != nil {
		t.Fatal(err)
	}
	want := "nf_st(nf_ld(t_d_X[v_i % 5]) + (nf_ld(t_d_Y[v_i]) - nf_ld(t_W[v_i])));"
	if !strings.Contains(mod.Source, want) {
		t.Errorf("no %q in:\n%s", want, mod.Source)
	}
}
