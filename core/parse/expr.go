package parse

import "github.com/neoflow/neoflow/core/ir"

// Expr parses src as one expression, as it would stand on the right-hand
// side of a statement (no named constants). Syntax errors are *ir.Error
// values, as Parse's.
func Expr(src string) (e ir.Expr, err error) {
	p := &parser{src: src, toks: lex(src), consts: map[string]*ir.Const{}, scatterVars: map[string]bool{}}
	defer catch(&err)
	p.skipSeparators()
	x := p.parseExpr()
	p.skipSeparators()
	if t := p.peek(); t.kind != tEOF {
		p.errExpected("the end of the expression", t)
	}
	return x, nil
}
