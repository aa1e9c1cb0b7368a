package sema

import (
	"fmt"
	"strings"

	"github.com/neoflow/neoflow/core/ir"
)

// checker holds the state of Check.
type checker struct {
	op *ir.Op
	// writer maps a written tensor to the index of its statement.
	writer map[string]int
	// rank records the first use of each tensor: its rank and position.
	rank map[string]use
}

type use struct {
	rank int
	pos  ir.Pos
}

// Check verifies an op at define time: its size (at most ir.MaxNodes
// expression nodes), expression kinds, the data flow between statements,
// tensor ranks and index variables. It returns a user-facing *ir.Error for
// the first problem found, or nil.
func Check(op *ir.Op) error {
	if op == nil {
		return &ir.Error{Msg: "no op"}
	}
	c := &checker{op: op, writer: map[string]int{}, rank: map[string]use{}}
	if len(op.Stmts) == 0 {
		return op.Errorf(ir.Pos{}, "op %shas no statements", nameSpace(op))
	}
	if err := ir.CheckSize(op); err != nil {
		return err // bounds the work of every later stage
	}
	inputs := map[string]bool{}
	for _, in := range op.Inputs {
		if inputs[in] {
			return op.Errorf(ir.Pos{}, "input %s is listed twice", in)
		}
		inputs[in] = true
	}
	for i, s := range op.Stmts {
		if err := c.checkStmt(i, s, inputs); err != nil {
			return err
		}
	}
	read := map[string]bool{}
	for _, s := range op.Stmts {
		for _, a := range accesses(s.RHS) {
			read[a.acc.Tensor] = true
		}
	}
	for _, in := range op.Inputs {
		if !read[in] {
			return op.Errorf(ir.Pos{}, "input %s is never read", in)
		}
	}
	// The last statement's tensor cannot be read by a later statement, so
	// an op with statements always has an output.
	return checkOutputs(op)
}

// checkOutputs verifies a fixed output list: each tensor no later
// statement reads named once, and any other written tensor at most once
// (an output that a later statement reads: Hn may read Cn).
func checkOutputs(op *ir.Op) error {
	if len(op.Outputs) == 0 {
		return nil
	}
	want := ir.DefaultOutputs(op.Stmts)
	written := map[string]bool{}
	for _, s := range op.Stmts {
		written[s.Tensor] = true
	}
	seen := map[string]bool{}
	for _, name := range op.Outputs {
		switch {
		case seen[name]:
			return op.Errorf(ir.Pos{}, "output %s is listed twice", name)
		case !written[name]:
			return op.Errorf(ir.Pos{}, "%s is not an output of op %s(an output is a tensor a statement writes; the tensors no later statement reads, %s, must be outputs)",
				name, nameSpace(op), strings.Join(want, ", "))
		}
		seen[name] = true
	}
	for _, name := range want {
		if !seen[name] {
			return op.Errorf(ir.Pos{}, "the output list %s leaves out output %s", strings.Join(op.Outputs, ", "), name)
		}
	}
	return nil
}

// nameSpace is "conv " for an op named conv, or "".
func nameSpace(op *ir.Op) string {
	if op.Name == "" {
		return ""
	}
	return op.Name + " "
}

func (c *checker) checkStmt(i int, s *ir.Stmt, inputs map[string]bool) error {
	op := c.op
	if s.RHS == nil {
		return op.Errorf(s.Pos, "statement writing %s has no right-hand side", s.Tensor)
	}
	// The left-hand side.
	if j, ok := c.writer[s.Tensor]; ok {
		first := op.Stmts[j].Pos
		return op.Errorf(s.Pos, "tensor %s is written twice (first at %d:%d)", s.Tensor, first.Line, first.Col)
	}
	if inputs[s.Tensor] {
		return op.Errorf(s.Pos, "tensor %s is an input of the op and cannot be written", s.Tensor)
	}
	lhs := map[string]bool{}
	for _, x := range s.Indices {
		if x == nil {
			return op.Errorf(s.Pos, "missing index on the left-hand side of %s", s.Tensor)
		}
		if lhs[x.Name] {
			return op.Errorf(x.Pos, "index %s appears twice on the left-hand side of %s", x.Name, s.Tensor)
		}
		lhs[x.Name] = true
	}
	if err := c.useRank(s.Tensor, len(s.Indices), s.Pos); err != nil {
		return err
	}

	if err := c.checkCasts(s); err != nil {
		return err
	}
	// Kinds.
	k, err := c.checkKinds(s.RHS)
	if err != nil {
		return err
	}
	if k == ir.KindBool {
		return op.Errorf(s.RHS.At(), "the right-hand side of %s must be a number, got a bool: %s (a bool can only be the condition of where)",
			s.Tensor, ir.ExprString(s.RHS))
	}

	// Reads.
	for _, a := range accesses(s.RHS) {
		t := a.acc.Tensor
		switch _, written := c.writer[t]; {
		case t == s.Tensor:
			return op.Errorf(a.acc.Pos, "statement writing %s also reads it; use a new tensor name for the result", t)
		case written || inputs[t]:
		case c.writtenLater(i, t):
			return op.Errorf(a.acc.Pos, "tensor %s is read before the statement that writes it", t)
		default:
			return op.Errorf(a.acc.Pos, "unknown tensor %s", t)
		}
		if err := c.useRank(t, len(a.acc.Indices), a.acc.Pos); err != nil {
			return err
		}
	}
	c.writer[s.Tensor] = i

	// Index variables: every variable needs a possible range, and '=' has
	// no reduction axes.
	inAccess := map[string]bool{}
	for _, a := range accesses(s.RHS) {
		for _, x := range a.acc.Indices {
			for _, v := range varNames(x) {
				inAccess[v] = true
			}
		}
	}
	uses := indexUses(s.RHS)
	for _, x := range uses {
		if !lhs[x.Name] && !inAccess[x.Name] {
			return op.Errorf(x.Pos, "unknown index %s: it is neither on the left-hand side nor in any tensor access", x.Name)
		}
	}
	if s.Reduce == ir.Assign {
		for _, x := range uses {
			if !lhs[x.Name] {
				return op.Errorf(x.Pos, "index %s appears only on the right-hand side of '=', which has no reduction axes: "+
					"reduce over it with +=, *=, max= or min=, or add it to the left-hand side", x.Name)
			}
		}
	}
	return nil
}

// writtenLater reports whether a statement after i writes t.
func (c *checker) writtenLater(i int, t string) bool {
	for _, s := range c.op.Stmts[i+1:] {
		if s.Tensor == t {
			return true
		}
	}
	return false
}

// useRank records or checks the rank of a use of tensor t.
func (c *checker) useRank(t string, rank int, pos ir.Pos) error {
	first, ok := c.rank[t]
	if !ok {
		c.rank[t] = use{rank, pos}
		return nil
	}
	if first.rank != rank {
		return c.op.Errorf(pos, "rank mismatch: %s is used with %s here but %d at %s",
			t, plural(rank, "index", "indices"), first.rank, posString(first.pos))
	}
	return nil
}

func plural(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}

func posString(p ir.Pos) string {
	if p.Line == 0 {
		return "an earlier use"
	}
	return fmt.Sprintf("%d:%d", p.Line, p.Col)
}
