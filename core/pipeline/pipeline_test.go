package pipeline

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/parse"
	"github.com/neoflow/neoflow/core/sema"
)

func checked(t *testing.T, src string, inputs ...string) *ir.Op {
	t.Helper()
	op, err := parse.Parse(src, parse.Options{Name: "t", Inputs: inputs})
	if err != nil {
		t.Fatal(err)
	}
	if err := sema.Check(op); err != nil {
		t.Fatal(err)
	}
	return op
}

var headerRE = regexp.MustCompile(`(?m)^// after ([a-z-]+): `)

// dumped splits a dump into the IR after each pass, by header.
func dumped(text string) (names []string, bodies map[string]string) {
	bodies = map[string]string{}
	locs := headerRE.FindAllStringSubmatchIndex(text, -1)
	for i, l := range locs {
		name := text[l[2]:l[3]]
		end := len(text)
		if i+1 < len(locs) {
			end = locs[i+1][0]
		}
		body := text[l[1]:end]
		body = body[strings.IndexByte(body, '\n')+1:] // past the rest of the header line
		names = append(names, name)
		bodies[name] = body
	}
	return names, bodies
}

const mmTanh = "T[i, j] += A[i, k] * B[k, j]\nY[i, j] = tanh(T[i, j])"

func TestTableOrderIsChecked(t *testing.T) {
	if err := checkOrder(passes); err != nil {
		t.Fatal(err)
	}
	noop := func(*Unit) error { return nil }
	bad := [][]Pass{
		{{Name: "b", Run: noop, After: []string{"a"}}, {Name: "a", Run: noop}},
		{{Name: "a", Run: noop}, {Name: "a", Run: noop}},
		{{Name: "a"}},
	}
	for i, table := range bad {
		if err := checkOrder(table); err == nil {
			t.Errorf("table %d: no error", i)
		}
	}
}

func TestRunFailsAtStartWhenAPassNeedsAnother(t *testing.T) {
	op := checked(t, mmTanh, "A", "B")
	spec, err := sema.Specialize(op, ir.Float32, [][]int64{{4, 3}, {3, 5}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// A Spec that did not come through the specialize pass: schedule needs it.
	u := &Unit{Op: op, Spec: spec}
	err = Run(u, Build)
	if err == nil || !strings.Contains(err.Error(), "pass schedule needs pass specialize first") {
		t.Fatalf("got %v", err)
	}
	if u.Func != nil || u.Schedules != nil {
		t.Error("a pass ran before the plan was checked")
	}
	if err := Run(FromSpec(spec), "no-such-pass"); err == nil || !strings.Contains(err.Error(), "no pass named") {
		t.Fatalf("got %v", err)
	}
}

func TestForwardAndGradientGoThroughTheTable(t *testing.T) {
	var out bytes.Buffer
	d, err := NewDumper("all", "", &out)
	if err != nil {
		t.Fatal(err)
	}
	op := checked(t, mmTanh, "A", "B")
	shapes := [][]int64{{4, 3}, {3, 5}}
	fwd := &Unit{Op: op, DType: ir.Float64, Shapes: shapes, Dump: d}
	if err := Run(fwd, Build); err != nil {
		t.Fatal(err)
	}
	names, _ := dumped(out.String())
	want := []string{"specialize", "schedule", "lower", "hoist-guards", "version-lanes", "fuse-nests", "parallel-rows", "hoist-invariants", "check-bounds"}
	if !slices.Equal(names, want) {
		t.Fatalf("forward dumps %v, want %v", names, want)
	}
	out.Reset()
	g := &Unit{Op: op, DType: ir.Float64, Shapes: shapes, Wrt: []bool{true, true}, Dump: d}
	if err := Run(g, Derive); err != nil {
		t.Fatal(err)
	}
	names, bodies := dumped(out.String())
	if !slices.Equal(names, []string{"specialize", "autodiff"}) || !strings.Contains(bodies["autodiff"], "d_A[i, k] += ") {
		t.Fatalf("gradient dumps %v:\n%s", names, out.String())
	}
	if g.Grad == nil || g.Op != g.Grad.Op || g.Spec != nil {
		t.Fatal("autodiff did not leave the gradient op at the statement level")
	}
	// The gradient op is built by the same passes.
	var gshapes [][]int64
	for _, in := range g.Op.Inputs {
		switch in {
		case "A", "B":
			gshapes = append(gshapes, shapes[strings.Index("AB", in)])
		default:
			gshapes = append(gshapes, []int64{4, 5})
		}
	}
	out.Reset()
	gb := &Unit{Op: g.Op, DType: ir.Float64, Shapes: gshapes, Sizes: g.Grad.Sizes, Dump: d}
	if err := Run(gb, Build); err != nil {
		t.Fatal(err)
	}
	if names, _ := dumped(out.String()); !slices.Equal(names, want) {
		t.Fatalf("gradient build dumps %v", names)
	}
}

// A pass's dump shows what the pass changed: hoisting moves a guard out of
// a loop, and the lowering's dump differs from the specialized op's.
func TestDumpChangesWhenThePassChangesTheIR(t *testing.T) {
	var out bytes.Buffer
	d, _ := NewDumper("all", "", &out)
	op := checked(t, "S[i] += where(i > 2, X[i, j] * V[i], 0.0)", "X", "V")
	u := &Unit{Op: op, DType: ir.Float32, Shapes: [][]int64{{8, 64}, {8}}, Sizes: map[string]int64{"i": 8, "j": 64}, Dump: d}
	if err := Run(u, Build); err != nil {
		t.Fatal(err)
	}
	_, bodies := dumped(out.String())
	if bodies["lower"] == bodies["hoist-guards"] {
		t.Fatalf("hoist-guards changed nothing:\n%s", out.String())
	}
	if !strings.Contains(bodies["hoist-guards"], "if ") {
		t.Errorf("no hoisted guard:\n%s", bodies["hoist-guards"])
	}
	if bodies["specialize"] == bodies["lower"] || bodies["check-bounds"] != bodies["version-lanes"] {
		t.Errorf("levels:\n%s", out.String())
	}
}

func TestDumperSelectsPassesAndWritesFiles(t *testing.T) {
	if d, err := NewDumper(" ", "", nil); d != nil || err != nil {
		t.Fatalf("empty setting: %v %v", d, err)
	}
	if _, err := NewDumper("lower,nope", "", nil); err == nil || !strings.Contains(err.Error(), `no pass named "nope"`) || !strings.Contains(err.Error(), "hoist-guards") {
		t.Fatalf("got %v", err)
	}
	dir := filepath.Join(t.TempDir(), "dumps")
	d, err := NewDumper("lower, check-bounds", dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !d.Wants("lower") || d.Wants("schedule") {
		t.Fatal("selection")
	}
	op := checked(t, mmTanh, "A", "B")
	for range 2 {
		if err := Run(&Unit{Op: op, DType: ir.Float32, Shapes: [][]int64{{4, 3}, {3, 5}}, Dump: d}, Build); err != nil {
			t.Fatal(err)
		}
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	var names []string
	for _, f := range files {
		names = append(names, filepath.Base(f))
	}
	lower, check := indexOf("lower")+1, indexOf("check-bounds")+1
	want := []string{
		fmt.Sprintf("0001-t-%02d-lower.txt", lower), fmt.Sprintf("0001-t-%02d-check-bounds.txt", check),
		fmt.Sprintf("0002-t-%02d-lower.txt", lower), fmt.Sprintf("0002-t-%02d-check-bounds.txt", check),
	}
	if !slices.Equal(names, want) {
		t.Fatalf("files %v, want %v", names, want)
	}
	text, _ := os.ReadFile(files[0])
	if !strings.HasPrefix(string(text), "// after lower: op t float32\nfunc t float32\n") {
		t.Fatalf("file:\n%s", text)
	}
	if d.Err() != nil {
		t.Fatal(d.Err())
	}
}

// NEOFLOW_CHECK's verification names the pass after which the IR stopped
// checking: here a statement whose extent outgrew the tensor it reads.
func TestVerifyNamesThePass(t *testing.T) {
	op, err := parse.Parse("Y[i] = X[i] * 2.0", parse.Options{})
	if err != nil {
		t.Fatal(err)
	}
	spec, err := sema.Specialize(op, ir.Float64, [][]int64{{4}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	u := FromSpec(spec)
	if err := verify(u, Pass{Name: "fake", Out: LevelSpec}); err != nil {
		t.Fatalf("a specialized op does not verify: %v", err)
	}
	spec.Stmts[0].Spatial[0].Extent = 5
	err = verify(u, Pass{Name: "fake", Out: LevelSpec})
	if err == nil || !strings.Contains(err.Error(), "after pass fake") || !strings.Contains(err.Error(), "it writes [0, 5) of dimension 0 of Y") {
		t.Errorf("got %v", err)
	}
}
