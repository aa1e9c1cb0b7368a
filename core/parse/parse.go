package parse

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/neoflow/neoflow/core/ir"
)

// MaxDepth is the deepest nesting of parentheses, brackets, calls and unary
// operators an expression may have.
const MaxDepth = 200

// Options configure Parse.
type Options struct {
	// Name becomes Op.Name.
	Name string
	// Inputs fixes the order of the op's inputs. When empty, the inputs are
	// the tensors read but never written, in order of first appearance. When
	// given it is kept as is; the semantic checker validates it.
	Inputs []string
	// Outputs fixes the order of the op's outputs (Op.Outputs). When empty,
	// the outputs are in statement order. The semantic checker validates it.
	Outputs []string
	// Consts are named scalar constants. An identifier naming one (and not
	// followed by '[' or '(') parses as an *ir.Const carrying its value.
	Consts map[string]ConstValue
}

// ConstValue is the value of a named constant.
type ConstValue struct {
	IsFloat bool
	Int     int64   // the value when !IsFloat
	Float   float64 // the value when IsFloat
}

// Parse parses src into an op. Syntax errors are *ir.Error values carrying
// line:column and a caret under the offending token.
func Parse(src string, opts Options) (op *ir.Op, err error) {
	consts := make(map[string]*ir.Const, len(opts.Consts))
	for name, v := range opts.Consts {
		if !isIdent(name) {
			return nil, &ir.Error{Msg: fmt.Sprintf("invalid constant name %q: not an identifier", name)}
		}
		consts[name] = &ir.Const{Name: name, IsFloat: v.IsFloat, Int: v.Int, Float: v.Float}
	}
	p := &parser{src: src, toks: lex(src), consts: consts, scatterVars: map[string]bool{}}
	defer catch(&err)
	stmts := p.parseStmts()
	op = &ir.Op{
		Name:   opts.Name,
		Source: src,
		Stmts:  stmts,
		Consts: consts,
	}
	if len(opts.Inputs) > 0 {
		op.Inputs = append([]string(nil), opts.Inputs...)
	} else {
		op.Inputs = inferInputs(stmts)
	}
	op.Outputs = append([]string(nil), opts.Outputs...)
	return op, nil
}

// inferInputs lists the tensors read but never written, in order of first
// appearance.
func inferInputs(stmts []*ir.Stmt) []string {
	written := map[string]bool{}
	for _, s := range stmts {
		written[s.Tensor] = true
	}
	seen := map[string]bool{}
	var inputs []string
	for _, s := range stmts {
		ir.Walk(s.RHS, func(e ir.Expr) bool {
			if a, ok := e.(*ir.Access); ok && !written[a.Tensor] && !seen[a.Tensor] {
				seen[a.Tensor] = true
				inputs = append(inputs, a.Tensor)
			}
			return true
		})
	}
	return inputs
}

func isIdent(s string) bool {
	if s == "" || !isLetter(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if !isLetter(s[i]) && !isDigit(s[i]) {
			return false
		}
	}
	return true
}

type bailout struct{ err *ir.Error }

// catch, deferred by an entry point, turns a bailout into *err (the
// results it had not set yet stay zero) and lets any other panic through.
func catch(err *error) {
	if r := recover(); r != nil {
		b, ok := r.(bailout)
		if !ok {
			panic(r)
		}
		*err = b.err
	}
}

type parser struct {
	src    string
	toks   []token
	i      int // index of the current token
	nest   int // open '(' and '[': newlines inside them are insignificant
	depth  int // expression nesting, limited by MaxDepth
	nodes  int // expression nodes so far, limited by ir.MaxNodes
	prev   int // end offset of the last consumed token
	consts map[string]*ir.Const
	// scatterVars are the variables made for scatter targets so far: one
	// name per target in the whole op, so that out_shapes sets each alone.
	scatterVars map[string]bool
}

func (p *parser) fail(pos ir.Pos, format string, args ...any) {
	panic(bailout{ir.Errorf(p.src, pos, format, args...)})
}

// node counts one more expression node and stops the parse at once when
// the op passes ir.MaxNodes. The error quotes no source line: the line
// of an op that large can be megabytes long.
func (p *parser) node() {
	p.nodes++
	if p.nodes > ir.MaxNodes {
		panic(bailout{ir.TooLarge("the op", p.nodes, ir.MaxNodes, true)})
	}
}

// peek returns the current token, skipping newlines inside brackets and
// reporting lexical errors.
func (p *parser) peek() token {
	for p.nest > 0 && p.toks[p.i].kind == tNewline {
		p.i++
	}
	t := p.toks[p.i]
	if t.kind == tIllegal {
		p.fail(t.pos, "%s", t.msg)
	}
	return t
}

// next consumes and returns the current token.
func (p *parser) next() token {
	t := p.peek()
	if t.kind != tEOF {
		p.i++
	}
	p.prev = t.end
	return t
}

// peek2 is the kind of the token after the current one (no newline
// skipping: it is used for the token glued to an identifier).
func (p *parser) peek2() tokKind {
	if p.i+1 < len(p.toks) {
		return p.toks[p.i+1].kind
	}
	return tEOF
}

func (p *parser) errExpected(what string, t token) {
	p.fail(t.pos, "expected %s but found %s", what, t.describe())
}

// closeList expects a separator or the closer of a bracket opened by open.
// It reports an unclosed bracket at the opener when the statement or the
// input ends first.
func (p *parser) expectClose(open token, closer tokKind, what string) {
	t := p.peek()
	if t.kind == closer {
		return
	}
	if t.kind == tEOF || t.kind == tSemi {
		closeText := "]"
		if closer == tRParen {
			closeText = ")"
		}
		p.fail(open.pos, "unclosed '%s': expected '%s' but found %s", open.text, closeText, t.describe())
	}
	p.errExpected(what, t)
}

func (p *parser) skipSeparators() {
	for {
		k := p.peek().kind
		if k != tNewline && k != tSemi {
			return
		}
		p.next()
	}
}

func (p *parser) parseStmts() []*ir.Stmt {
	var stmts []*ir.Stmt
	p.skipSeparators()
	for p.peek().kind != tEOF {
		stmts = append(stmts, p.parseStmt())
		if t := p.peek(); t.kind != tNewline && t.kind != tSemi && t.kind != tEOF {
			p.errExpected("end of statement (newline or ';')", t)
		}
		p.skipSeparators()
	}
	if len(stmts) == 0 {
		p.fail(p.peek().pos, "no statements")
	}
	return stmts
}

// parseStmt parses Tensor[i, j, ...] AssignOp Expr.
func (p *parser) parseStmt() *ir.Stmt {
	name := p.peek()
	if name.kind != tIdent {
		p.errExpected("tensor name", name)
	}
	p.next()
	if _, ok := p.consts[name.text]; ok {
		p.fail(name.pos, "constant %s cannot be used as a tensor", name.text)
	}
	open := p.peek()
	if open.kind != tLBrack {
		p.errExpected(fmt.Sprintf("'[' after %s", name.text), open)
	}
	p.next()
	p.nest++
	s := &ir.Stmt{Pos: name.pos, Tensor: name.text, Indices: []*ir.Index{}}
	seen := map[string]bool{}
	var scat []*ir.Access // left-hand side indices read from index tensors, by position (nil: a variable)
	if p.peek().kind != tRBrack {
		for {
			start := p.peek()
			e := p.parseExpr()
			switch x := e.(type) {
			case *ir.Index:
				if seen[x.Name] {
					p.fail(x.Pos, "index %s appears twice on the left-hand side", x.Name)
				}
				seen[x.Name] = true
				s.Indices = append(s.Indices, x)
				scat = append(scat, nil)
			case *ir.Access:
				x.Indirect = true // a scatter target: Y[Dst[e], f] += ...
				s.Indices = append(s.Indices, &ir.Index{Pos: x.Pos})
				scat = append(scat, x)
			case *ir.Const:
				p.fail(x.Pos, "constant %s cannot be used as a left-hand side index", x.Name)
			default:
				text := strings.Join(strings.Fields(p.src[start.off:p.prev]), " ")
				p.fail(start.pos, "left-hand side indices must be plain index variables, got %s", text)
			}
			if p.peek().kind != tComma {
				break
			}
			p.next()
		}
	}
	p.expectClose(open, tRBrack, "',' or ']'")
	p.next()
	p.nest--
	op := p.peek()
	switch op.kind {
	case tAssignOp:
		s.Reduce = op.red
	case tAssignBad:
		p.fail(op.pos, "unsupported assignment operator %s: use =, +=, *=, max= or min=", op.text)
	default:
		p.errExpected("assignment operator (=, +=, *=, max=, min=)", op)
	}
	p.next()
	s.RHS = p.parseExpr()
	if slices.ContainsFunc(scat, func(a *ir.Access) bool { return a != nil }) {
		p.scatter(s, scat, op)
	}
	return s
}

// scatter rewrites a statement with left-hand side indices read from
// index tensors, Y[Dst[e], f] += body, into the form the rest of the
// compiler knows, a sum over the points that select each element:
//
//	Y[v_Dst, f] += where(v_Dst == Dst[e], body, 0.0)
//
// with a fresh variable per such index (v_<tensor>, numbered when taken),
// whose extent the caller gives (out_shapes), as nothing bounds it.
func (p *parser) scatter(s *ir.Stmt, scat []*ir.Access, op token) {
	if s.Reduce != ir.Sum {
		p.fail(op.pos, "a left-hand side index read from a tensor (a scatter, as in Y[Dst[e], f] += X[e, f]) needs +=, got %s", s.Reduce)
	}
	taken := map[string]bool{}
	for c := range p.consts {
		taken[c] = true
	}
	for _, x := range s.Indices {
		taken[x.Name] = true
	}
	ir.Walk(s.RHS, func(e ir.Expr) bool {
		if x, ok := e.(*ir.Index); ok {
			taken[x.Name] = true
		}
		return true
	})
	var conds []ir.Expr
	for k, a := range scat {
		if a == nil {
			continue
		}
		name := "v_" + a.Tensor
		for n := 2; taken[name] || p.scatterVars[name]; n++ {
			name = fmt.Sprintf("v_%s_%d", a.Tensor, n)
		}
		taken[name] = true
		p.scatterVars[name] = true
		s.Indices[k].Name = name
		conds = append(conds, &ir.Binary{Pos: a.Pos, Op: ir.Eq, X: &ir.Index{Pos: a.Pos, Name: name}, Y: a})
	}
	s.RHS = &ir.Where{Pos: s.RHS.At(), Cond: ir.AndAll(conds), Then: s.RHS, Else: &ir.FloatLit{Pos: s.RHS.At()}}
}

func (p *parser) parseExpr() ir.Expr { return p.parseBinary(1) }

// parseBinary parses a left-associative chain of binary operators of
// precedence >= minPrec. A Binary's Pos is its left operand's Pos.
func (p *parser) parseBinary(minPrec int) ir.Expr {
	x := p.parseUnary()
	for {
		t := p.peek()
		if t.kind != tBinOp || t.bin.Prec() < minPrec {
			return x
		}
		p.next()
		y := p.parseBinary(t.bin.Prec() + 1)
		p.node()
		x = &ir.Binary{Pos: x.At(), Op: t.bin, X: x, Y: y}
	}
}

// parseUnary parses an operand: '-' and '!' applied to an operand, or a
// primary. A '-' directly before a number folds into a negative literal.
func (p *parser) parseUnary() ir.Expr {
	t := p.peek()
	p.depth++
	if p.depth > MaxDepth {
		p.fail(t.pos, "expression nested too deeply (more than %d levels)", MaxDepth)
	}
	var e ir.Expr
	switch {
	case t.kind == tBinOp && t.bin == ir.Sub:
		p.next()
		p.node()
		if n := p.peek(); n.kind == tInt || n.kind == tFloat {
			p.next()
			e = p.number(n, t.pos, "-"+n.text)
		} else if x := p.parseUnary(); isSpecial(x) {
			e = &ir.FloatLit{Pos: t.pos, Value: -x.(*ir.FloatLit).Value} // -inf
		} else {
			e = &ir.Unary{Pos: t.pos, Op: ir.Neg, X: x}
		}
	case t.kind == tNot:
		p.next()
		p.node()
		e = &ir.Unary{Pos: t.pos, Op: ir.Not, X: p.parseUnary()}
	default:
		e = p.parsePrimary()
	}
	p.depth--
	return e
}

// number converts the literal token n, with text (possibly with a folded
// minus) at pos.
func (p *parser) number(n token, pos ir.Pos, text string) ir.Expr {
	if n.kind == tInt {
		v, err := strconv.ParseInt(text, 10, 64)
		if err != nil {
			p.fail(pos, "integer literal %s overflows int64", text)
		}
		return &ir.IntLit{Pos: pos, Value: v}
	}
	v, err := strconv.ParseFloat(text, 64)
	if err != nil || math.IsInf(v, 0) || math.IsNaN(v) {
		p.fail(pos, "float literal %s is out of range (inf and -inf are the infinities)", text)
	}
	return &ir.FloatLit{Pos: pos, Value: v}
}

// isSpecial reports whether e is the literal inf or nan, which a '-'
// before it folds into.
func isSpecial(e ir.Expr) bool {
	f, ok := e.(*ir.FloatLit)
	return ok && (math.IsInf(f.Value, 0) || math.IsNaN(f.Value))
}

func (p *parser) parsePrimary() ir.Expr {
	t := p.peek()
	switch t.kind {
	case tInt, tFloat:
		p.next()
		p.node()
		return p.number(t, t.pos, t.text)
	case tLParen:
		p.next()
		p.nest++
		e := p.parseExpr()
		p.expectClose(t, tRParen, "')'")
		p.next()
		p.nest--
		return e
	case tIdent:
		p.next()
		p.node()
		switch p.peekGlued() {
		case tLBrack:
			return p.parseAccess(t)
		case tLParen:
			return p.parseCall(t)
		}
		switch t.text {
		case "inf":
			return &ir.FloatLit{Pos: t.pos, Value: math.Inf(1)}
		case "nan":
			return &ir.FloatLit{Pos: t.pos, Value: math.NaN()}
		}
		if c, ok := p.consts[t.text]; ok {
			return &ir.Const{Pos: t.pos, Name: c.Name, IsFloat: c.IsFloat, Int: c.Int, Float: c.Float}
		}
		return &ir.Index{Pos: t.pos, Name: t.text}
	}
	p.errExpected("expression", t)
	return nil
}

// peekGlued is the kind of the current token for deciding whether an
// identifier is a tensor access or a call: inside brackets newlines are
// skipped as everywhere else; outside, a newline ends the statement.
func (p *parser) peekGlued() tokKind {
	k := p.toks[p.i].kind
	if k == tNewline && p.nest > 0 {
		return p.peek().kind
	}
	return k
}

func (p *parser) parseAccess(name token) ir.Expr {
	if _, ok := p.consts[name.text]; ok {
		p.fail(name.pos, "constant %s cannot be used as a tensor", name.text)
	}
	a := &ir.Access{Pos: name.pos, Tensor: name.text, Indices: p.parseList(tRBrack)}
	for _, x := range a.Indices {
		if inner, ok := x.(*ir.Access); ok {
			inner.Indirect = true // a whole index read from a tensor: E[Idx[b], d]
		}
	}
	return a
}

// parseList parses '(' or '[', a comma-separated list of expressions and
// the matching closer.
func (p *parser) parseList(closer tokKind) []ir.Expr {
	open := p.next()
	p.nest++
	what := "',' or ']'"
	if closer == tRParen {
		what = "',' or ')'"
	}
	list := []ir.Expr{}
	if p.peek().kind != closer {
		for {
			list = append(list, p.parseExpr())
			if p.peek().kind != tComma {
				break
			}
			p.next()
		}
	}
	p.expectClose(open, closer, what)
	p.next()
	p.nest--
	return list
}

func (p *parser) parseCall(name token) ir.Expr {
	if name.text == "where" {
		args := p.parseList(tRParen)
		if len(args) != 3 {
			p.fail(name.pos, "where takes 3 arguments, got %d", len(args))
		}
		return &ir.Where{Pos: name.pos, Cond: args[0], Then: args[1], Else: args[2]}
	}
	if name.text == "clamp" {
		args := p.parseList(tRParen)
		if len(args) != 3 {
			p.fail(name.pos, "clamp takes 3 arguments (x, lo, hi), got %d", len(args))
		}
		inner := &ir.Call{Pos: name.pos, Fn: ir.FuncMax, Args: []ir.Expr{args[0], args[1]}}
		return &ir.Call{Pos: name.pos, Fn: ir.FuncMin, Args: []ir.Expr{inner, args[2]}}
	}
	fn, ok := ir.LookupFunc(name.text)
	if !ok {
		p.fail(name.pos, "unknown function %s", name.text)
	}
	args := p.parseList(tRParen)
	if n := fn.Arity(); len(args) != n {
		plural := "s"
		if n == 1 {
			plural = ""
		}
		p.fail(name.pos, "%s takes %d argument%s, got %d", name.text, n, plural, len(args))
	}
	return &ir.Call{Pos: name.pos, Fn: fn, Args: args}
}
