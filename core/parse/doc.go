// Package parse turns the text of a tensor operator into an *ir.Op.
//
// An op is one or more statements in the index notation of Tensor
// Comprehensions:
//
//	# 2-D convolution, stride 2
//	Y[n, k, p, q] += X[n, c, p*2 + r, q*2 + s] * W[k, c, r, s]
//
// # Grammar
//
//	Op         = { Sep } Stmt { Sep { Sep } Stmt } { Sep } .
//	Sep        = newline | ";" .
//	Stmt       = ident "[" [ ident { "," ident } ] "]" AssignOp Expr .
//	AssignOp   = "=" | "+=" | "*=" | "max=" | "min=" .
//	Expr       = OrExpr .
//	OrExpr     = AndExpr { "||" AndExpr } .
//	AndExpr    = EqExpr { "&&" EqExpr } .
//	EqExpr     = RelExpr { ( "==" | "!=" ) RelExpr } .
//	RelExpr    = AddExpr { ( "<" | "<=" | ">" | ">=" ) AddExpr } .
//	AddExpr    = MulExpr { ( "+" | "-" ) MulExpr } .
//	MulExpr    = Unary { ( "*" | "/" | "%" ) Unary } .
//	Unary      = ( "-" | "!" ) Unary | Primary .
//	Primary    = int | float | "(" Expr ")" | Access | Call | ident .
//	Access     = ident "[" [ Expr { "," Expr } ] "]" .
//	Call       = ident "(" [ Expr { "," Expr } ] ")" .
//
//	ident      = letter { letter | digit } .          letter = "A"…"Z" | "a"…"z" | "_"
//	int        = digit { digit } .
//	float      = digits "." [ digits ] [ exp ] | "." digits [ exp ] | digits exp .
//	exp        = ( "e" | "E" ) [ "+" | "-" ] digits .
//
// All binary operators are left associative; unary operators bind tighter
// than any binary operator. The left-hand side of a statement is parsed as
// expressions and then required to be distinct plain index variables, so the
// error for Y[p+1] names the offending index. A left-hand side with no
// indices (S[] += X[i]) declares a rank-0 output.
//
// # Lexical conventions
//
//   - Blank space is ' ', '\t' and '\r'. A '#' starts a comment that runs to
//     the end of the line.
//   - A newline ends a statement, except inside parentheses or brackets,
//     where newlines are insignificant (so a long expression may span lines
//     inside them).
//   - "max=" and "min=" are single tokens when "max"/"min" is immediately
//     followed by '=' that is not part of "==": "M[b] max= X[b,j]" is a
//     reduction, "max(a, b)" a call, "max == 1" a comparison.
//   - Numbers are ASCII decimal. A number with a '.' or an exponent is a
//     float literal ("1.", ".5", "1e-3"); others are integer literals, which
//     must fit in int64. Letters, digits, '_' or '.' glued to a number are an
//     error ("2x", "1e", "1.5.3"). Float literals written as numbers must
//     be finite; the identifiers inf and nan are the float literals +∞ and
//     NaN (an attention mask's where(M[i, j], -inf, S[i, j])), and are not
//     names of index variables or constants.
//   - A '-' directly before a number (as an operand, not a binary minus)
//     folds into the literal: "-3" is IntLit{-3} and "a - -3" subtracts the
//     literal -3, while "-(3)" is Unary{Neg, IntLit{3}}; "-inf" is the
//     literal -∞.
//
// # Identifiers
//
// An identifier followed by '[' is a tensor access; followed by '(' it is a
// call of a built-in function (ir.LookupFunc, with its arity checked), of
// where(cond, then, else), or of clamp(x, lo, hi), read as
// min(max(x, lo), hi). Otherwise it is an *ir.Const when Options.Consts
// names it (the node carries the constant's value), else an *ir.Index. A
// constant may not name a tensor or appear on a left-hand side. Function
// names are not reserved: "exp" without '(' is an index variable.
//
// # Result
//
// The op's Source is the text, Name is Options.Name, Consts holds every
// constant of Options.Consts (as *ir.Const with a zero Pos; a non-nil map),
// and Inputs is Options.Inputs when given, else the tensors read but never
// written, in order of first appearance. Semantic checks (kinds, a tensor
// written twice or read before it is written, extents) are left to
// core/sema.
//
// # Positions
//
// Every node has the position (1-based line, column in bytes) of its first
// token: a Stmt and an Access that of the tensor name, a Call or Where that
// of the function name, a Unary (and a folded negative literal) that of its
// operator, and a Binary that of its left operand, i.e. Binary.Pos ==
// Binary.X.At(). Parentheses are not nodes: a parenthesized expression keeps
// the position of its inner expression.
//
// # Errors
//
// Every syntax error is an *ir.Error at the offending token, whose Error()
// reads "line:col: message" followed by the source line and a caret, e.g.
//
//	1:12: expected ',' or ']' but found identifier j
//	    Y[i] = X[i j]
//	               ^
//
// Messages include: "expected X but found Y" (tokens are described as '+',
// identifier x, number 3, end of line, end of input), "unclosed '[':
// expected ']' but found end of input" (at the opening bracket),
// "left-hand side indices must be plain index variables, got p+1", "index i
// appears twice on the left-hand side", "unknown function foo", "exp takes 1
// argument, got 2", "integer literal 99999999999999999999 overflows int64",
// "constant N cannot be used as a tensor", "constant N cannot be used as a
// left-hand side index", "expected assignment operator (=, +=, *=, max=,
// min=) but found ...", "no statements", "expression nested too deeply
// (more than 200 levels)", "unexpected character '@'". An op of more than
// ir.MaxNodes expression nodes stops the parse at once with "expression too
// large: the op has at least N nodes, the limit is ..." (no position: the
// line of such an op can be megabytes long).
package parse
