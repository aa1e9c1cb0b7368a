package fuse

import (
	"gonum.org/v1/gonum/graph/simple"

	"github.com/neoflow/neoflow/core/ir"
)

// Graph is an op's statement dependency graph: a node per statement (its
// ID is the statement's index), an edge from a statement to each later
// one that reads the tensor it writes.
type Graph struct {
	*simple.DirectedGraph
	stmts []*ir.BoundStmt
}

// NewGraph builds the graph of stmts.
func NewGraph(stmts []*ir.BoundStmt) *Graph {
	g := &Graph{DirectedGraph: simple.NewDirectedGraph(), stmts: stmts}
	for i := range stmts {
		g.AddNode(simple.Node(i))
	}
	for j, st := range stmts {
		for i := range stmts[:j] {
			if stmts[i].Stmt.Tensor != st.Stmt.Tensor && reads(st.Stmt.RHS, stmts[i].Stmt.Tensor) > 0 && !g.HasEdgeFromTo(int64(i), int64(j)) {
				g.SetEdge(simple.Edge{F: simple.Node(i), T: simple.Node(j)})
			}
		}
	}
	return g
}

// Consumers lists the statements that read what statement i writes.
func (g *Graph) Consumers(i int) []int {
	var out []int
	for it := g.From(int64(i)); it.Next(); {
		out = append(out, int(it.Node().ID()))
	}
	return out
}

// FanIn is the paper's class of a statement: "One" when it reads one
// tensor, "Many" when it reads several. One+One merges always win; a
// Many statement inlined into several readers usually recomputes.
func (g *Graph) FanIn(i int) string {
	seen := map[string]bool{}
	ir.Walk(g.stmts[i].Stmt.RHS, func(e ir.Expr) bool {
		if a, ok := e.(*ir.Access); ok {
			seen[a.Tensor] = true
		}
		return true
	})
	if len(seen) <= 1 {
		return "One"
	}
	return "Many"
}
