package loops

import (
	"strings"
	"testing"

	"github.com/neoflow/neoflow/core/ir"
)

func lowerGPUTiled(t *testing.T, s *ir.Spec, g *GPUTiling) string {
	t.Helper()
	n, err := LowerStmt(s, 0, Schedule{GPU: g})
	if err != nil {
		t.Fatal(err)
	}
	return Dump(&Func{Spec: s, Nests: []*Nest{n}})
}

// TestGPUTilingMatmul: blocks over tiles, threads and registers, a step
// loop with both operands staged, barriers around the compute, the edge
// of j guarded (48 is not a multiple of 32).
func TestGPUTilingMatmul(t *testing.T) {
	g := &GPUTiling{Spatial: []GPUAxis{{"i", 8, 2}, {"j", 16, 2}}, Steps: []GPUStep{{"k", 8}}, Stage: []int{0, 1}}
	golden(t, "gpu_matmul", lowerGPUTiled(t, matmulSpec(ir.Float32, 64, 48, 32), g))
}

// TestGPUTilingPadded stages a read under its where: the box reaches
// past both ends of X, so the copy is guarded by X's bounds, while the
// statement keeps its own guard.
func TestGPUTilingPadded(t *testing.T) {
	g := &GPUTiling{Spatial: []GPUAxis{{"x", 8, 2}}, Stage: []int{0, 1}}
	d := lowerGPUTiled(t, paddedSpec(nil), g)
	for _, want := range []string{
		"shared %sh0[24]", // 16 points + 2 of halo, rounded up to 8 threads
		"where(x.b * 16 - 1 + (sh0.c * 8 + x.t) % 18 >= 0 && x.b * 16 - 1 + (sh0.c * 8 + x.t) % 18 < 40, X[",
		"if sh0.c * 8 + x.t < 18",
		"where(x.b * 16 + x.r * 8 + x.t + r.i - 1 >= 0",
	} {
		if !strings.Contains(d, want) {
			t.Errorf("no %q in\n%s", want, d)
		}
	}
}

func TestGPUTilingErrors(t *testing.T) {
	mm := matmulSpec(ir.Float32, 64, 48, 32)
	gather := spec("gather", ir.Float32,
		[]*ir.TensorDecl{tensor("X", ir.RoleInput, 8), tensor("Y", ir.RoleOutput, 8)},
		stmt("Y", ir.Sum, at("X", bin(ir.Mod, bin(ir.Add, ix("i"), ix("r")), lit(8))), []ir.Var{v("i", 8)}, v("r", 8)))
	cases := []struct {
		spec *ir.Spec
		g    GPUTiling
		want string
	}{
		{mm, GPUTiling{Spatial: []GPUAxis{{"k", 2, 1}}}, "not a spatial axis"},
		{mm, GPUTiling{Spatial: []GPUAxis{{"i", 2, 1}, {"i", 2, 1}}}, "given twice"},
		{mm, GPUTiling{Spatial: []GPUAxis{{"i", 0, 1}}}, "at least 1"},
		{mm, GPUTiling{Spatial: []GPUAxis{{"i", 16, 8}}}, "exceeds its extent"},
		{mm, GPUTiling{Spatial: []GPUAxis{{"i", 64, 1}, {"j", 24, 1}}}, "threads per block"},
		{mm, GPUTiling{Spatial: []GPUAxis{{"i", 1, 32}, {"j", 1, 16}}}, "accumulators"},
		{mm, GPUTiling{Steps: []GPUStep{{"i", 2}}}, "not a reduction axis"},
		{mm, GPUTiling{Steps: []GPUStep{{"k", 5}}}, "does not divide"},
		{mm, GPUTiling{Stage: []int{2}}, "2 stageable reads"},
		{mm, GPUTiling{Stage: []int{0, 0}}, "staged twice"},
		{matmulSpec(ir.Float64, 1024, 1024, 1024), GPUTiling{Spatial: []GPUAxis{{"i", 16, 8}, {"j", 16, 4}}, Stage: []int{0}}, "shared memory"},
		{gather, GPUTiling{Spatial: []GPUAxis{{"i", 8, 1}}, Stage: []int{0}}, "not affine"},
	}
	for _, c := range cases {
		_, err := LowerStmt(c.spec, 0, Schedule{GPU: &c.g})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want %q", c.g.String(), err, c.want)
		}
	}
	assign := spec("copy", ir.Float32,
		[]*ir.TensorDecl{tensor("X", ir.RoleInput, 8), tensor("Y", ir.RoleOutput, 8)},
		stmt("Y", ir.Assign, at("X", ix("i")), []ir.Var{v("i", 8)}))
	if _, err := LowerStmt(assign, 0, Schedule{GPU: &GPUTiling{}}); err == nil || !strings.Contains(err.Error(), "reduction statement") {
		t.Errorf("an '=' statement: err = %v", err)
	}
}
