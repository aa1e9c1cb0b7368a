package parse_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/parse"
)

// testConsts are the constants every test parses with.
var testConsts = map[string]parse.ConstValue{
	"N":   {Int: 4},
	"CH":  {Int: 3},
	"K":   {Int: 2},
	"eps": {IsFloat: true, Float: 1e-5},
	"KK":  {IsFloat: true, Float: 4},
}

func opts() parse.Options { return parse.Options{Consts: testConsts} }

func idx(n string) *ir.Index                { return &ir.Index{Name: n} }
func lit(v int64) *ir.IntLit                { return &ir.IntLit{Value: v} }
func flt(v float64) *ir.FloatLit            { return &ir.FloatLit{Value: v} }
func bin(op ir.BinOp, x, y ir.Expr) ir.Expr { return &ir.Binary{Op: op, X: x, Y: y} }
func neg(x ir.Expr) ir.Expr                 { return &ir.Unary{Op: ir.Neg, X: x} }
func not(x ir.Expr) ir.Expr                 { return &ir.Unary{Op: ir.Not, X: x} }
func call(fn ir.Func, args ...ir.Expr) ir.Expr {
	return &ir.Call{Fn: fn, Args: args}
}
func acc(t string, ix ...ir.Expr) ir.Expr {
	if ix == nil {
		ix = []ir.Expr{}
	}
	return &ir.Access{Tensor: t, Indices: ix}
}

func TestParseExpr(t *testing.T) {
	a, b, c, d, e := idx("a"), idx("b"), idx("c"), idx("d"), idx("e")
	tests := []struct {
		desc string
		src  string // right-hand side of "Y[i] = "
		want ir.Expr
	}{
		{"int literal", "1", lit(1)},
		{"negative literal folds", "-3", lit(-3)},
		{"minus and literal fold across space", "- 3", lit(-3)},
		{"negation of parenthesized literal", "-(3)", neg(lit(3))},
		{"double minus", "--3", neg(lit(-3))},
		{"subtract negative literal", "a - -3", bin(ir.Sub, a, lit(-3))},
		{"binary minus stays binary", "a -3", bin(ir.Sub, a, lit(3))},
		{"negative literal times", "-2 * a", bin(ir.Mul, lit(-2), a)},
		{"min int64", "-9223372036854775808", lit(math.MinInt64)},
		{"max int64", "9223372036854775807", lit(math.MaxInt64)},
		{"leading zeros", "007", lit(7)},
		{"float", "1.5", flt(1.5)},
		{"float trailing dot", "1.", flt(1)},
		{"float leading dot", ".5", flt(0.5)},
		{"float exponent", "1e-3", flt(1e-3)},
		{"float exponent sign upper", "2E+2", flt(200)},
		{"float dot exponent", "1.e2", flt(100)},
		{"negative float", "-2.5", flt(-2.5)},
		{"negative zero", "-0.0", flt(math.Copysign(0, -1))},
		{"float underflow is zero", "1e-400", flt(0)},
		{"neg index", "-a", neg(a)},
		{"not", "!a", not(a)},
		{"not not", "!!a", not(not(a))},
		{"unary binds tighter", "-a * b", bin(ir.Mul, neg(a), b)},
		{"neg of paren", "-(a + b)", neg(bin(ir.Add, a, b))},
		{"add", "a + b", bin(ir.Add, a, b)},
		{"sub left assoc", "a - b - c", bin(ir.Sub, bin(ir.Sub, a, b), c)},
		{"parens on the right", "a - (b - c)", bin(ir.Sub, a, bin(ir.Sub, b, c))},
		{"mul over add", "a + b * c", bin(ir.Add, a, bin(ir.Mul, b, c))},
		{"parens over mul", "(a + b) * c", bin(ir.Mul, bin(ir.Add, a, b), c)},
		{"div mod left assoc", "a / b % c", bin(ir.Mod, bin(ir.Div, a, b), c)},
		{"compare over add", "a + b < c * d", bin(ir.Lt, bin(ir.Add, a, b), bin(ir.Mul, c, d))},
		{"le", "a <= b", bin(ir.Le, a, b)},
		{"gt", "a > b", bin(ir.Gt, a, b)},
		{"ge", "a >= b", bin(ir.Ge, a, b)},
		{"eq over compare", "a < b == c > d", bin(ir.Eq, bin(ir.Lt, a, b), bin(ir.Gt, c, d))},
		{"ne", "a != b", bin(ir.Ne, a, b)},
		{"and over eq, or over and", "a == b && c != d || e",
			bin(ir.Or, bin(ir.And, bin(ir.Eq, a, b), bin(ir.Ne, c, d)), e)},
		{"and binds tighter than or", "a || b && c", bin(ir.Or, a, bin(ir.And, b, c))},
		{"not binds tighter than and", "!a && b", bin(ir.And, not(a), b)},
		{"exp", "exp(a)", call(ir.FuncExp, a)},
		{"log", "log(a)", call(ir.FuncLog, a)},
		{"sqrt", "sqrt(a)", call(ir.FuncSqrt, a)},
		{"rsqrt", "rsqrt(a)", call(ir.FuncRsqrt, a)},
		{"tanh", "tanh(a)", call(ir.FuncTanh, a)},
		{"sigmoid", "sigmoid(a)", call(ir.FuncSigmoid, a)},
		{"relu", "relu(a)", call(ir.FuncRelu, a)},
		{"abs", "abs(a)", call(ir.FuncAbs, a)},
		{"erf", "erf(a)", call(ir.FuncErf, a)},
		{"pow", "pow(a, 2.0)", call(ir.FuncPow, a, flt(2))},
		{"min", "min(a, b)", call(ir.FuncMin, a, b)},
		{"atan2", "atan2(a, b)", call(ir.FuncAtan2, a, b)},
		{"round", "round(a)", call(ir.FuncRound, a)},
		{"clamp", "clamp(a, 0.0, 1.0)", call(ir.FuncMin, call(ir.FuncMax, a, flt(0)), flt(1))},
		{"max nested", "max(a, min(b, 0))", call(ir.FuncMax, a, call(ir.FuncMin, b, lit(0)))},
		{"where", "where(a < 4, X[a], 0.0)", &ir.Where{Cond: bin(ir.Lt, a, lit(4)), Then: acc("X", a), Else: flt(0)}},
		{"access", "X[a, b * 2 + c]", acc("X", a, bin(ir.Add, bin(ir.Mul, b, lit(2)), c))},
		{"scalar access", "S[]", acc("S")},
		{"int const", "N", &ir.Const{Name: "N", Int: 4}},
		{"float const", "a * eps", bin(ir.Mul, a, &ir.Const{Name: "eps", IsFloat: true, Float: 1e-5})},
		{"function name without call is an index", "exp + max", bin(ir.Add, idx("exp"), idx("max"))},
		{"max== is a comparison", "max==1", bin(ir.Eq, idx("max"), lit(1))},
		{"newlines inside parens", "(a +\n  b) * X[\n a,\n b\n]", bin(ir.Mul, bin(ir.Add, a, b), acc("X", a, b))},
		{"comment inside brackets", "X[a, # first\n b]", acc("X", a, b)},
	}
	for _, tt := range tests {
		op, err := parse.Parse("Y[i] = "+tt.src, opts())
		if err != nil {
			t.Errorf("%s: Parse(%q) got error %v, want %s", tt.desc, tt.src, err, ir.ExprString(tt.want))
			continue
		}
		if got := op.Stmts[0].RHS; !ir.Equal(got, tt.want) {
			t.Errorf("%s: Parse(%q) got %s, want %s", tt.desc, tt.src, ir.ExprString(got), ir.ExprString(tt.want))
		}
	}
}

func TestPositions(t *testing.T) {
	src := "Y[i] = (a + b) * -c + -3\n  Z[] += exp(X[i])"
	op, err := parse.Parse(src, opts())
	if err != nil {
		t.Fatalf("Parse got error %v, want nil", err)
	}
	s0, s1 := op.Stmts[0], op.Stmts[1]
	add := s0.RHS.(*ir.Binary)    // (a + b) * -c + -3
	mul := add.X.(*ir.Binary)     // (a + b) * -c
	inner := mul.X.(*ir.Binary)   // a + b
	negc := mul.Y.(*ir.Unary)     // -c
	lit3 := add.Y.(*ir.IntLit)    // -3
	cl := s1.RHS.(*ir.Call)       // exp(X[i])
	ac := cl.Args[0].(*ir.Access) // X[i]
	tests := []struct {
		desc string
		got  ir.Pos
		want ir.Pos
	}{
		{"first statement", s0.Pos, ir.Pos{Line: 1, Col: 1}},
		{"lhs index", s0.Indices[0].Pos, ir.Pos{Line: 1, Col: 3}},
		{"binary takes its left operand's position", add.Pos, ir.Pos{Line: 1, Col: 9}},
		{"binary with parenthesized left operand", mul.Pos, ir.Pos{Line: 1, Col: 9}},
		{"parenthesized binary", inner.Pos, ir.Pos{Line: 1, Col: 9}},
		{"unary at its operator", negc.Pos, ir.Pos{Line: 1, Col: 18}},
		{"unary operand", negc.X.At(), ir.Pos{Line: 1, Col: 19}},
		{"folded literal at the minus", lit3.Pos, ir.Pos{Line: 1, Col: 23}},
		{"second statement", s1.Pos, ir.Pos{Line: 2, Col: 3}},
		{"call", cl.Pos, ir.Pos{Line: 2, Col: 10}},
		{"access", ac.Pos, ir.Pos{Line: 2, Col: 14}},
		{"access index", ac.Indices[0].At(), ir.Pos{Line: 2, Col: 16}},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: got %d:%d, want %d:%d", tt.desc, tt.got.Line, tt.got.Col, tt.want.Line, tt.want.Col)
		}
	}
}

func TestParseOp(t *testing.T) {
	softmax := `# softmax over j
M[b] max= X[b, j]      # row max

E[b, j] = exp(X[b, j] - M[b])
S[b] += E[b, j]; Y[b, j] = E[b, j] / S[b]
`
	tests := []struct {
		desc       string
		src        string
		opts       parse.Options
		wantPrint  string
		wantInputs []string
	}{
		{"softmax in 4 statements with comments and ';'", softmax, opts(),
			"M[b] max= X[b, j]\nE[b, j] = exp(X[b, j] - M[b])\nS[b] += E[b, j]\nY[b, j] = E[b, j] / S[b]",
			[]string{"X"}},
		{"inputs in order of first appearance", "T[i] = B[i] + A[i]\nY[i] = T[i] * A[i] + C2[i, 0]", opts(),
			"T[i] = B[i] + A[i]\nY[i] = T[i] * A[i] + C2[i, 0]", []string{"B", "A", "C2"}},
		{"tensor read before it is written is not an input", "Y[i] = T[i]\nT[i] = A[i]", opts(),
			"Y[i] = T[i]\nT[i] = A[i]", []string{"A"}},
		{"fixed input order is kept", "Y[i] = A[i] + B[i]", parse.Options{Inputs: []string{"B", "A", "Unused"}},
			"Y[i] = A[i] + B[i]", []string{"B", "A", "Unused"}},
		{"scalar output", "S[] += X[i, j]", opts(), "S[] += X[i, j]", []string{"X"}},
		{"all reduce ops", "A[i] = X[i]\nB[i] += X[i, j]\nC3[i] *= X[i, j]\nD[i] max=X[i, j]\nE[i] min= X[i, j]", opts(),
			"A[i] = X[i]\nB[i] += X[i, j]\nC3[i] *= X[i, j]\nD[i] max= X[i, j]\nE[i] min= X[i, j]", []string{"X"}},
		{"no inputs", "Y[i] = i * 2", opts(), "Y[i] = i * 2", nil},
		{"CRLF line endings", "Y[i] = X[i]\r\nZ[i] = Y[i]\r\n", opts(), "Y[i] = X[i]\nZ[i] = Y[i]", []string{"X"}},
	}
	for _, tt := range tests {
		tt.opts.Name = "op"
		op, err := parse.Parse(tt.src, tt.opts)
		if err != nil {
			t.Errorf("%s: Parse got error %v, want nil", tt.desc, err)
			continue
		}
		if got := ir.Print(op); got != tt.wantPrint {
			t.Errorf("%s: Print got\n%s\nwant\n%s", tt.desc, got, tt.wantPrint)
		}
		if strings.Join(op.Inputs, ",") != strings.Join(tt.wantInputs, ",") {
			t.Errorf("%s: Inputs got %q, want %q", tt.desc, op.Inputs, tt.wantInputs)
		}
		if op.Name != "op" || op.Source != tt.src {
			t.Errorf("%s: Name, Source got %q, %q, want %q, %q", tt.desc, op.Name, op.Source, "op", tt.src)
		}
	}

	op, err := parse.Parse(softmax, opts())
	if err != nil {
		t.Fatalf("softmax: Parse got error %v", err)
	}
	wantReduce := []ir.ReduceOp{ir.Max, ir.Assign, ir.Sum, ir.Assign}
	for i, s := range op.Stmts {
		if s.Reduce != wantReduce[i] {
			t.Errorf("softmax statement %d: Reduce got %v, want %v", i, s.Reduce, wantReduce[i])
		}
	}
	if got := op.Stmts[3].Pos; got != (ir.Pos{Line: 5, Col: 18}) {
		t.Errorf("softmax statement 3: Pos got %v, want 5:18", got)
	}
}

func TestParseConsts(t *testing.T) {
	op, err := parse.Parse("Y[i] = X[i * K] * eps", opts())
	if err != nil {
		t.Fatalf("Parse got error %v, want nil", err)
	}
	if len(op.Consts) != len(testConsts) {
		t.Errorf("Consts got %d entries, want all %d provided", len(op.Consts), len(testConsts))
	}
	for name, v := range testConsts {
		c := op.Consts[name]
		want := &ir.Const{Name: name, IsFloat: v.IsFloat, Int: v.Int, Float: v.Float}
		if c == nil || !ir.Equal(c, want) || c.Pos != (ir.Pos{}) {
			t.Errorf("Consts[%s] got %+v, want %+v with a zero Pos", name, c, want)
		}
	}
	k := op.Stmts[0].RHS.(*ir.Binary).X.(*ir.Access).Indices[0].(*ir.Binary).Y.(*ir.Const)
	if k.Name != "K" || k.IsFloat || k.Int != 2 || k.Pos != (ir.Pos{Line: 1, Col: 14}) {
		t.Errorf("K node got %+v, want int const 2 at 1:14", k)
	}
	op, err = parse.Parse("Y[i] = X[i]", parse.Options{})
	if err != nil || op.Consts == nil || len(op.Consts) != 0 {
		t.Errorf("no consts: got %v, %v, want an empty non-nil map", op.Consts, err)
	}
}

func TestParseErrors(t *testing.T) {
	deep := func(n int) string { return "Y[i] = " + strings.Repeat("(", n) + "a" + strings.Repeat(")", n) }
	tests := []struct {
		desc string
		src  string
		want string // the first line of Error()
	}{
		{"unexpected token in access", "Y[i] = X[i j]", "1:12: expected ',' or ']' but found identifier j"},
		{"missing operand at end", "Y[i] = X[i] +", "1:14: expected expression but found end of input"},
		{"missing operand at end of line", "Y[i] =\nZ[i] = 1", "1:7: expected expression but found end of line"},
		{"error on the second line", "Y[i] = X[i]\nZ[j] = X[j] +* 2", "2:14: expected expression but found '*'"},
		{"unclosed paren", "Y[i] = (a + b", "1:8: unclosed '(': expected ')' but found end of input"},
		{"unclosed bracket", "Y[i] = X[i", "1:9: unclosed '[': expected ']' but found end of input"},
		{"unclosed call", "Y[i] = exp(a; Z[i] = 1", "1:11: unclosed '(': expected ')' but found ';'"},
		{"unclosed lhs", "Y[i", "1:2: unclosed '[': expected ']' but found end of input"},
		{"mismatched closer", "Y[i] = (a + b]", "1:14: expected ')' but found ']'"},
		{"lhs missing ]", "Y[i = 1", "1:5: expected ',' or ']' but found '='"},
		{"lhs expression", "Y[p+1] = 1", "1:3: left-hand side indices must be plain index variables, got p+1"},
		{"lhs literal", "Y[i, 0] = 1", "1:6: left-hand side indices must be plain index variables, got 0"},
		{"lhs access", "Y[X[i]] = 1", "1:9: a left-hand side index read from a tensor (a scatter, as in Y[Dst[e], f] += X[e, f]) needs +=, got ="},
		{"lhs index arithmetic", "Y[i + 1] += X[i]", "1:3: left-hand side indices must be plain index variables, got i + 1"},
		{"lhs repeated index", "Y[i, j, i] = 1", "1:9: index i appears twice on the left-hand side"},
		{"unknown function", "Y[i] = foo(1)", "1:8: unknown function foo"},
		{"arity of unary function", "Y[i] = exp(1, 2)", "1:8: exp takes 1 argument, got 2"},
		{"arity of binary function", "Y[i] = max(1)", "1:8: max takes 2 arguments, got 1"},
		{"no arguments", "Y[i] = sqrt()", "1:8: sqrt takes 1 argument, got 0"},
		{"arity of where", "Y[i] = where(a, b)", "1:8: where takes 3 arguments, got 2"},
		{"int overflow", "Y[i] = 99999999999999999999", "1:8: integer literal 99999999999999999999 overflows int64"},
		{"int overflow by one", "Y[i] = 9223372036854775808", "1:8: integer literal 9223372036854775808 overflows int64"},
		{"negative int overflow", "Y[i] = -9223372036854775809", "1:8: integer literal -9223372036854775809 overflows int64"},
		{"float overflow", "Y[i] = 1e999", "1:8: float literal 1e999 is out of range (inf and -inf are the infinities)"},
		{"empty source", "", "1:1: no statements"},
		{"only comments", "# nothing\n\n", "3:1: no statements"},
		{"only separators", " ;\n; ", "2:3: no statements"},
		{"const as lhs tensor", "N[i] = 1", "1:1: constant N cannot be used as a tensor"},
		{"const as rhs tensor", "Y[i] = N[i]", "1:8: constant N cannot be used as a tensor"},
		{"const as lhs index", "Y[i, N] = 1", "1:6: constant N cannot be used as a left-hand side index"},
		{"missing assignment", "Y[i] X[i]", "1:6: expected assignment operator (=, +=, *=, max=, min=) but found identifier X"},
		{"missing assignment at end", "Y[i]", "1:5: expected assignment operator (=, +=, *=, max=, min=) but found end of input"},
		{"max followed by ==", "Y[i] max== 1", "1:6: expected assignment operator (=, +=, *=, max=, min=) but found identifier max"},
		{"unsupported -=", "Y[i] -= X[i]", "1:6: unsupported assignment operator -=: use =, +=, *=, max= or min="},
		{"trailing paren", "Y[i] = X[i])", "1:12: expected end of statement (newline or ';') but found ')'"},
		{"two statements on a line", "Y[i] = 1 Z[i] = 2", "1:10: expected end of statement (newline or ';') but found identifier Z"},
		{"statement starts with bracket", "[i] = 1", "1:1: expected tensor name but found '['"},
		{"statement starts with number", "Y[i] = 1\n2 = 3", "2:1: expected tensor name but found number 2"},
		{"missing lhs bracket", "Y = 1", "1:3: expected '[' after Y but found '='"},
		{"single ampersand", "Y[i] = a & b", "1:10: unexpected character '&' (did you mean '&&'?)"},
		{"single bar", "Y[i] = a | b", "1:10: unexpected character '|' (did you mean '||'?)"},
		{"bad character", "Y[i] = a @ b", "1:10: unexpected character '@'"},
		{"non-ASCII letter", "Y[i] = é", "1:8: unexpected character 'é'"},
		{"invalid UTF-8", "Y[i] = \xff", "1:8: unexpected byte 0xff"},
		{"NUL", "Y[i] = a\x00", "1:9: unexpected character '\\x00'"},
		{"number glued to a name", "Y[i] = 2x", "1:8: malformed number 2x"},
		{"exponent without digits", "Y[i] = 1e+ 2", "1:8: malformed number 1e+"},
		{"two dots", "Y[i] = 1.5.3", "1:8: malformed number 1.5.3"},
		{"lexical error after a syntax error", "Y[i] = ) @", "1:8: expected expression but found ')'"},
		{"too deep", deep(200), "1:208: expression nested too deeply (more than 200 levels)"},
		{"too many minuses", "Y[i] = " + strings.Repeat("-", 200) + "a", "1:208: expression nested too deeply (more than 200 levels)"},
		{"trailing comma", "Y[i] = X[i,]", "1:12: expected expression but found ']'"},
	}
	for _, tt := range tests {
		_, err := parse.Parse(tt.src, opts())
		if err == nil {
			t.Errorf("%s: Parse(%q) got no error, want %q", tt.desc, tt.src, tt.want)
			continue
		}
		var ie *ir.Error
		if !errors.As(err, &ie) {
			t.Errorf("%s: Parse(%q) got error of type %T, want *ir.Error", tt.desc, tt.src, err)
		}
		if got, _, _ := strings.Cut(err.Error(), "\n"); got != tt.want {
			t.Errorf("%s: Parse(%q) got error %q, want %q", tt.desc, tt.src, got, tt.want)
		}
	}
	if _, err := parse.Parse(deep(199), opts()); err != nil {
		t.Errorf("199 nested parens: got error %v, want nil", err)
	}
}

func TestErrorText(t *testing.T) {
	tests := []struct {
		desc string
		src  string
		want string
	}{
		{"caret under the found token", "Y[i] = X[i j]",
			"1:12: expected ',' or ']' but found identifier j\n" +
				"    Y[i] = X[i j]\n" +
				"               ^"},
		{"lhs expression", "Y[p + 1] += X[p]",
			"1:3: left-hand side indices must be plain index variables, got p + 1\n" +
				"    Y[p + 1] += X[p]\n" +
				"      ^"},
		{"second line with a tab", "Y[i] = X[i]\n\tZ[j] = foo(X[j])",
			"2:9: unknown function foo\n" +
				"     Z[j] = foo(X[j])\n" +
				"            ^"},
		{"unclosed points at the opener", "Y[i] = where(i < 2,\n  A[i],\n  B[i]",
			"1:13: unclosed '(': expected ')' but found end of input\n" +
				"    Y[i] = where(i < 2,\n" +
				"                ^"},
		{"empty source has no caret", "", "1:1: no statements"},
	}
	for _, tt := range tests {
		_, err := parse.Parse(tt.src, opts())
		if err == nil {
			t.Errorf("%s: got no error, want\n%s", tt.desc, tt.want)
			continue
		}
		if got := err.Error(); got != tt.want {
			t.Errorf("%s: got\n%s\nwant\n%s", tt.desc, got, tt.want)
		}
	}

	_, err := parse.Parse("Y[i] = 1", parse.Options{Consts: map[string]parse.ConstValue{"1x": {}}})
	if err == nil || err.Error() != `invalid constant name "1x": not an identifier` {
		t.Errorf("bad const name: got %v, want invalid constant name error", err)
	}
}

// roundTripOps are parsed with opts(); each must print and parse back.
var roundTripOps = []struct {
	desc string
	src  string
}{
	{"conv2d stride 2", "Y[n,k,p,q] += X[n,c,p*2+r,q*2+s] * W[k,c,r,s]"},
	{"capsule conv", "C[b,k,p,q,i,j] += A[b,c,p*2+r,q*2+s,i,t] * B[k,c,r,s,t,j]"},
	{"depth2space", "Y[n,c,h,w] = X[n, c + (h%2*2 + w%2)*CH, h/2, w/2]"},
	{"concat with where", "Y[i] = where(i < 4, A[i], B[i - 4])"},
	{"padding", "Y[p] += where(p+r-1 >= 0 && p+r-1 < 8, X[p+r-1], 0.0) * W[r]"},
	{"row max", "M[b] max= X[b,j]"},
	{"row min", "M[b] min= X[b,j]"},
	{"product", "P[i] *= X[i,j]"},
	{"softmax", "M[b] max= X[b,j]\nE[b,j] = exp(X[b,j] - M[b])\nS[b] += E[b,j]\nY[b,j] = E[b,j] / S[b]"},
	{"layernorm", "Mu[b] += X[b,j] / N\nV[b] += (X[b,j] - Mu[b]) * (X[b,j] - Mu[b]) / N\nY[b,j] = (X[b,j] - Mu[b]) * rsqrt(V[b] + eps) * G[j] + Bt[j]"},
	{"gelu erf", "Y[i] = 0.5 * X[i] * (1.0 + erf(X[i] * 0.7071067811865476))"},
	{"unary functions", "Y[i] = sigmoid(X[i]) + tanh(X[i]) - relu(-X[i]) * abs(X[i]) / log(sqrt(exp(X[i])))"},
	{"pow", "Y[i] = pow(X[i], 2.0) + pow(2, X[i]) - pow(X[i], -0.5)"},
	{"matmul", "Y[i,j] += A[i,k] * B[k,j]"},
	{"batch matmul", "Y[b,i,j] += A[b,i,k] * B[b,k,j]"},
	{"scalar sum", "S[] += X[i,j]"},
	{"rms norm with scalar", "S[] += X[i]*X[i]; Y[i] = X[i] * rsqrt(S[] / N + eps)"},
	{"negatives", "Y[i] = -3 * X[i] - -2.5 + -(4) - -X[i] + --1 + -(-(2.0))"},
	{"logic", "Y[i] = where(!(i < 2) || i >= 5 && i != 7, 1.0, -1.0)"},
	{"div and mod indices", "Y[i] = X[i / 3 % 2, (i + 1) / 2, i % (2 * 3)]"},
	{"transpose", "Y[j,i] = X[i,j]"},
	{"max pool", "Y[n,c,p,q] max= X[n,c,p*2+r,q*2+s]"},
	{"avg pool with consts", "Y[n,c,p,q] += X[n,c,p*K+r,q*K+s] / KK"},
	{"depthwise conv", "Y[n,c,p,q] += X[n,c,p+r,q+s] * W[c,r,s]"},
	{"clamp", "Y[i] = min(max(X[i], 0.0), 6.0)"},
	{"float formatting", "Y[i] = X[i] * 1e-10 + 1e21 + 0.1 + 100000.0 + 5e-324 + 1.7976931348623157e308 + 123456789.125"},
	{"int extremes", "Y[i] = X[i] + -9223372036854775808 + 9223372036854775807"},
	{"redundant and needed parens", "Y[i] = ((((X[i])))) + (a - (b - (c - d))) * (a / (b / c)) - (a + b)"},
	{"comments, ';' and continuation", "# op\nY[i] = X[i,  # first\n  0]; Z[i] = (Y[i] +\n 1)\n\n"},
	{"comparisons of comparisons", "Y[i,j] = where((i == 1) == (j == 2), 1, 0) + where(i < j != j < i, 1, 0)"},
	{"lstm cell", "G[b,h] += X[b,k] * Wx[k,h]\nI[b,h] = sigmoid(G[b,h] + Hp[b,h])\nC2[b,h] = I[b,h] * tanh(G[b,h]) + Cp[b,h]\nH[b,h] = tanh(C2[b,h]) * I[b,h]"},
	{"function names as indices", "Y[exp, max] = X[exp] + max + where"},
	{"deepest minus chain", "Y[i] = " + strings.Repeat("-", 199) + "3"},
	{"deepest negated parens", "Y[i] = " + strings.Repeat("-(", 99) + "3" + strings.Repeat(")", 99)},
	{"deepest parens", "Y[i] = " + strings.Repeat("(", 199) + "a" + strings.Repeat(")", 199)},
	{"deep brackets and calls", "Y[i] = " + strings.Repeat("X[exp(", 66) + "i" + strings.Repeat(")]", 66)},
	{"gather-like nesting", "Y[i] = X[where(i < 3, i, 2 - i % 3), 0] * -eps"},
}

func TestRoundTrip(t *testing.T) {
	for _, tt := range roundTripOps {
		op, err := parse.Parse(tt.src, opts())
		if err != nil {
			t.Errorf("%s: Parse got error %v, want nil", tt.desc, err)
			continue
		}
		printed := ir.Print(op)
		op2, err := parse.Parse(printed, opts())
		if err != nil {
			t.Errorf("%s: Parse(Print) of\n%s\ngot error %v, want nil", tt.desc, printed, err)
			continue
		}
		if !ir.EqualOp(op, op2) {
			t.Errorf("%s: round trip got\n%s\nwant\n%s", tt.desc, ir.Print(op2), printed)
		}
		if again := ir.Print(op2); again != printed {
			t.Errorf("%s: printing twice got\n%s\nwant\n%s", tt.desc, again, printed)
		}
		if ir.Hash(op) != ir.Hash(op2) {
			t.Errorf("%s: Hash of the round trip got %s, want %s", tt.desc, ir.Hash(op2), ir.Hash(op))
		}
	}
}

func TestHash(t *testing.T) {
	parseOK := func(src string, o parse.Options) *ir.Op {
		t.Helper()
		op, err := parse.Parse(src, o)
		if err != nil {
			t.Fatalf("Parse(%q) got error %v", src, err)
		}
		return op
	}
	base := parseOK("Y[n,k,p,q] += X[n,c,p*2+r,q*2+s] * W[k,c,r,s]", opts())
	tests := []struct {
		desc string
		op   *ir.Op
		want bool // same hash as base
	}{
		{"differently spaced with comments",
			parseOK("# conv\n\n  Y[ n , k,p,q ]+=X[n,c,(p*2)+r,q * 2 + s]*W[k,c,r,s]  # done\n", parse.Options{Name: "other", Consts: testConsts}), true},
		{"the printed text", parseOK(ir.Print(base), opts()), true},
		{"stride 1", parseOK("Y[n,k,p,q] += X[n,c,p+r,q+s] * W[k,c,r,s]", opts()), false},
		{"operands swapped", parseOK("Y[n,k,p,q] += W[k,c,r,s] * X[n,c,p*2+r,q*2+s]", opts()), false},
		{"max reduction", parseOK("Y[n,k,p,q] max= X[n,c,p*2+r,q*2+s] * W[k,c,r,s]", opts()), false},
		{"other input order", parseOK("Y[n,k,p,q] += X[n,c,p*2+r,q*2+s] * W[k,c,r,s]",
			parse.Options{Inputs: []string{"W", "X"}, Consts: testConsts}), false},
		{"other const value", parseOK("Y[n,k,p,q] += X[n,c,p*2+r,q*2+s] * W[k,c,r,s]",
			parse.Options{Consts: map[string]parse.ConstValue{"N": {Int: 5}}}), false},
	}
	for _, tt := range tests {
		if got := ir.Hash(tt.op) == ir.Hash(base); got != tt.want {
			t.Errorf("%s: Hash equal got %v, want %v", tt.desc, got, tt.want)
		}
		if got := ir.EqualOp(tt.op, base); got != tt.want {
			t.Errorf("%s: EqualOp got %v, want %v", tt.desc, got, tt.want)
		}
	}
}
