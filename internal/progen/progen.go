package progen

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"

	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/parse"
	"github.com/neoflow/neoflow/core/sema"
)

// Program is a generated op: its source, the input and output orders, and
// the extents of i and j.
type Program struct {
	Src     string
	Inputs  []string
	Outputs []string
	M, N    int64
}

var extents = [][2]int64{{2, 3}, {3, 5}, {4, 2}, {3, 3}, {17, 5}, {5, 19}, {33, 2}}

// inputVars are the index variables of each input, by name.
var inputVars = map[string][]string{"X": {"i", "j"}, "V": {"i"}, "W": {"j"}}

// New draws a program from the generator seeded by seed.
func New(seed uint64) Program {
	g := &gen{r: rand.New(rand.NewPCG(seed, 0x9e3779b9)), vars: map[string][]string{}}
	for k, v := range inputVars {
		g.vars[k] = v
	}
	e := extents[g.r.IntN(len(extents))]
	p := Program{M: e[0], N: e[1]}
	var lines, written []string
	read := map[string]bool{}
	for k := range 1 + g.r.IntN(3) {
		name := fmt.Sprintf("T%d", k)
		lhs := [][]string{{"i"}, {"j"}, {"i", "j"}, {"j", "i"}, {}}[g.r.IntN(5)]
		red := []string{"=", "+=", "+=", "max=", "min="}[g.r.IntN(5)]
		rhs := g.value(3)
		g.cover(&rhs, lhs)
		for _, v := range []string{"i", "j"} {
			if red == "=" && mentions(rhs, v) && !slices.Contains(lhs, v) {
				red = "+=" // '=' cannot reduce
			}
		}
		for t := range g.vars {
			if strings.Contains(rhs, t+"[") {
				read[t] = true
			}
		}
		lines = append(lines, fmt.Sprintf("%s[%s] %s %s", name, strings.Join(lhs, ", "), red, rhs))
		written = append(written, name)
		g.vars[name] = lhs
	}
	p.Src = strings.Join(lines, "\n")
	for _, t := range []string{"X", "V", "W"} {
		if read[t] {
			p.Inputs = append(p.Inputs, t)
		}
	}
	for _, t := range written {
		if !read[t] {
			p.Outputs = append(p.Outputs, t)
		}
	}
	g.r.Shuffle(len(p.Inputs), func(a, b int) { p.Inputs[a], p.Inputs[b] = p.Inputs[b], p.Inputs[a] })
	g.r.Shuffle(len(p.Outputs), func(a, b int) { p.Outputs[a], p.Outputs[b] = p.Outputs[b], p.Outputs[a] })
	return p
}

// Op parses the program.
func (p Program) Op() (*ir.Op, error) {
	consts := map[string]parse.ConstValue{"M": {Int: p.M}, "N": {Int: p.N}}
	return parse.Parse(p.Src, parse.Options{Name: "progen", Inputs: p.Inputs, Outputs: p.Outputs, Consts: consts})
}

// Shapes are the input shapes, in the program's input order.
func (p Program) Shapes() [][]int64 {
	var s [][]int64
	for _, t := range p.Inputs {
		var shape []int64
		for _, v := range inputVars[t] {
			shape = append(shape, map[string]int64{"i": p.M, "j": p.N}[v])
		}
		s = append(s, shape)
	}
	return s
}

// Spec parses and specializes the program for dt; an error is the
// checker's refusal (or a defect the caller is looking for).
func (p Program) Spec(dt ir.DType) (*ir.Spec, error) {
	op, err := p.Op()
	if err != nil {
		return nil, err
	}
	return sema.Specialize(op, dt, p.Shapes(), nil)
}

// String is the program as a test case prints it.
func (p Program) String() string {
	return fmt.Sprintf("inputs %v outputs %v M=%d N=%d\n%s", p.Inputs, p.Outputs, p.M, p.N, p.Src)
}

type gen struct {
	r    *rand.Rand
	vars map[string][]string // tensor -> the variables its left-hand side (or shape) uses
}

func (g *gen) pick(options ...string) string { return options[g.r.IntN(len(options))] }

// index is an index expression over v that stays in [0, extent).
func (g *gen) index(v string) string {
	ext := map[string]string{"i": "M", "j": "N"}[v]
	return strings.NewReplacer("v", v, "E", ext).Replace(g.pick(
		"v", "v", "v", "E - 1 - v", "(v + 1) % E", "where(v > 0, v - 1, 0)", "min(v, 1)",
		"v / 2", "0", "v - v + 0", "min(abs(v - 1), E - 1)", "(v * 3 + 1) % E", "max(v - 2, 0)",
	))
}

// access reads a tensor that is an input or already written.
func (g *gen) access() string {
	names := slices.Sorted(func(yield func(string) bool) {
		for k := range g.vars {
			if !yield(k) {
				return
			}
		}
	})
	t := names[g.r.IntN(len(names))]
	var idx []string
	for _, v := range g.vars[t] {
		idx = append(idx, g.index(v))
	}
	text := fmt.Sprintf("%s[%s]", t, strings.Join(idx, ", "))
	if len(idx) > 0 && idx[0] == g.vars[t][0] && g.r.IntN(3) == 0 {
		v := g.vars[t][0]
		idx[0] = v + " - 1"
		text = fmt.Sprintf("where(%s >= 1, %s[%s], 0.5)", v, t, strings.Join(idx, ", "))
	}
	return text
}

func (g *gen) value(depth int) string {
	kinds := []string{"access", "access", "literal", "index"}
	if depth > 0 {
		kinds = append(kinds, "unary", "binary", "binary", "where")
	}
	switch g.pick(kinds...) {
	case "access":
		return g.access()
	case "literal":
		return g.pick("0.5", "1.5", "-2.0", "3.0", "0.25")
	case "index":
		return g.pick("i", "j") + " * 0.5"
	case "unary":
		f := g.pick("exp(tanh(%s))", "sigmoid(%s)", "tanh(%s)", "sqrt((%[1]s) * (%[1]s) + 1.0)",
			"log((%[1]s) * (%[1]s) + 1.0)", "-(%s)", "pow(%s, 2.0)", "relu(%s)", "abs(%s)")
		return fmt.Sprintf(f, g.value(depth-1))
	case "binary":
		a, b := g.value(depth-1), g.value(depth-1)
		switch op := g.pick("+", "-", "*", "/", "max", "min"); op {
		case "/":
			return fmt.Sprintf("(%s) / ((%s) * (%s) + 1.0)", a, b, b)
		case "max", "min":
			return fmt.Sprintf("%s(%s, %s)", op, a, b)
		default:
			return fmt.Sprintf("(%s) %s (%s)", a, op, b)
		}
	}
	v := g.pick("i", "j")
	cond := strings.ReplaceAll(g.pick("v > 1", "v % 2 == 0", "v <= 1 || v == 3", "!(v < 2) && v != 4"), "v", v)
	if g.r.IntN(4) == 0 {
		cond = g.pick("X[i, j] > 0.0", "V[i] < W[j]", "W[j] >= 0.25")
	}
	return fmt.Sprintf("where(%s, %s, %s)", cond, g.value(depth-1), g.value(depth-1))
}

// cover adds plain reads V[i] / W[j] for the statement's variables that no
// read indexes plainly, so that their extents are inferred.
func (g *gen) cover(rhs *string, lhs []string) {
	for _, v := range []string{"i", "j"} {
		mentioned := mentions(*rhs, v) || slices.Contains(lhs, v)
		if !mentioned || g.r.IntN(10) == 0 {
			continue
		}
		*rhs += map[string]string{"i": " + V[i]", "j": " + W[j]"}[v]
	}
}

// mentions reports whether text uses index variable v.
func mentions(text, v string) bool {
	return regexp.MustCompile(`\b` + v + `\b`).MatchString(text)
}
