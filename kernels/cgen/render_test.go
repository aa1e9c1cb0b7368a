package cgen

import (
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/loops"
	"github.com/neoflow/neoflow/core/pipeline"
	"github.com/neoflow/neoflow/internal/testops"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// goldenOps are rendered to testdata/<name>_<dtype>.c.
var goldenOps = []struct {
	name string
	dt   ir.DType
}{
	{"matmul", ir.Float32}, {"matmul_aligned", ir.Float32}, {"matmul_aligned", ir.Float64},
	{"conv_stride2", ir.Float32}, {"conv_pad", ir.Float32}, {"maxpool", ir.Float64},
	{"softmax", ir.Float32}, {"sum_all", ir.Float64}, {"depth2space", ir.Float32},
	{"unary_math", ir.Float32}, {"positive_math", ir.Float64}, {"value_mod", ir.Float32},
	{"neg_index_div", ir.Float64}, {"index_values", ir.Float32},
	{"padded_grad", ir.Float32}, {"guarded_log", ir.Float64},
}

func source(t *testing.T, name string, dt ir.DType) string {
	t.Helper()
	o, ok := testops.Lookup(name)
	if !ok {
		t.Fatalf("no test op %s", name)
	}
	_, src := lowered(t, o, dt)
	return src
}

// lowered lowers o with the default schedules and renders it.
func lowered(t *testing.T, o testops.Op, dt ir.DType) (*loops.Func, string) {
	t.Helper()
	spec, err := o.Spec(dt)
	if err != nil {
		t.Fatal(err)
	}
	fn, err := pipeline.Lower(spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	src, err := Render(fn, "nf_kernel")
	if err != nil {
		t.Fatal(err)
	}
	return fn, src
}

func TestGolden(t *testing.T) {
	for _, g := range goldenOps {
		name := g.name + "_" + g.dt.String()
		t.Run(name, func(t *testing.T) {
			checkGolden(t, filepath.Join("testdata", name+".c"), source(t, g.name, g.dt))
		})
	}
}

// checkGolden compares got with the golden file at path, or rewrites the
// file with -update.
func checkGolden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from the golden file (check, then go test -update):\n%s", path, got)
	}
}

// TestGoldenCompiles checks every golden source with the C compiler,
// warnings as errors.
func TestGoldenCompiles(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	checkCompiles(t, func(name string, dt ir.DType) string { return source(t, name, dt) })
}

// checkCompiles runs the C compiler on src of every golden op as
// kernels/cc compiles it (-std=c11, OpenMP), syntax only, warnings as
// errors.
func checkCompiles(t *testing.T, src func(name string, dt ir.DType) string) {
	t.Helper()
	gcc, err := exec.LookPath("cc")
	if err != nil {
		t.Fatal("no C compiler (cc) on PATH: the kernels need one")
	}
	for _, g := range goldenOps {
		cmd := exec.Command(gcc, "-std=c11", "-fopenmp", "-Wall", "-Wextra", "-Werror", "-pedantic", "-fsyntax-only", "-x", "c", "-")
		cmd.Stdin = strings.NewReader(src(g.name, g.dt))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("%s %s: %v\n%s", g.name, g.dt, err, out)
		}
	}
}

func TestPatterns(t *testing.T) {
	mm := source(t, "matmul_aligned", ir.Float32)
	for _, want := range []string{
		"void nf_kernel(void **bufs, int64_t nthreads)",
		"const float *restrict t_A = (const float *)bufs[0];",
		"float *restrict t_C = (float *)bufs[2];",
		"#pragma omp parallel for num_threads(nf_nt)",
		"float r_acc[16] __attribute__((aligned(64)));",
		"#pragma omp simd\n\t\t\t\t\tfor (int64_t vl_j = 0; vl_j < 16; vl_j++) {\n\t\t\t\t\t\tr_acc[vl_j] += t_A[v_i * 32 + v_k] * t_B[v_k * 48 + vo_j * 16 + vl_j];",
		"t_C[v_i * 48 + vo_j * 16 + vl_j] = r_acc[vl_j];",
		"//   C[i, j] += A[i, k] * B[k, j]",
	} {
		if !strings.Contains(mm, want) {
			t.Errorf("matmul source lacks %q:\n%s", want, mm)
		}
	}
	if d := source(t, "matmul_aligned", ir.Float64); !strings.Contains(d, "double r_acc[8] __attribute__((aligned(64)));") {
		t.Errorf("float64 matmul lacks an 8-lane double accumulator:\n%s", d)
	}
	conv := source(t, "conv_stride2", ir.Float32)
	if !strings.Contains(conv, "collapse(3)") {
		t.Errorf("conv lacks collapse(3):\n%s", conv)
	}
	d2s := source(t, "depth2space", ir.Float32)
	if strings.Contains(d2s, "nf_floor") || !strings.Contains(d2s, "v_h / 2") || !strings.Contains(d2s, "vl_w % 2") {
		t.Errorf("depth2space: non-negative dividends should use plain / and %%:\n%s", d2s)
	}
	neg := source(t, "neg_index_div", ir.Float64)
	for _, want := range []string{"nf_floordiv(vl_i - 7, 3)", "nf_floormod(vl_i - 5, 4)", "static inline int64_t nf_floordiv"} {
		if !strings.Contains(neg, want) {
			t.Errorf("neg_index_div lacks %q:\n%s", want, neg)
		}
	}
	um := source(t, "unary_math", ir.Float32)
	for _, want := range []string{"expf(", "tanhf(", "erff(", "fabsf(", "nf_sigmoid(", "nf_relu(", "nf_max(", "nf_min(", "0.25f", "-0.25f"} {
		if !strings.Contains(um, want) {
			t.Errorf("unary_math lacks %q", want)
		}
	}
	if regexp.MustCompile(`(?m)^[^/]*\b(exp|tanh|erf|fabs)\(`).MatchString(um) {
		t.Errorf("float kernel calls a double math function:\n%s", um)
	}
	pad := source(t, "conv_pad", ir.Float32)
	if !strings.Contains(pad, "nf_blend(") || !strings.Contains(pad, "? t_X[") || !strings.Contains(pad, ": 0.0f, 0.0f)") {
		t.Errorf("padded conv should blend, guarding the load with a conditional:\n%s", pad)
	}
	pg := source(t, "padded_grad", ir.Float32)
	for _, want := range []string{
		"#pragma omp simd",
		"nf_blend((vl_x - v_r >= 0) & (vl_x - v_r < 14), ((vl_x - v_r >= 0) & (vl_x - v_r < 14) ? t_dY[",
		"] : 0.0f) * t_W[v_c * 3 + v_r], 0.0f)",
	} {
		if !strings.Contains(pg, want) {
			t.Errorf("padded_grad should blend, masking the dY read but not the in-bounds W read; lacks %q:\n%s", want, pg)
		}
	}
	sum := source(t, "sum_all", ir.Float64)
	for _, want := range []string{
		"double r_acc[8] __attribute__((aligned(64)));",
		"r_acc[vl_j] += t_X[v_i * 29 + vo_j * 8 + vl_j];",
		"// remainder: j in [24, 29)",
		"double r_red;\n\t\tr_red = 0.0;\n\t\tfor (int64_t vh_j = 0; vh_j < 8; vh_j++) {\n\t\t\tNF_SCALAR;\n\t\t\tr_red += r_acc[vh_j];",
		"t_S[0] = r_red;",
	} {
		if !strings.Contains(sum, want) {
			t.Errorf("sum over all elements should be a lane-parallel reduction over j; lacks %q:\n%s", want, sum)
		}
	}
	if strings.Contains(sum, "omp parallel") {
		t.Errorf("scalar sum should be serial:\n%s", sum)
	}
	sm := source(t, "softmax", ir.Float32)
	for _, want := range []string{
		"static inline float nf_max(float a, float b) { return (a > b) | (a != a) ? a : b; }",
		"r_acc[vl_j] = nf_max(r_acc[vl_j], t_X[v_i * 19 + vl_j]);",
		"r_red = nf_max(r_red, r_acc[vh_j]);",
	} {
		if !strings.Contains(sm, want) {
			t.Errorf("softmax lacks %q:\n%s", want, sm)
		}
	}
	if strings.Contains(sm, "isnan") || strings.Contains(sm, "signbit") || strings.Contains(um, "if (") {
		t.Errorf("max/min/relu helpers should be branch-free")
	}
}

func TestFloatLiterals(t *testing.T) {
	r32 := &renderer{spec: &ir.Spec{DType: ir.Float32}}
	r64 := &renderer{spec: &ir.Spec{DType: ir.Float64}}
	for _, c := range []struct {
		v        float64
		f32, f64 string
	}{
		{2, "2.0f", "2.0"},
		{0.1, "0.1f", "0.1"},
		{-1.5e-7, "-1.5e-07f", "-1.5e-07"},
		{1e300, "INFINITY", "1e+300"},
		{-1e300, "-INFINITY", "-1e+300"},
		{1.0 / 3, "0.33333334f", "0.3333333333333333"},
	} {
		if got := r32.floatLit(c.v).s.String(); got != c.f32 {
			t.Errorf("float32 %v: %s, want %s", c.v, got, c.f32)
		}
		if got := r64.floatLit(c.v).s.String(); got != c.f64 {
			t.Errorf("float64 %v: %s, want %s", c.v, got, c.f64)
		}
	}
}

func TestExprRendering(t *testing.T) {
	r := &renderer{spec: &ir.Spec{DType: ir.Float32}, ctype: "float", suffix: "f", used: map[string]bool{}, vars: map[string]int64{"i": 10, "j.l": 16}}
	ix := func(n string) ir.Expr { return &ir.Index{Name: n} }
	lit := func(v int64) ir.Expr { return &ir.IntLit{Value: v} }
	bin := func(op ir.BinOp, x, y ir.Expr) ir.Expr { return &ir.Binary{Op: op, X: x, Y: y} }
	for _, c := range []struct {
		e    ir.Expr
		want string
	}{
		{bin(ir.Div, ix("i"), lit(3)), "v_i / 3"},
		{bin(ir.Div, bin(ir.Sub, ix("i"), lit(1)), lit(3)), "nf_floordiv(v_i - 1, 3)"},
		{bin(ir.Mod, bin(ir.Add, ix("i"), ix("j.l")), lit(4)), "(v_i + vl_j) % 4"},
		{bin(ir.Sub, ix("i"), bin(ir.Sub, ix("j.l"), lit(1))), "v_i - (vl_j - 1)"},
		{bin(ir.Add, ix("i"), bin(ir.Sub, ix("j.l"), lit(1))), "v_i + vl_j - 1"},
		{&ir.Unary{Op: ir.Neg, X: lit(-3)}, "-(-3)"},
		{&ir.Unary{Op: ir.Neg, X: bin(ir.Add, ix("i"), lit(1))}, "-(v_i + 1)"},
		{bin(ir.Mul, ix("i"), &ir.FloatLit{Value: 0.5}), "(float)v_i * 0.5f"},
		{bin(ir.Lt, ix("i"), &ir.FloatLit{Value: 2.5}), "(float)v_i < 2.5f"},
		{bin(ir.Lt, ix("i"), lit(2)), "v_i < 2"},
		{bin(ir.Mod, &ir.FloatLit{Value: 1}, lit(2)), "nf_mod(1.0f, 2.0f)"},
		{&ir.Where{Cond: bin(ir.Lt, ix("i"), lit(2)), Then: ix("i"), Else: &ir.FloatLit{Value: -1}}, "v_i < 2 ? (float)v_i : -1.0f"},
		{&ir.Call{Fn: ir.FuncPow, Args: []ir.Expr{ix("i"), lit(2)}}, "nf_pow2((float)v_i)"},
		{&ir.Call{Fn: ir.FuncPow, Args: []ir.Expr{ix("i"), &ir.FloatLit{Value: -2}}}, "nf_pow_2((float)v_i)"},
		{&ir.Call{Fn: ir.FuncPow, Args: []ir.Expr{ix("i"), &ir.FloatLit{Value: 2.5}}}, "powf((float)v_i, 2.5f)"},
		{&ir.Call{Fn: ir.FuncPow, Args: []ir.Expr{ix("i"), lit(5)}}, "powf((float)v_i, 5.0f)"},
		{&ir.Call{Fn: ir.FuncMax, Args: []ir.Expr{ix("i"), lit(2)}}, "nf_maxi(v_i, 2)"},
		{&ir.Unary{Op: ir.Not, X: bin(ir.Or, bin(ir.Lt, ix("i"), lit(2)), bin(ir.Eq, ix("i"), lit(5)))}, "!((v_i < 2) | (v_i == 5))"},
		{bin(ir.And, bin(ir.Or, bin(ir.Lt, ix("i"), lit(2)), bin(ir.Eq, ix("i"), lit(5))), bin(ir.Ge, ix("i"), lit(0))), "((v_i < 2) | (v_i == 5)) & (v_i >= 0)"},
	} {
		got, err := r.expr(c.e)
		if err != nil {
			t.Errorf("%s: %v", ir.ExprString(c.e), err)
			continue
		}
		if got := got.s.String(); got != c.want {
			t.Errorf("%s renders as %s, want %s", ir.ExprString(c.e), got, c.want)
		}
	}
	if _, err := r.expr(ix("k")); err == nil {
		t.Error("unbound loop variable accepted")
	}
}

func TestRenderErrors(t *testing.T) {
	o, _ := testops.Lookup("matmul")
	fn, _ := lowered(t, o, ir.Float32)
	for _, sym := range []string{"", "1abc", "a-b", "nf kernel"} {
		if _, err := Render(fn, sym); err == nil {
			t.Errorf("symbol %q accepted", sym)
		}
	}
	if _, err := Render(nil, "k"); err == nil {
		t.Error("nil func accepted")
	}
}

func TestCommentSafe(t *testing.T) {
	if got := commentSafe("a\\\nb??/c"); got != "a_ b__/c" {
		t.Errorf("commentSafe = %q", got)
	}
}

func TestUnrollAnnotation(t *testing.T) {
	o, _ := testops.Lookup("matmul_aligned")
	fn, _ := lowered(t, o, ir.Float32)
	outer := fn.Nests[0].Body[0].(*loops.Loop)
	outer.Body[0].(*loops.Loop).Unroll = 3
	src, err := Render(fn, "k")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(src, "#pragma GCC unroll 3\n\t\t\tfor (int64_t vo_j = 0;") {
		t.Errorf("no unroll pragma:\n%s", src)
	}
}

// A pack's buffer is read through a restrict pointer, the accumulator
// stays a plain local array (loops.Local.Copy says why).
func TestPackReadThroughRestrictPointer(t *testing.T) {
	o, _ := testops.Lookup("matmul_aligned")
	fn, _ := lowered(t, o, ir.Float32)
	fn.Nests[0].Body = append([]loops.Node{&loops.Local{Name: loops.LocalPrefix + "pack0", Len: 64, Copy: true},
		&loops.Local{Name: loops.LocalPrefix + "acc", Len: 16}}, fn.Nests[0].Body...)
	src, err := Render(fn, "k")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"float r_pack0_buf[64] __attribute__((aligned(64)));",
		"float *restrict r_pack0 = r_pack0_buf;", "float r_acc[16] __attribute__((aligned(64)));"} {
		if !strings.Contains(src, want) {
			t.Errorf("no %q in:\n%s", want, src)
		}
	}
}
