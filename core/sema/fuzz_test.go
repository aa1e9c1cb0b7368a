package sema

import (
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"math/bits"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/neoflow/neoflow/core/interp"
	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/parse"
)

// FuzzSpecializeSound checks the bounds proof against execution: when
// Specialize accepts an op, running it reads no element out of bounds
// (interp.Run reports none, and an exact evaluation of every index finds
// none) and no integer sub-expression leaves (-2^62, 2^62), so no int64
// arithmetic of a kernel wraps around.
//
// An input is a case in the text form of soundCase (shapes, sizes and the
// op) or, when gen is not empty, the bytes from which genCase builds one:
// a small random op with affine, /, %, min, max, abs and where indices,
// guards with && || !, huge literals near ±2^62 and ±2^63 and random
// extents.
func FuzzSpecializeSound(f *testing.F) {
	for _, text := range []string{
		"X:4 A:4 |\nY[i] = X[i] + X[where(A[i*3+100000000] > 0.0, i, 0)]",
		"X:101 |\nY[i] = X[i] + X[1000000000 - min(9223372036854775807 - 9223372036854775807 + i, 999999900)]",
		"X:4 |\nY[i] = X[i] + X[i + 9223372036854775807 + 1 + 1000000000]",
		"X:4 | i=4\nY[i] = where(i + 4611686018427387904 >= -4611686018427387904 - 4611686018427387904, X[i+100], 0.0)",
		"X:1 | i=4\nY[i] = where(i*4611686018427387904*2 >= 0, X[i], 0.0)",
		"X:1 | i=4\nY[i] = where(i*2305843009213693952*4 >= 0, X[i], 0.0)",
		"X:4 |\nY[i] = X[i] + X[where(where(where(i < 3, i, 0) < 3, i, 0) < 3, i, 0)]",
		"X:8 W:3 | i=8\nY[i] += where(i+r-1 >= 0 && i+r-1 < 8, X[i+r-1], 0.0) * W[r]",
		"A:4 B:3 | i=7\nY[i] = where(!(i < 4), B[i - 4], A[i])",
		"X:1,8,3,5 |\nY[n,c,h,w] = X[n, c*4 + (h%2)*2 + w%2, h/2, w/2]",
		"X:4 |\nT[i] = X[i]\nY[i] = T[i / 2] + T[min(i, 3)]",
	} {
		f.Add(text, []byte(nil))
	}
	for seed := range 64 {
		b := make([]byte, 48)
		rng := rand.New(rand.NewPCG(uint64(seed), 7))
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		f.Add("", b)
	}
	f.Fuzz(func(t *testing.T, text string, gen []byte) {
		if len(gen) > 0 {
			text = genCase(gen)
		}
		checkSound(t, text)
	})
}

// soundCase is a parsed fuzz case. Its text form is a header line, the
// input shapes and then the sizes, and the op's source:
//
//	X:4 W:2,3 | i=8 r=3
//	Y[i] += X[i+r] * W[0, r]
type soundCase struct {
	inputs []string
	shapes [][]int64
	sizes  map[string]int64
	src    string
}

func parseCase(text string) (soundCase, bool) {
	header, src, ok := strings.Cut(text, "\n")
	if !ok {
		return soundCase{}, false
	}
	ins, sz, ok := strings.Cut(header, "|")
	if !ok {
		return soundCase{}, false
	}
	c := soundCase{src: src}
	for _, f := range strings.Fields(ins) {
		name, dims, ok := strings.Cut(f, ":")
		if !ok || name == "" {
			return soundCase{}, false
		}
		var shape []int64
		for _, d := range strings.Split(dims, ",") {
			n, err := strconv.ParseInt(d, 10, 64)
			if err != nil || n < 1 || n > 64 {
				return soundCase{}, false
			}
			shape = append(shape, n)
		}
		c.inputs, c.shapes = append(c.inputs, name), append(c.shapes, shape)
	}
	for _, f := range strings.Fields(sz) {
		name, v, ok := strings.Cut(f, "=")
		n, err := strconv.ParseInt(v, 10, 64)
		if !ok || err != nil {
			return soundCase{}, false
		}
		if c.sizes == nil {
			c.sizes = map[string]int64{}
		}
		c.sizes[name] = n
	}
	return c, true
}

// Limits of the execution check: ops with more points than maxRunPoints
// are not run by interp; their points are sampled instead.
const (
	maxRunPoints = 1 << 14
	samplePoints = 256
)

func checkSound(t *testing.T, text string) {
	c, ok := parseCase(text)
	if !ok {
		return
	}
	op, err := parse.Parse(c.src, parse.Options{Inputs: c.inputs})
	if err != nil {
		return
	}
	spec, err := Specialize(op, ir.Float64, c.shapes, c.sizes)
	if err != nil {
		var ie *ir.Error
		if !errors.As(err, &ie) {
			t.Fatalf("Specialize of\n%s\ngot error of type %T, want *ir.Error: %v", text, err, err)
		}
		return
	}

	h := fnv.New64a()
	h.Write([]byte(text))
	rng := rand.New(rand.NewPCG(h.Sum64(), 1))
	data := map[string][]float64{}
	shapes := map[string][]int64{}
	var inputs [][]float64
	points := int64(0)
	for _, td := range spec.Tensors {
		shapes[td.Name] = td.Shape
	}
	for _, b := range spec.Stmts {
		n := int64(1)
		for _, v := range append(append([]ir.Var(nil), b.Spatial...), b.Reduction...) {
			n = satMul(n, v.Extent)
		}
		points = satAdd(points, n)
	}
	for _, td := range spec.Tensors {
		if td.Role != ir.RoleInput {
			continue
		}
		in := make([]float64, td.Elems())
		for i := range in {
			in[i] = float64(rng.IntN(5)) - 2
		}
		inputs = append(inputs, in)
		data[td.Name] = in
	}

	sample := points > maxRunPoints
	if !sample {
		out, err := interp.Run(spec, inputs)
		if err != nil {
			t.Fatalf("Specialize accepted\n%s\nbut interp.Run failed: %v", text, err)
		}
		for i, td := range spec.Tensors {
			data[td.Name] = out[i]
		}
	} else if len(spec.Stmts) > 1 {
		return // temporaries would need a run
	}

	for _, b := range spec.Stmts {
		vars := append(append([]ir.Var(nil), b.Spatial...), b.Reduction...)
		ev := &exactEval{data: data, shapes: shapes, env: map[string]int64{}}
		check := func() {
			ev.value(b.Stmt.RHS)
			if ev.err != "" {
				at := make([]string, len(vars))
				for i, v := range vars {
					at[i] = fmt.Sprintf("%s=%d", v.Name, ev.env[v.Name])
				}
				t.Fatalf("Specialize accepted\n%s\nbut at %s: %s", text, strings.Join(at, " "), ev.err)
			}
		}
		if !sample {
			forEachPoint(vars, ev.env, 0, check)
			continue
		}
		for n := range samplePoints {
			for _, v := range vars {
				switch x := n % 4; {
				case x == 0:
					ev.env[v.Name] = 0
				case x == 1:
					ev.env[v.Name] = v.Extent - 1
				default:
					ev.env[v.Name] = rng.Int64N(v.Extent)
				}
			}
			check()
		}
	}
}

func forEachPoint(vars []ir.Var, env map[string]int64, d int, f func()) {
	if d == len(vars) {
		f()
		return
	}
	for x := int64(0); x < vars[d].Extent; x++ {
		env[vars[d].Name] = x
		forEachPoint(vars, env, d+1, f)
	}
}

func satMul(a, b int64) int64 {
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	if hi != 0 || lo > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(lo)
}

func satAdd(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// exactEval evaluates a statement's right-hand side at one point the way
// a kernel does (only the chosen branch of a where, both sides of && and
// ||), with exact index arithmetic. It records the first access out of
// bounds or index value outside (-2^62, 2^62) in err.
type exactEval struct {
	data   map[string][]float64
	shapes map[string][]int64
	env    map[string]int64
	err    string
}

func (ev *exactEval) fail(format string, args ...any) {
	if ev.err == "" {
		ev.err = fmt.Sprintf(format, args...)
	}
}

// index evaluates an integer expression; ok is false after a failure.
func (ev *exactEval) index(e ir.Expr) (v int64, ok bool) {
	switch e := e.(type) {
	case *ir.IntLit:
		return e.Value, true
	case *ir.Const:
		return e.Int, true
	case *ir.Index:
		return ev.env[e.Name], true
	case *ir.Unary:
		x, ok := ev.index(e.X)
		if !ok {
			return 0, false
		}
		return ev.fits(e, -x, x == math.MinInt64)
	case *ir.Binary:
		x, okx := ev.index(e.X)
		y, oky := ev.index(e.Y)
		if !okx || !oky {
			return 0, false
		}
		switch e.Op {
		case ir.Add:
			s := x + y
			return ev.fits(e, s, (x >= 0) == (y >= 0) && (s >= 0) != (x >= 0))
		case ir.Sub:
			s := x - y
			return ev.fits(e, s, (x >= 0) != (y >= 0) && (s >= 0) != (x >= 0))
		case ir.Mul:
			hi, lo := bits.Mul64(uint64(max(x, -x)), uint64(max(y, -y)))
			return ev.fits(e, x*y, hi != 0 || lo >= 1<<63 || x == math.MinInt64 || y == math.MinInt64)
		case ir.Div:
			return ir.FloorDiv(x, y), true
		case ir.Mod:
			return ir.FloorMod(x, y), true
		}
	case *ir.Call:
		var args []int64
		for _, a := range e.Args {
			v, ok := ev.index(a)
			if !ok {
				return 0, false
			}
			args = append(args, v)
		}
		switch e.Fn {
		case ir.FuncMin:
			return min(args[0], args[1]), true
		case ir.FuncMax:
			return max(args[0], args[1]), true
		case ir.FuncAbs:
			return ev.fits(e, max(args[0], -args[0]), args[0] == math.MinInt64)
		}
	case *ir.Where:
		if ev.cond(e.Cond) {
			return ev.index(e.Then)
		}
		return ev.index(e.Else)
	}
	ev.fail("unexpected index expression %s", ir.ExprString(e))
	return 0, false
}

// fits returns the result v of e when it lies within (-2^62, 2^62) and
// did not overflow int64.
func (ev *exactEval) fits(e ir.Expr, v int64, overflow bool) (int64, bool) {
	const limit = 1 << 62
	if overflow || v <= -limit || v >= limit {
		ev.fail("index arithmetic %s = %d (overflow: %v) leaves (-2^62, 2^62)", ir.ExprString(e), v, overflow)
		return 0, false
	}
	return v, true
}

func (ev *exactEval) cond(e ir.Expr) bool {
	switch e := e.(type) {
	case *ir.Unary:
		return !ev.cond(e.X)
	case *ir.Binary:
		switch e.Op {
		case ir.And:
			x, y := ev.cond(e.X), ev.cond(e.Y)
			return x && y
		case ir.Or:
			x, y := ev.cond(e.X), ev.cond(e.Y)
			return x || y
		}
		if ir.KindOf(e.X) == ir.KindIndex && ir.KindOf(e.Y) == ir.KindIndex {
			x, _ := ev.index(e.X)
			y, _ := ev.index(e.Y)
			return compare(e.Op, x, y)
		}
		return compare(e.Op, ev.value(e.X), ev.value(e.Y))
	}
	ev.fail("unexpected condition %s", ir.ExprString(e))
	return false
}

func compare[T int64 | float64](op ir.BinOp, x, y T) bool {
	switch op {
	case ir.Lt:
		return x < y
	case ir.Le:
		return x <= y
	case ir.Gt:
		return x > y
	case ir.Ge:
		return x >= y
	case ir.Eq:
		return x == y
	}
	return x != y
}

// value evaluates a value expression well enough to choose the branches
// of wheres (they compare reads and literals), visiting every read.
func (ev *exactEval) value(e ir.Expr) float64 {
	if ir.KindOf(e) == ir.KindIndex {
		v, _ := ev.index(e)
		return float64(v)
	}
	switch e := e.(type) {
	case *ir.FloatLit:
		return e.Value
	case *ir.Const:
		return e.Float
	case *ir.Access:
		shape := ev.shapes[e.Tensor]
		off := int64(0)
		for d, x := range e.Indices {
			v, ok := ev.index(x)
			if !ok {
				return 0
			}
			if v < 0 || v >= shape[d] {
				ev.fail("access %s out of bounds: dimension %d index %d not in [0, %d)", ir.ExprString(e), d, v, shape[d])
				return 0
			}
			off = off*shape[d] + v
		}
		return ev.data[e.Tensor][off]
	case *ir.Unary:
		return -ev.value(e.X)
	case *ir.Binary:
		x, y := ev.value(e.X), ev.value(e.Y)
		switch e.Op {
		case ir.Add:
			return x + y
		case ir.Sub:
			return x - y
		case ir.Mul:
			return x * y
		case ir.Div:
			return x / y
		}
		return x - math.Floor(x/y)*y
	case *ir.Call:
		var last float64
		for _, a := range e.Args {
			last = ev.value(a)
		}
		return last // not the function's value: conditions do not use it
	case *ir.Where:
		if ev.cond(e.Cond) {
			return ev.value(e.Then)
		}
		return ev.value(e.Else)
	}
	ev.fail("unexpected value expression %s", ir.ExprString(e))
	return 0
}

// genReader draws choices from the fuzzer's bytes; past their end every
// choice is 0, which always picks the simplest option.
type genReader struct {
	b []byte
	n int
}

func (r *genReader) intn(n int) int {
	if n <= 1 || len(r.b) == 0 {
		return 0
	}
	v := int(r.b[0])
	r.b = r.b[1:]
	if n > 256 {
		if len(r.b) > 0 {
			v = v<<8 | int(r.b[0])
			r.b = r.b[1:]
		}
	}
	return v % n
}

func (r *genReader) pick(options ...string) string { return options[r.intn(len(options))] }

// Literals near the int64 and 2^62 limits, and ordinary ones.
var hugeLits = []string{
	"9223372036854775807", "-9223372036854775808", "-9223372036854775807",
	"4611686018427387904", "-4611686018427387904", "4611686018427387903", "-4611686018427387903",
	"2305843009213693952", "3074457345618258602", "1000000000", "-1000000000", "4294967296", "2147483648",
}

// genCase builds a case from the fuzzer's bytes: one statement (sometimes
// two) reading inputs X and A through random index expressions.
func genCase(b []byte) string {
	r := &genReader{b: b}
	g := &opGen{r: r}
	dims := []int64{1, 2, 3, 4, 5, 8}
	rankX, rankA := 1+r.intn(2), 1+r.intn(2)
	g.shapes = map[string][]int64{}
	shape := func(name string, rank int) string {
		var ds []string
		for range rank {
			d := dims[r.intn(len(dims))]
			g.shapes[name] = append(g.shapes[name], d)
			ds = append(ds, fmt.Sprint(d))
		}
		return name + ":" + strings.Join(ds, ",")
	}
	header := shape("X", rankX) + " " + shape("A", rankA) + " |"

	lhs := []string{"i", "j"}[:1+r.intn(2)]
	g.vars = append([]string{}, lhs...)
	reduce := "="
	if r.intn(3) == 0 {
		reduce = "+="
		g.vars = append(g.vars, "k")
	}
	// Sizes for some variables, usually small, sometimes huge; the others
	// get their range from a direct access. Every variable appears in an
	// access.
	rhs := g.value(3)
	for _, v := range g.vars {
		size := int64(0)
		switch r.intn(8) {
		case 0, 1, 2:
			size = int64(1 + r.intn(9))
		case 3:
			size = []int64{1 << 20, 1 << 31, 1 << 40, 1<<62 - 1, 1 << 62, math.MaxInt64}[r.intn(6)]
		}
		x := v
		if size > 0 {
			header += fmt.Sprintf(" %s=%d", v, size)
			x = "min(" + v + ", 0)"
		}
		rhs += " + X[" + strings.Repeat("0, ", rankX-1) + x + "]"
	}
	rhs += " + A[" + strings.TrimSuffix(strings.Repeat("0, ", rankA), ", ") + "]"
	src := fmt.Sprintf("Y[%s] %s %s", strings.Join(lhs, ", "), reduce, rhs)
	if r.intn(4) == 0 {
		// A second statement reading the first's output.
		g.shapes["Y"] = make([]int64, len(lhs)) // sizes unknown here
		g.vars = append([]string{}, lhs...)
		src += fmt.Sprintf("\nZ[%s] = %s + Y[%s]", strings.Join(lhs, ", "), g.value(2), strings.Join(lhs, ", "))
	}
	return header + "\n" + src
}

type opGen struct {
	r      *genReader
	vars   []string
	shapes map[string][]int64 // 0 for an unknown dimension
}

func (g *opGen) lit() string {
	if g.r.intn(12) == 0 {
		return hugeLits[g.r.intn(len(hugeLits))]
	}
	return fmt.Sprint(g.r.intn(16) - 4)
}

func (g *opGen) posLit() string {
	if g.r.intn(16) == 0 {
		return g.r.pick("1000000000", "4611686018427387903", "2305843009213693952")
	}
	return fmt.Sprint(1 + g.r.intn(8))
}

func (g *opGen) index(depth int) string {
	v := g.vars[g.r.intn(len(g.vars))]
	if depth <= 0 {
		if g.r.intn(4) == 0 {
			return g.lit()
		}
		return v
	}
	d := depth - 1
	switch g.r.intn(16) {
	case 0:
		return v
	case 1:
		return g.lit()
	case 2:
		return v + " + " + g.lit()
	case 3:
		return v + " * " + g.lit()
	case 4:
		return "(" + g.index(d) + ") / " + g.posLit()
	case 5:
		return "(" + g.index(d) + ") % " + g.posLit()
	case 6:
		return "min(" + g.index(d) + ", " + g.index(d) + ")"
	case 7:
		return "max(" + g.index(d) + ", " + g.index(d) + ")"
	case 8:
		return "abs(" + g.index(d) + ")"
	case 9:
		return "-(" + g.index(d) + ")"
	case 10:
		return "(" + g.index(d) + ") + (" + g.index(d) + ")"
	case 11:
		return "(" + g.index(d) + ") - (" + g.index(d) + ")"
	case 12:
		return "(" + g.index(d) + ") * (" + g.index(d) + ")"
	case 13, 14:
		return "where(" + g.cond(d) + ", " + g.index(d) + ", " + g.index(d) + ")"
	}
	return v + " - " + g.lit()
}

func (g *opGen) cond(depth int) string {
	d := depth - 1
	switch g.r.intn(8) {
	case 0:
		if depth > 0 {
			return "(" + g.cond(d) + ") && (" + g.cond(d) + ")"
		}
	case 1:
		if depth > 0 {
			return "(" + g.cond(d) + ") || (" + g.cond(d) + ")"
		}
	case 2:
		if depth > 0 {
			return "!(" + g.cond(d) + ")"
		}
	case 3:
		return g.access(d) + " > 0.0"
	}
	op := g.r.pick("<", "<=", ">", ">=", "==", "!=")
	return g.index(d) + " " + op + " " + g.index(d)
}

func (g *opGen) access(depth int) string {
	names := []string{"X", "A"}
	if _, ok := g.shapes["Y"]; ok {
		names = append(names, "Y")
	}
	t := names[g.r.intn(len(names))]
	var idx []string
	for range g.shapes[t] {
		idx = append(idx, g.index(depth))
	}
	return t + "[" + strings.Join(idx, ", ") + "]"
}

func (g *opGen) value(depth int) string {
	if depth <= 0 {
		return g.access(0)
	}
	d := depth - 1
	switch g.r.intn(6) {
	case 0:
		return g.value(d) + " + " + g.value(d)
	case 1:
		return g.value(d) + " * " + g.value(d)
	case 2, 3:
		return "where(" + g.cond(d) + ", " + g.value(d) + ", " + g.r.pick("0.0", g.access(d)) + ")"
	case 4:
		return g.access(d) + " * (" + g.index(d) + ")"
	case 5:
		if g.r.intn(2) == 0 {
			return g.guardedAccess(d)
		}
	}
	return g.access(d)
}

// guardedAccess reads X or A at random indices under a guard that keeps
// them in bounds, or nearly: the guard's limit is off by one at times.
func (g *opGen) guardedAccess(depth int) string {
	t := g.r.pick("X", "A")
	var idx, in, out []string
	for _, dim := range g.shapes[t] {
		e := g.index(depth)
		idx = append(idx, e)
		if g.r.intn(4) == 0 {
			continue // this dimension unguarded
		}
		n := dim + int64(g.r.intn(8)/6) - int64(g.r.intn(8)/7) // mostly dim
		lo := g.r.pick("%s >= 0", "0 <= %s", "-(%s) <= 0", "%s > -1")
		hi := g.r.pick("%s < %d", "%s <= %d - 1", "%d > %s", "%s - %d < 0")
		nlo := g.r.pick("%s < 0", "0 > %s", "%s <= -1")
		nhi := g.r.pick("%s >= %d", "%s > %d - 1", "%d <= %s")
		in = append(in, fill(lo, e, n), fill(hi, e, n))
		out = append(out, fill(nlo, e, n), fill(nhi, e, n))
	}
	read := t + "[" + strings.Join(idx, ", ") + "]"
	if len(in) == 0 {
		return read
	}
	switch g.r.intn(3) {
	case 0:
		return "where(!(" + strings.Join(out, " || ") + "), " + read + ", 0.0)"
	case 1:
		return "where(" + strings.Join(out, " || ") + ", 0.0, " + read + ")"
	}
	return "where(" + strings.Join(in, " && ") + ", " + read + ", 0.0)"
}

// fill puts the expression e and the number n into a comparison pattern
// whose verbs are %s (e) and %d (n), in either order.
func fill(pattern, e string, n int64) string {
	s := strings.Replace(pattern, "%s", "("+e+")", 1)
	return strings.Replace(s, "%d", fmt.Sprint(n), 1)
}
