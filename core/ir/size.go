package ir

import (
	"fmt"
	"math"
)

// MaxNodes bounds the size of an op: the number of expression nodes of all
// its statements (left-hand side indices and right-hand side), counted as
// the printer writes them, so a subexpression used twice counts twice.
// Every stage after parsing (checking, differentiation, lowering, the C
// and CUDA renderers and the C compiler) takes time at least linear in
// this number, and the C compiler takes much more than linear time on very
// long kernels, so an op past the limit is refused at once with an
// "expression too large" error (ErrTooLarge) instead of compiling for
// minutes. A product or sum of 2,000 reads of a tensor is about 6,000
// nodes (X[i] is two); the limit leaves room for eight times that, and
// gradient ops are held to the same limit.
const MaxNodes = 50_000

// ErrTooLarge is the message prefix of every error about an expression
// past MaxNodes.
const ErrTooLarge = "expression too large"

// TooLarge is the error for what (an op, a gradient) with n nodes, more
// than limit. With atLeast the count is a lower bound: counting stopped
// there.
func TooLarge(what string, n, limit int, atLeast bool) *Error {
	count := fmt.Sprintf("%d nodes", n)
	if atLeast {
		count = fmt.Sprintf("at least %d nodes", n)
	}
	return &Error{Msg: fmt.Sprintf("%s: %s has %s, the limit is %d (ir.MaxNodes); write long sums and products "+
		"as a reduction over an index (Y[i] += X[i, k]), or split the op", ErrTooLarge, what, count, limit)}
}

// NodeCounter counts expression nodes as a tree (Nodes), memoized by node
// pointer: each distinct node is counted once, so counting an expression
// that shares subexpressions (a DAG, as autodiff builds them) takes time
// linear in its distinct nodes, though its tree size may be quadratic or
// larger. Counts saturate at math.MaxInt32. The expressions must not change
// while the counter is in use.
type NodeCounter map[Expr]int

// Nodes is the number of nodes of e as a tree: 1 for the node plus the
// nodes of its operands (access indices, call arguments, a where's three
// parts). A nil e has 0.
func (m NodeCounter) Nodes(e Expr) int {
	if e == nil {
		return 0
	}
	if n, ok := m[e]; ok {
		return n
	}
	n := 1
	switch x := e.(type) {
	case *Access:
		for _, ix := range x.Indices {
			n = satAdd(n, m.Nodes(ix))
		}
	case *Unary:
		n = satAdd(n, m.Nodes(x.X))
	case *Binary:
		n = satAdd(n, satAdd(m.Nodes(x.X), m.Nodes(x.Y)))
	case *Call:
		for _, a := range x.Args {
			n = satAdd(n, m.Nodes(a))
		}
	case *Where:
		n = satAdd(n, satAdd(m.Nodes(x.Cond), satAdd(m.Nodes(x.Then), m.Nodes(x.Else))))
	}
	m[e] = n
	return n
}

// Stmt is the number of nodes of a statement: its left-hand side indices
// and its right-hand side.
func (m NodeCounter) Stmt(s *Stmt) int {
	return satAdd(len(s.Indices), m.Nodes(s.RHS))
}

// OpNodes is the number of nodes of all of op's statements.
func OpNodes(op *Op) int {
	m := NodeCounter{}
	n := 0
	for _, s := range op.Stmts {
		n = satAdd(n, m.Stmt(s))
	}
	return n
}

// CheckSize returns a TooLarge error when op has more than MaxNodes nodes.
func CheckSize(op *Op) error {
	if n := OpNodes(op); n > MaxNodes {
		what := "the op"
		if op.Name != "" {
			what = "op " + op.Name
		}
		return TooLarge(what, n, MaxNodes, false)
	}
	return nil
}

func satAdd(a, b int) int {
	if a > math.MaxInt32-b {
		return math.MaxInt32
	}
	return a + b
}
