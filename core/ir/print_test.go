package ir

import (
	"math"
	"slices"
	"strings"
	"testing"
)

func idx(n string) *Index             { return &Index{Name: n} }
func lit(v int64) *IntLit             { return &IntLit{Value: v} }
func flt(v float64) *FloatLit         { return &FloatLit{Value: v} }
func bin(op BinOp, x, y Expr) *Binary { return &Binary{Op: op, X: x, Y: y} }
func neg(x Expr) *Unary               { return &Unary{Op: Neg, X: x} }
func not(x Expr) *Unary               { return &Unary{Op: Not, X: x} }
func acc(t string, ix ...Expr) *Access {
	if ix == nil {
		ix = []Expr{}
	}
	return &Access{Tensor: t, Indices: ix}
}
func call(fn Func, args ...Expr) *Call { return &Call{Fn: fn, Args: args} }

func TestExprString(t *testing.T) {
	a, b, c := idx("a"), idx("b"), idx("c")
	tests := []struct {
		desc string
		e    Expr
		want string
	}{
		{"int literal", lit(3), "3"},
		{"negative int literal", lit(-3), "-3"},
		{"min int64", lit(math.MinInt64), "-9223372036854775808"},
		{"float keeps a dot", flt(2), "2.0"},
		{"float fraction", flt(0.1), "0.1"},
		{"negative float", flt(-2.5), "-2.5"},
		{"negative zero", flt(math.Copysign(0, -1)), "-0.0"},
		{"large float uses exponent", flt(1e21), "1e+21"},
		{"float 100000", flt(100000), "100000.0"},
		{"small float", flt(1e-7), "1e-07"},
		{"max float", flt(math.MaxFloat64), "1.7976931348623157e+308"},
		{"const prints its name", &Const{Name: "N", Int: 4}, "N"},
		{"index", a, "a"},
		{"access", acc("X", a, bin(Add, bin(Mul, b, lit(2)), c)), "X[a, b * 2 + c]"},
		{"scalar access", acc("S"), "S[]"},
		{"add is left assoc", bin(Add, bin(Add, a, b), c), "a + b + c"},
		{"right operand of equal prec is parenthesized", bin(Sub, a, bin(Sub, b, c)), "a - (b - c)"},
		{"right add under sub", bin(Sub, a, bin(Add, b, c)), "a - (b + c)"},
		{"mul binds tighter", bin(Add, a, bin(Mul, b, c)), "a + b * c"},
		{"lower prec left operand", bin(Mul, bin(Add, a, b), c), "(a + b) * c"},
		{"div mod chain", bin(Mod, bin(Div, a, lit(2)), lit(4)), "a / 2 % 4"},
		{"div of product on right", bin(Div, a, bin(Mul, b, c)), "a / (b * c)"},
		{"compare", bin(Lt, bin(Add, a, b), c), "a + b < c"},
		{"eq of compares", bin(Eq, bin(Lt, a, b), bin(Ge, b, c)), "a < b == b >= c"},
		{"ne", bin(Ne, a, b), "a != b"},
		{"le gt", bin(And, bin(Le, a, b), bin(Gt, b, c)), "a <= b && b > c"},
		{"and or", bin(Or, bin(And, a, b), c), "a && b || c"},
		{"or under and", bin(And, a, bin(Or, b, c)), "a && (b || c)"},
		{"neg index", neg(a), "-a"},
		{"neg of literal is parenthesized", neg(lit(3)), "-(3)"},
		{"neg of negative literal", neg(lit(-3)), "- -3"},
		{"neg of negative float literal", neg(flt(-1.5)), "- -1.5"},
		{"neg of negative zero", neg(flt(math.Copysign(0, -1))), "- -0.0"},
		{"neg of zero", neg(flt(0)), "-(0.0)"},
		{"neg of neg of literal", neg(neg(lit(3))), "- -(3)"},
		{"neg of not", neg(not(idx("a"))), "-!a"},
		{"not of neg literal", not(lit(-3)), "!-3"},
		{"neg of float literal", neg(flt(1.5)), "-(1.5)"},
		{"neg of neg", neg(neg(a)), "- -a"},
		{"not not", not(not(a)), "!!a"},
		{"neg of binary", neg(bin(Add, a, b)), "-(a + b)"},
		{"not of compare", not(bin(Lt, a, b)), "!(a < b)"},
		{"unary as operand", bin(Mul, neg(a), not(b)), "-a * !b"},
		{"subtract negative literal", bin(Sub, a, lit(-3)), "a - -3"},
		{"add negative literal", bin(Add, a, lit(-3)), "a + -3"},
		{"negative literal on the left", bin(Mul, lit(-3), a), "-3 * a"},
		{"calls", call(FuncMax, call(FuncExp, a), bin(Add, b, lit(1))), "max(exp(a), b + 1)"},
		{"pow", call(FuncPow, a, flt(0.5)), "pow(a, 0.5)"},
		{"where", &Where{Cond: bin(Lt, a, lit(4)), Then: acc("A", a), Else: acc("B", bin(Sub, a, lit(4)))}, "where(a < 4, A[a], B[a - 4])"},
		{"nil", nil, "<nil>"},
	}
	for _, tt := range tests {
		if got := ExprString(tt.e); got != tt.want {
			t.Errorf("%s: ExprString got %q, want %q", tt.desc, got, tt.want)
		}
	}
}

func TestPrint(t *testing.T) {
	op := &Op{Stmts: []*Stmt{
		{Tensor: "M", Indices: []*Index{idx("b")}, Reduce: Max, RHS: acc("X", idx("b"), idx("j"))},
		{Tensor: "E", Indices: []*Index{idx("b"), idx("j")}, Reduce: Assign, RHS: call(FuncExp, bin(Sub, acc("X", idx("b"), idx("j")), acc("M", idx("b"))))},
		{Tensor: "S", Indices: []*Index{idx("b")}, Reduce: Sum, RHS: acc("E", idx("b"), idx("j"))},
		{Tensor: "P", Indices: []*Index{}, Reduce: Prod, RHS: acc("S", idx("b"))},
		{Tensor: "Q", Indices: nil, Reduce: Min, RHS: acc("S", idx("b"))},
	}}
	want := strings.Join([]string{
		"M[b] max= X[b, j]",
		"E[b, j] = exp(X[b, j] - M[b])",
		"S[b] += E[b, j]",
		"P[] *= S[b]",
		"Q[] min= S[b]",
	}, "\n")
	if got := Print(op); got != want {
		t.Errorf("Print got\n%s\nwant\n%s", got, want)
	}
	if got := op.String(); got != want {
		t.Errorf("String got\n%s\nwant\n%s", got, want)
	}
	if got, want := op.Stmts[0].String(), "M[b] max= X[b, j]"; got != want {
		t.Errorf("Stmt.String got %q, want %q", got, want)
	}
	if got := Print(nil); got != "<nil>" {
		t.Errorf("Print(nil) got %q, want <nil>", got)
	}
}

func TestEqual(t *testing.T) {
	a := bin(Add, acc("X", idx("i")), flt(1))
	tests := []struct {
		desc string
		x, y Expr
		want bool
	}{
		{"same structure", a, bin(Add, acc("X", idx("i")), flt(1)), true},
		{"positions ignored", &Index{Name: "i", Pos: Pos{1, 2}}, &Index{Name: "i", Pos: Pos{3, 4}}, true},
		{"different op", a, bin(Sub, acc("X", idx("i")), flt(1)), false},
		{"int vs float literal", lit(1), flt(1), false},
		{"zero vs negative zero", flt(0), flt(math.Copysign(0, -1)), false},
		{"different tensor", acc("X", idx("i")), acc("Y", idx("i")), false},
		{"different arity", acc("X", idx("i")), acc("X", idx("i"), idx("j")), false},
		{"const values", &Const{Name: "N", Int: 4}, &Const{Name: "N", Int: 4, Float: 9}, true},
		{"const value differs", &Const{Name: "N", Int: 4}, &Const{Name: "N", Int: 5}, false},
		{"const kind differs", &Const{Name: "N", Int: 4}, &Const{Name: "N", IsFloat: true, Float: 4}, false},
		{"neg literal vs neg of literal", lit(-3), neg(lit(3)), false},
		{"call fn", call(FuncExp, idx("i")), call(FuncLog, idx("i")), false},
		{"where branches", &Where{Cond: idx("c"), Then: idx("a"), Else: idx("b")}, &Where{Cond: idx("c"), Then: idx("b"), Else: idx("a")}, false},
		{"nil nil", nil, nil, true},
		{"nil vs expr", nil, idx("i"), false},
	}
	for _, tt := range tests {
		if got := Equal(tt.x, tt.y); got != tt.want {
			t.Errorf("%s: Equal(%s, %s) got %v, want %v", tt.desc, ExprString(tt.x), ExprString(tt.y), got, tt.want)
		}
		if got := HashExpr(tt.x) == HashExpr(tt.y); got != tt.want {
			t.Errorf("%s: HashExpr equal got %v, want %v", tt.desc, got, tt.want)
		}
	}
}

func testOp() *Op {
	return &Op{
		Name:   "mm",
		Source: "Y[i, j] += A[i, k] * B[k, j]",
		Inputs: []string{"A", "B"},
		Stmts: []*Stmt{{
			Pos: Pos{1, 1}, Tensor: "Y", Indices: []*Index{idx("i"), idx("j")}, Reduce: Sum,
			RHS: bin(Mul, acc("A", idx("i"), idx("k")), acc("B", idx("k"), idx("j"))),
		}},
		Consts: map[string]*Const{"N": {Name: "N", Int: 4}},
	}
}

func TestEqualOpAndHash(t *testing.T) {
	base := testOp()
	tests := []struct {
		desc   string
		modify func(*Op)
		want   bool
	}{
		{"identical", func(*Op) {}, true},
		{"name and source ignored", func(o *Op) { o.Name, o.Source = "other", "" }, true},
		{"positions ignored", func(o *Op) { o.Stmts[0].Pos = Pos{7, 7} }, true},
		{"inputs order", func(o *Op) { o.Inputs = []string{"B", "A"} }, false},
		{"reduce op", func(o *Op) { o.Stmts[0].Reduce = Assign }, false},
		{"lhs index", func(o *Op) { o.Stmts[0].Indices[1] = idx("q") }, false},
		{"tensor", func(o *Op) { o.Stmts[0].Tensor = "Z" }, false},
		{"const value", func(o *Op) { o.Consts["N"] = &Const{Name: "N", Int: 5} }, false},
		{"extra const", func(o *Op) { o.Consts["M"] = &Const{Name: "M", Int: 5} }, false},
		{"extra stmt", func(o *Op) { o.Stmts = append(o.Stmts, o.Stmts[0]) }, false},
	}
	for _, tt := range tests {
		o := testOp()
		tt.modify(o)
		if got := EqualOp(base, o); got != tt.want {
			t.Errorf("%s: EqualOp got %v, want %v", tt.desc, got, tt.want)
		}
		if got := Hash(base) == Hash(o); got != tt.want {
			t.Errorf("%s: Hash equal got %v, want %v", tt.desc, got, tt.want)
		}
	}
	if h := Hash(base); len(h) != 64 || strings.Trim(h, "0123456789abcdef") != "" {
		t.Errorf("Hash got %q, want 64 lowercase hex digits", h)
	}
	// The encoding is fixed: a change to it invalidates on-disk caches, so
	// it must be deliberate.
	if got, want := Hash(base), Hash(testOp()); got != want {
		t.Errorf("Hash not deterministic: got %s and %s", got, want)
	}
	empty := &Op{}
	empty2 := &Op{Inputs: []string{}, Consts: map[string]*Const{}}
	if !EqualOp(empty, empty2) || Hash(empty) != Hash(empty2) {
		t.Errorf("nil and empty slices/maps: got unequal, want equal")
	}
}

// TestOutputOrder: an explicit output order equal to statement order is
// the default (same EqualOp and Hash); another order is a different op.
func TestOutputOrder(t *testing.T) {
	two := func(outputs ...string) *Op {
		o := testOp()
		z := *o.Stmts[0]
		z.Tensor = "Z"
		o.Stmts = append(o.Stmts, &z)
		o.Outputs = outputs
		return o
	}
	if got := two().OutputNames(); !slices.Equal(got, []string{"Y", "Z"}) {
		t.Fatalf("OutputNames got %v, want [Y Z]", got)
	}
	if got := two("Z", "Y").OutputNames(); !slices.Equal(got, []string{"Z", "Y"}) {
		t.Fatalf("OutputNames got %v, want [Z Y]", got)
	}
	if !EqualOp(two(), two("Y", "Z")) || Hash(two()) != Hash(two("Y", "Z")) {
		t.Errorf("explicit statement order differs from the default")
	}
	if EqualOp(two(), two("Z", "Y")) || Hash(two()) == Hash(two("Z", "Y")) {
		t.Errorf("a permuted output order compares equal to the default")
	}
	// A temporary is no output.
	o := two()
	o.Stmts[1].RHS = acc("Y", idx("i"), idx("j"))
	if got := DefaultOutputs(o.Stmts); !slices.Equal(got, []string{"Z"}) {
		t.Errorf("DefaultOutputs got %v, want [Z]", got)
	}
}

func TestWalk(t *testing.T) {
	e := bin(Add, acc("X", idx("i"), idx("j")), call(FuncExp, neg(idx("k"))))
	var got []string
	Walk(e, func(e Expr) bool {
		got = append(got, ExprString(e))
		return true
	})
	want := []string{"X[i, j] + exp(-k)", "X[i, j]", "i", "j", "exp(-k)", "-k", "k"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("Walk order got %q, want %q", got, want)
	}
	got = nil
	Walk(e, func(e Expr) bool {
		got = append(got, ExprString(e))
		_, isAccess := e.(*Access)
		return !isAccess
	})
	want = []string{"X[i, j] + exp(-k)", "X[i, j]", "exp(-k)", "-k", "k"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("Walk skipping access children got %q, want %q", got, want)
	}
	Walk(nil, func(Expr) bool { t.Error("Walk(nil) visited a node"); return true })
}

func TestRewrite(t *testing.T) {
	w := &Where{Cond: bin(Lt, idx("i"), lit(4)), Then: acc("A", idx("i")), Else: acc("B", bin(Sub, idx("i"), lit(4)))}
	e := bin(Add, w, call(FuncMax, idx("j"), flt(0)))

	if got := Rewrite(e, func(e Expr) Expr { return e }); got != e {
		t.Errorf("identity rewrite got a new node, want the same pointer")
	}
	if got := Rewrite(e, func(Expr) Expr { return nil }); got != e {
		t.Errorf("nil-returning rewrite got a new node, want the same pointer")
	}

	// Rename i -> p: every node above an i is copied, the rest shared.
	got := Rewrite(e, func(e Expr) Expr {
		if x, ok := e.(*Index); ok && x.Name == "i" {
			return &Index{Pos: x.Pos, Name: "p"}
		}
		return e
	})
	want := "where(p < 4, A[p], B[p - 4]) + max(j, 0.0)"
	if s := ExprString(got); s != want {
		t.Errorf("rename got %q, want %q", s, want)
	}
	if s := ExprString(e); s != "where(i < 4, A[i], B[i - 4]) + max(j, 0.0)" {
		t.Errorf("rewrite modified its input: got %q", s)
	}
	gb := got.(*Binary)
	if gb == e || gb.Y != e.Y {
		t.Errorf("rename: got root %p (orig %p), right %p (orig %p); want a new root and the unchanged right subtree shared", gb, e, gb.Y, e.Y)
	}

	// Post-order: constant folding sees already folded children.
	sum := bin(Add, bin(Add, lit(1), lit(2)), bin(Mul, lit(3), lit(4)))
	folded := Rewrite(sum, func(e Expr) Expr {
		b, ok := e.(*Binary)
		if !ok {
			return e
		}
		x, ok1 := b.X.(*IntLit)
		y, ok2 := b.Y.(*IntLit)
		if !ok1 || !ok2 {
			return e
		}
		switch b.Op {
		case Add:
			return lit(x.Value + y.Value)
		case Mul:
			return lit(x.Value * y.Value)
		}
		return e
	})
	if !Equal(folded, lit(15)) {
		t.Errorf("folding got %s, want 15", ExprString(folded))
	}
	if Rewrite(nil, func(e Expr) Expr { return e }) != nil {
		t.Errorf("Rewrite(nil) got non-nil, want nil")
	}
}

func TestErrorFormat(t *testing.T) {
	src := "Y[i] = X[i]\n\tZ[j] = Q[j +]"
	err := Errorf(src, Pos{2, 14}, "expected expression but found '%s'", "]")
	want := "2:14: expected expression but found ']'\n     Z[j] = Q[j +]\n" + strings.Repeat(" ", 4+13) + "^"
	if got := err.Error(); got != want {
		t.Errorf("Error() got\n%s\nwant\n%s", got, want)
	}
}
