package cgen

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/loops"
	"github.com/neoflow/neoflow/internal/testops"
)

// scatterOps are indicator statements that core/loops lowers as a zero
// fill and a serial scatter, rendered to testdata/<name>_<dtype>.c.
var scatterOps = []struct {
	op testops.Op
	dt ir.DType
}{
	{testops.Op{Name: "scatter_square", Src: "d_X[z] += where((i*i) % 5 == z, d_Y[i], 0.0)",
		Shapes: [][]int64{{7}}, Sizes: map[string]int64{"z": 5, "i": 7}}, ir.Float32},
	// A guard before the equalities, one reading a tensor after them,
	// and targets that leave the tensor on both sides.
	{testops.Op{Name: "scatter_guard", Src: "d_X[z1, z2] += where(i % 2 == 0 && i*j - 2 == z1 && j == z2 && W[j] > 0.0, d_Y[i, j] * W[j], 0.0)",
		Shapes: [][]int64{{3}, {6, 3}}, Sizes: map[string]int64{"z1": 5, "z2": 3, "i": 6, "j": 3}}, ir.Float64},
}

func scatterSource(t *testing.T, o testops.Op, dt ir.DType) string {
	t.Helper()
	fn, src := lowered(t, o, dt)
	if !fn.Nests[0].Schedule.Scatter {
		t.Fatalf("%s is not lowered as a scatter:\n%s", o.Name, loops.Dump(fn))
	}
	return src
}

func TestScatterGolden(t *testing.T) {
	for _, g := range scatterOps {
		name := g.op.Name + "_" + g.dt.String()
		t.Run(name, func(t *testing.T) {
			checkGolden(t, filepath.Join("testdata", name+".c"), scatterSource(t, g.op, g.dt))
		})
	}
}

func TestScatterPatterns(t *testing.T) {
	sq := scatterSource(t, scatterOps[0].op, scatterOps[0].dt)
	for _, want := range []string{
		"t_d_X[vl_z] = 0.0f;",
		// i * i % 5 is in [0, 5) for every i: no check.
		"for (int64_t v_i = 0; v_i < 7; v_i++) {\n\t\t\t\tNF_SCALAR;\n\t\t\t\tt_d_X[v_i * v_i % 5] += t_d_Y[v_i];",
	} {
		if !strings.Contains(sq, want) {
			t.Errorf("scatter_square lacks %q:\n%s", want, sq)
		}
	}
	gd := scatterSource(t, scatterOps[1].op, scatterOps[1].dt)
	for _, want := range []string{
		// Index tests are evaluated branch-free; the read of W keeps &&.
		"if ((v_i % 2 == 0) & (v_i * v_j - 2 >= 0) & (v_i * v_j - 2 < 5) && t_W[v_j] > 0.0) {",
		"t_d_X[(v_i * v_j - 2) * 3 + v_j] += t_d_Y[v_i * 3 + v_j] * t_W[v_j];",
	} {
		if !strings.Contains(gd, want) {
			t.Errorf("scatter_guard lacks %q:\n%s", want, gd)
		}
	}
	for _, src := range []string{sq, gd} {
		// The scatter loops are serial: one parallel loop at most, the
		// fill's, before the scatter block.
		i := strings.Index(src, "// scatter")
		if i < 0 || strings.Contains(src[i:], "#pragma omp") {
			t.Errorf("the scatter is not serial:\n%s", src)
		}
	}
}

func TestScatterCompiles(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	gcc, err := exec.LookPath("cc")
	if err != nil {
		t.Fatal("no C compiler (cc) on PATH: the kernels need one")
	}
	for _, g := range scatterOps {
		cmd := exec.Command(gcc, "-std=c11", "-fopenmp", "-Wall", "-Wextra", "-Werror", "-pedantic", "-fsyntax-only", "-x", "c", "-")
		cmd.Stdin = strings.NewReader(scatterSource(t, g.op, g.dt))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("%s %s: %v\n%s", g.op.Name, g.dt, err, out)
		}
	}
}

func TestIfErrors(t *testing.T) {
	o, _ := testops.Lookup("matmul")
	fn, _ := lowered(t, o, ir.Float32)
	fn.Nests[0].Body = []loops.Node{&loops.If{Cond: &ir.IntLit{Value: 1}}}
	if _, err := Render(fn, "k"); err == nil || !strings.Contains(err.Error(), "not a bool") {
		t.Errorf("an index condition: %v", err)
	}
	fn.Nests[0].Body = []loops.Node{&loops.If{Cond: &ir.Binary{Op: ir.Lt, X: &ir.Index{Name: "i"}, Y: &ir.IntLit{Value: 1}}}}
	if _, err := Render(fn, "k"); err == nil || !strings.Contains(err.Error(), "not bound") {
		t.Errorf("an unbound variable: %v", err)
	}
}
