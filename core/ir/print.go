package ir

import (
	"math"
	"strconv"
	"strings"
)

// Print renders op's statements in the expression language, one statement
// per line with no trailing newline:
//
//	Y[n, k] += X[n, c] * W[k, c]
//
// Name, Inputs and the Consts map are not printed (constants print as their
// names). The output parses back (core/parse, with the same constants) to an
// op that is EqualOp to this one, and printing that op gives the same text.
func Print(op *Op) string {
	if op == nil {
		return "<nil>"
	}
	var b strings.Builder
	for i, s := range op.Stmts {
		if i > 0 {
			b.WriteByte('\n')
		}
		writeStmt(&b, s)
	}
	return b.String()
}

// String returns Print(op).
func (op *Op) String() string { return Print(op) }

// StmtString renders one statement, e.g. "S[] += X[i]".
func StmtString(s *Stmt) string {
	var b strings.Builder
	writeStmt(&b, s)
	return b.String()
}

// String returns StmtString(s).
func (s *Stmt) String() string { return StmtString(s) }

func writeStmt(b *strings.Builder, s *Stmt) {
	if s == nil {
		b.WriteString("<nil>")
		return
	}
	b.WriteString(s.Tensor)
	b.WriteByte('[')
	for i, ix := range s.Indices {
		if i > 0 {
			b.WriteString(", ")
		}
		if ix == nil {
			b.WriteString("<nil>")
		} else {
			b.WriteString(ix.Name)
		}
	}
	b.WriteString("] ")
	b.WriteString(s.Reduce.String())
	b.WriteByte(' ')
	writeExpr(b, s.RHS)
}

// ExprString renders e with the fewest parentheses that keep its structure:
// binary operators are left associative, so a right operand of equal
// precedence is parenthesized, as is any operand of lower precedence.
//
// Literals print so that they parse back to the same literal: a negative
// IntLit prints as "-3" (the parser folds a minus directly before a number
// into the literal), while a negation of a literal prints as "-(3)", and a
// double minus as "- -x" or "- -3" (the negation of the literal -3). A
// FloatLit prints the shortest decimal that parses back to the same float64,
// always with a '.' or an exponent ("2.0", "1e-05", "-0.0"). A Const prints
// as its name.
func ExprString(e Expr) string {
	var b strings.Builder
	writeExpr(&b, e)
	return b.String()
}

// precUnary is the binding strength of unary operators and atoms: tighter
// than any binary operator.
const precUnary = 7

func exprPrec(e Expr) int {
	if x, ok := e.(*Binary); ok {
		return x.Op.Prec()
	}
	return precUnary
}

// FormatFloat renders a float64 literal: the shortest decimal that parses
// back to v, with a '.' or an exponent so that it reads as a float.
func FormatFloat(v float64) string {
	switch {
	case math.IsNaN(v):
		return "nan"
	case math.IsInf(v, 1):
		return "inf"
	case math.IsInf(v, -1):
		return "-inf"
	}
	s := strconv.FormatFloat(v, 'g', -1, 64)
	if !strings.ContainsAny(s, ".eE") {
		s += ".0"
	}
	return s
}

func writeExpr(b *strings.Builder, e Expr) {
	switch x := e.(type) {
	case nil:
		b.WriteString("<nil>")
	case *IntLit:
		b.WriteString(strconv.FormatInt(x.Value, 10))
	case *FloatLit:
		b.WriteString(FormatFloat(x.Value))
	case *Const:
		b.WriteString(x.Name)
	case *Index:
		b.WriteString(x.Name)
	case *Access:
		b.WriteString(x.Tensor)
		b.WriteByte('[')
		writeList(b, x.Indices)
		b.WriteByte(']')
	case *Unary:
		if x.Op == Neg {
			b.WriteByte('-')
		} else {
			b.WriteByte('!')
		}
		// Parenthesize binary operands and a non-negative literal under a
		// minus, so that "-(3)" does not fold into the literal -3. A minus
		// under a minus is separated by a space: "- -x", "- -3" (the inner
		// one is the literal -3). No other parentheses are added, so the
		// printed text never nests deeper than the text it was parsed from.
		paren := exprPrec(x.X) < precUnary
		if x.Op == Neg {
			switch y := x.X.(type) {
			case *IntLit:
				paren = y.Value >= 0
			case *FloatLit:
				paren = !math.Signbit(y.Value)
			}
			if !paren && startsWithMinus(x.X) {
				b.WriteByte(' ')
			}
		}
		writeOperand(b, x.X, paren)
	case *Binary:
		p := x.Op.Prec()
		writeOperand(b, x.X, exprPrec(x.X) < p)
		b.WriteByte(' ')
		b.WriteString(x.Op.String())
		b.WriteByte(' ')
		writeOperand(b, x.Y, exprPrec(x.Y) <= p)
	case *Call:
		b.WriteString(x.Fn.String())
		b.WriteByte('(')
		writeList(b, x.Args)
		b.WriteByte(')')
	case *Where:
		b.WriteString("where(")
		writeList(b, []Expr{x.Cond, x.Then, x.Else})
		b.WriteByte(')')
	default:
		b.WriteString("<?>")
	}
}

// startsWithMinus reports whether an unparenthesized operand of a unary
// operator prints with a leading '-'.
func startsWithMinus(e Expr) bool {
	switch x := e.(type) {
	case *IntLit:
		return x.Value < 0
	case *FloatLit:
		return math.Signbit(x.Value)
	case *Unary:
		return x.Op == Neg
	}
	return false
}

func writeOperand(b *strings.Builder, e Expr, paren bool) {
	if paren {
		b.WriteByte('(')
	}
	writeExpr(b, e)
	if paren {
		b.WriteByte(')')
	}
}

func writeList(b *strings.Builder, es []Expr) {
	for i, e := range es {
		if i > 0 {
			b.WriteString(", ")
		}
		writeExpr(b, e)
	}
}
