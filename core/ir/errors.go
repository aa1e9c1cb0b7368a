package ir

import (
	"fmt"
	"strings"
)

// Error is a user-facing error at a position of an op's source text. Its
// message shows line:column, the source line and a caret under the column.
type Error struct {
	Pos  Pos
	Msg  string
	Line string // the source line, when known
}

func (e *Error) Error() string {
	if e.Pos.Line == 0 {
		return e.Msg
	}
	s := fmt.Sprintf("%d:%d: %s", e.Pos.Line, e.Pos.Col, e.Msg)
	if e.Line != "" {
		s += "\n    " + e.Line + "\n    " + strings.Repeat(" ", max(e.Pos.Col-1, 0)) + "^"
	}
	return s
}

// Errorf builds an Error at pos, quoting the line of src it points into.
func Errorf(src string, pos Pos, format string, args ...any) *Error {
	e := &Error{Pos: pos, Msg: fmt.Sprintf(format, args...)}
	if pos.Line > 0 {
		lines := strings.Split(src, "\n")
		if pos.Line <= len(lines) {
			e.Line = strings.ReplaceAll(lines[pos.Line-1], "\t", " ")
		}
	}
	return e
}

// Errorf builds an Error at pos in this op's source.
func (op *Op) Errorf(pos Pos, format string, args ...any) *Error {
	return Errorf(op.Source, pos, format, args...)
}
