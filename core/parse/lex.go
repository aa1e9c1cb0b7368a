package parse

import (
	"fmt"
	"unicode/utf8"

	"github.com/neoflow/neoflow/core/ir"
)

type tokKind int

const (
	tEOF     tokKind = iota
	tIllegal         // a lexical error; msg says what
	tNewline
	tSemi
	tIdent
	tInt
	tFloat
	tLBrack
	tRBrack
	tLParen
	tRParen
	tComma
	tNot
	tBinOp     // op in tok.bin
	tAssignOp  // op in tok.red
	tAssignBad // "-=", "/=", "%=": not an assignment operator
)

type token struct {
	kind     tokKind
	pos      ir.Pos
	off, end int    // byte offsets of the token in the source
	text     string // the source text of the token
	bin      ir.BinOp
	red      ir.ReduceOp
	msg      string // tIllegal
}

// describe names the token for "expected X but found Y" messages.
func (t token) describe() string {
	switch t.kind {
	case tEOF:
		return "end of input"
	case tNewline:
		return "end of line"
	case tIdent:
		return "identifier " + t.text
	case tInt, tFloat:
		return "number " + t.text
	}
	return "'" + t.text + "'"
}

// lex splits src into tokens. Comments and blank space are dropped; a
// newline is a token. Lexing stops at the first error, which becomes a
// tIllegal token, so the parser reports errors in source order.
func lex(src string) []token {
	var toks []token
	line, lineStart := 1, 0
	i := 0
	emit := func(k tokKind, start, end int) *token {
		toks = append(toks, token{kind: k, pos: ir.Pos{Line: line, Col: start - lineStart + 1}, off: start, end: end, text: src[start:end]})
		return &toks[len(toks)-1]
	}
	for i < len(src) {
		c := src[i]
		switch {
		case c == ' ' || c == '\t' || c == '\r':
			i++
		case c == '#':
			for i < len(src) && src[i] != '\n' {
				i++
			}
		case c == '\n':
			emit(tNewline, i, i+1)
			i++
			line, lineStart = line+1, i
		case isLetter(c):
			j := i + 1
			for j < len(src) && (isLetter(src[j]) || isDigit(src[j])) {
				j++
			}
			word := src[i:j]
			// "max=" and "min=" are single tokens, but not "max==".
			if (word == "max" || word == "min") && j < len(src) && src[j] == '=' && (j+1 >= len(src) || src[j+1] != '=') {
				t := emit(tAssignOp, i, j+1)
				t.red = ir.Max
				if word == "min" {
					t.red = ir.Min
				}
				i = j + 1
				continue
			}
			emit(tIdent, i, j)
			i = j
		case isDigit(c) || (c == '.' && i+1 < len(src) && isDigit(src[i+1])):
			j, isFloat, ok := scanNumber(src, i)
			if !ok {
				t := emit(tIllegal, i, j)
				t.msg = fmt.Sprintf("malformed number %s", src[i:j])
				return toks
			}
			k := tInt
			if isFloat {
				k = tFloat
			}
			emit(k, i, j)
			i = j
		default:
			n, k := punct(src[i:])
			if n == 0 {
				t := emit(tIllegal, i, i+1)
				t.msg = badChar(src[i:])
				return toks
			}
			t := emit(k.kind, i, i+n)
			t.bin, t.red = k.bin, k.red
			i += n
		}
	}
	emit(tEOF, i, i)
	return toks
}

// scanNumber scans digits [ '.' digits ] [ exponent ] from src[i:]. It
// returns the end offset, whether the number is a float, and false when the
// text is malformed (a bad exponent, or letters, digits, '_' or '.' glued to
// the number), in which case end covers the malformed text.
func scanNumber(src string, i int) (end int, isFloat, ok bool) {
	j := i
	for j < len(src) && isDigit(src[j]) {
		j++
	}
	if j < len(src) && src[j] == '.' {
		isFloat = true
		j++
		for j < len(src) && isDigit(src[j]) {
			j++
		}
	}
	ok = true
	if j < len(src) && (src[j] == 'e' || src[j] == 'E') {
		isFloat = true
		j++
		if j < len(src) && (src[j] == '+' || src[j] == '-') {
			j++
		}
		if j >= len(src) || !isDigit(src[j]) {
			ok = false
		}
		for j < len(src) && isDigit(src[j]) {
			j++
		}
	}
	if j < len(src) && (isLetter(src[j]) || isDigit(src[j]) || src[j] == '.') {
		ok = false
	}
	if !ok {
		for j < len(src) && (isLetter(src[j]) || isDigit(src[j]) || src[j] == '.') {
			j++
		}
	}
	return j, isFloat, ok
}

type punctTok struct {
	text string
	kind tokKind
	bin  ir.BinOp
	red  ir.ReduceOp
}

// puncts is searched in order: two-character tokens first.
var puncts = []punctTok{
	{"+=", tAssignOp, 0, ir.Sum},
	{"*=", tAssignOp, 0, ir.Prod},
	{"-=", tAssignBad, 0, 0},
	{"/=", tAssignBad, 0, 0},
	{"%=", tAssignBad, 0, 0},
	{"<=", tBinOp, ir.Le, 0},
	{">=", tBinOp, ir.Ge, 0},
	{"==", tBinOp, ir.Eq, 0},
	{"!=", tBinOp, ir.Ne, 0},
	{"&&", tBinOp, ir.And, 0},
	{"||", tBinOp, ir.Or, 0},
	{"=", tAssignOp, 0, ir.Assign},
	{"+", tBinOp, ir.Add, 0},
	{"-", tBinOp, ir.Sub, 0},
	{"*", tBinOp, ir.Mul, 0},
	{"/", tBinOp, ir.Div, 0},
	{"%", tBinOp, ir.Mod, 0},
	{"<", tBinOp, ir.Lt, 0},
	{">", tBinOp, ir.Gt, 0},
	{"!", tNot, 0, 0},
	{"[", tLBrack, 0, 0},
	{"]", tRBrack, 0, 0},
	{"(", tLParen, 0, 0},
	{")", tRParen, 0, 0},
	{",", tComma, 0, 0},
	{";", tSemi, 0, 0},
}

func punct(s string) (int, punctTok) {
	for _, p := range puncts {
		if len(s) >= len(p.text) && s[:len(p.text)] == p.text {
			return len(p.text), p
		}
	}
	return 0, punctTok{}
}

func badChar(s string) string {
	switch s[0] {
	case '&':
		return "unexpected character '&' (did you mean '&&'?)"
	case '|':
		return "unexpected character '|' (did you mean '||'?)"
	}
	r, size := utf8.DecodeRuneInString(s)
	if r == utf8.RuneError && size <= 1 {
		return fmt.Sprintf("unexpected byte 0x%02x", s[0])
	}
	return fmt.Sprintf("unexpected character %q", r)
}

func isLetter(c byte) bool { return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
func isDigit(c byte) bool  { return '0' <= c && c <= '9' }
