package autodiff

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/neoflow/neoflow/core/ir"
)

// Expression size. The derivative of an expression can be much larger than
// the expression: written out as a tree, the partials of a product of n
// distinct factors are n products of n - 1 factors. Grad keeps its work
// linear where it can and bounded everywhere:
//
//   - partials are built as a DAG: a factor shared by several partials is
//     one node (table.go passes the path's factor down by pointer, and a
//     product's partials share prefix and suffix products, product.go);
//   - structurally equal subexpressions are found by interning (exprIDs),
//     linear in the distinct nodes, never by printing or comparing trees;
//   - identical factors of a product are collected into a power, so the
//     derivative of X[i] * X[i] * ... * X[i] (n factors) is
//     n * pow(X[i], n - 1), not n products of n - 1 factors;
//   - identical terms of a gradient contribution are collected with a
//     count, so the gradient of X[i] + ... + X[i] is n * d_Y[i];
//   - the gradient's size as a tree (what the printer, sema and the
//     renderers walk) is counted on the DAG with a memo (ir.NodeCounter)
//     before anything walks it as a tree, and a gradient past ir.MaxNodes
//     is refused with an "expression too large" error, before the gathers
//     are built and checked.

// memo holds the per-Grad memo tables, keyed by node pointer: the
// expressions never change once built.
type memo struct {
	kinds ir.KindMemo
	nodes ir.NodeCounter
	ids   exprIDs
	// total is the size, in tree nodes, of the gradient contributions
	// accepted so far (bounded by ir.MaxNodes).
	total int
	// kind names what is derived in messages: "gradient" or "tangent".
	kind string
}

func newMemo(kind string) *memo {
	return &memo{kind: kind, kinds: ir.KindMemo{}, nodes: ir.NodeCounter{}, ids: exprIDs{ids: map[ir.Expr]int{}, byKey: map[string]int{}}}
}

// exprIDs interns expressions: two expressions get the same id exactly
// when they are structurally equal (ir.Equal: positions ignored, floats by
// their bits). A node's key is built from its own fields and its operands'
// ids, so interning an expression takes time linear in its distinct nodes
// even when its tree is much larger.
type exprIDs struct {
	ids   map[ir.Expr]int
	byKey map[string]int
}

// id is e's structural id.
func (x *exprIDs) id(e ir.Expr) int {
	if id, ok := x.ids[e]; ok {
		return id
	}
	var b strings.Builder
	switch e := e.(type) {
	case *ir.IntLit:
		fmt.Fprintf(&b, "i%d", e.Value)
	case *ir.FloatLit:
		fmt.Fprintf(&b, "f%x", math.Float64bits(e.Value))
	case *ir.Const:
		fmt.Fprintf(&b, "c%s:%t:%d:%x", e.Name, e.IsFloat, e.Int, math.Float64bits(e.Float))
	case *ir.Index:
		b.WriteString("x" + e.Name)
	case *ir.Access:
		b.WriteString("a" + e.Tensor)
		x.list(&b, e.Indices)
	case *ir.Unary:
		fmt.Fprintf(&b, "u%d", e.Op)
		x.list(&b, []ir.Expr{e.X})
	case *ir.Binary:
		fmt.Fprintf(&b, "b%d", e.Op)
		x.list(&b, []ir.Expr{e.X, e.Y})
	case *ir.Call:
		fmt.Fprintf(&b, "f%d", e.Fn)
		x.list(&b, e.Args)
	case *ir.Where:
		b.WriteString("w")
		x.list(&b, []ir.Expr{e.Cond, e.Then, e.Else})
	default:
		fmt.Fprintf(&b, "?%p", e) // unknown nodes are equal only to themselves
	}
	key := b.String()
	id, ok := x.byKey[key]
	if !ok {
		id = len(x.byKey) + 1
		x.byKey[key] = id
	}
	x.ids[e] = id
	return id
}

// list appends the ids of es (a Tensor name cannot contain '(').
func (x *exprIDs) list(b *strings.Builder, es []ir.Expr) {
	b.WriteByte('(')
	for i, e := range es {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(x.id(e)))
	}
	b.WriteByte(')')
}

// charge adds the tree size of the contributions cs of statement si to the
// gradient's running size, and refuses a gradient past ir.MaxNodes.
func (m *memo) charge(fwd *ir.Op, si int, cs []ir.Expr) error {
	n := 0
	for _, c := range cs {
		n = min(n+m.nodes.Nodes(c), math.MaxInt32)
	}
	m.total = min(m.total+n, math.MaxInt32)
	if m.total <= ir.MaxNodes {
		return nil
	}
	what := "the " + m.kind
	if fwd.Name != "" {
		what = "the " + m.kind + " of op " + fwd.Name
	}
	return ir.TooLarge(fmt.Sprintf("%s (through statement %d, %s)", what, si+1, clip(ir.StmtString(fwd.Stmts[si]), 60)),
		m.total, ir.MaxNodes, true)
}

// checkOpSize refuses a finished gradient op past ir.MaxNodes before it is
// printed or checked (both walk it as a tree).
func checkOpSize(fwd, gop *ir.Op, kind string) error {
	n := ir.OpNodes(gop)
	if n <= ir.MaxNodes {
		return nil
	}
	what := "the " + kind + " op"
	if fwd.Name != "" {
		what = "the " + kind + " of op " + fwd.Name
	}
	return ir.TooLarge(what, n, ir.MaxNodes, false)
}

// clip shortens s to about n bytes for a message.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
