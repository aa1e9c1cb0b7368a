package parse_test

import (
	"strings"
	"testing"

	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/parse"
)

// TestParseSizeLimit: the parser counts nodes as it goes, accepts an op of
// ir.MaxNodes nodes (as ir.OpNodes counts them) and refuses a larger one
// at once, quoting no source line.
func TestParseSizeLimit(t *testing.T) {
	// "Y[i] = -X[i] + X[i] + ... + 2.0": a minus, a literal and n reads of
	// two nodes with n binary nodes between the terms, 1 left-hand side
	// index.
	src := func(n int) string {
		return "Y[i] = -" + strings.Repeat("X[i] + ", n) + "2.0"
	}
	n := (ir.MaxNodes - 3) / 3
	op, err := parse.Parse(src(n), opts())
	if err != nil {
		t.Fatalf("an op of %d nodes: %v", ir.MaxNodes, err)
	}
	if got := ir.OpNodes(op); got != 3*n+3 || got > ir.MaxNodes {
		t.Fatalf("ir.OpNodes: got %d want %d (at most %d)", got, 3*n+3, ir.MaxNodes)
	}
	_, err = parse.Parse(src(200_000), opts())
	want := "expression too large: the op has at least 50001 nodes, the limit is 50000 (ir.MaxNodes)"
	if err == nil || !strings.HasPrefix(err.Error(), want) || strings.Contains(err.Error(), "\n") {
		t.Fatalf("got %v, want an error starting %q on one line", err, want)
	}
}
