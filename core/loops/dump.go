package loops

import (
	"fmt"
	"strings"

	"github.com/neoflow/neoflow/core/ir"
)

// Dump prints fn as indented text, one node per line, for debugging and
// golden tests. Expressions print with ir.ExprString.
//
//	func matmul float32
//	  buf 0 A[64, 32] input
//	  buf 1 B[32, 48] input
//	  buf 2 C[64, 48] output
//	stmt 0: C[i, j] += A[i, k] * B[k, j]  (vector 16, parallel 1)
//	  parallel(1) for i < 64
//	    for j.o < 3
//	      local %acc[16]
//	      vector for j.l < 16
//	        %acc[j.l] = 0.0
//	      for k < 32
//	        vector for j.l < 16
//	          %acc[j.l] += A[i, k] * B[k, j.o * 16 + j.l]
//	      vector for j.l < 16
//	        C[i, j.o * 16 + j.l] = %acc[j.l]
func Dump(fn *Func) string {
	var b strings.Builder
	name := fn.Spec.Op.Name
	if name == "" {
		name = "_"
	}
	fmt.Fprintf(&b, "func %s %s\n", name, fn.Spec.DType)
	for i, t := range fn.Spec.Tensors {
		fmt.Fprintf(&b, "  buf %d %s%s %s\n", i, t.Name, ir.ShapeString(t.Shape), t.Role)
	}
	for _, n := range fn.Nests {
		if n.Members == nil {
			fmt.Fprintf(&b, "stmt %d: %s  (%s)\n",
				n.Index, ir.StmtString(n.Stmt.Stmt), n.Schedule)
		} else {
			fmt.Fprintf(&b, "group %v  (%s)\n", n.Members, n.Schedule)
			for _, i := range n.Members {
				fmt.Fprintf(&b, "  stmt %d: %s\n", i, ir.StmtString(fn.Spec.Stmts[i].Stmt))
			}
		}
		dumpNodes(&b, n.Body, 1)
	}
	return b.String()
}

func dumpNodes(b *strings.Builder, nodes []Node, depth int) {
	ind := strings.Repeat("  ", depth)
	for _, n := range nodes {
		switch n := n.(type) {
		case *Loop:
			b.WriteString(ind)
			if n.Parallel {
				fmt.Fprintf(b, "parallel(%d) ", n.Collapse)
			}
			switch n.Bind {
			case BindBlock:
				fmt.Fprintf(b, "blocks(%d) ", n.Collapse)
			case BindThread:
				fmt.Fprintf(b, "threads(%d) ", n.Collapse)
			}
			if n.Vector {
				b.WriteString("vector ")
			}
			if n.Unroll > 1 {
				fmt.Fprintf(b, "unroll(%d) ", n.Unroll)
			}
			fmt.Fprintf(b, "for %s < %d\n", n.Var, n.Extent)
			dumpNodes(b, n.Body, depth+1)
		case *Block:
			fmt.Fprintf(b, "%sblock  // %s\n", ind, n.Comment)
			dumpNodes(b, n.Body, depth+1)
		case *Local:
			kind := "local"
			if n.Shared {
				kind = "shared"
			}
			fmt.Fprintf(b, "%s%s %s[%d]\n", ind, kind, n.Name, n.Len)
		case *Sync:
			fmt.Fprintf(b, "%ssync\n", ind)
		case *MMA:
			fmt.Fprintf(b, "%s%s: %s = %s x %s, batch %v, m %v, n %v, k %v\n", ind, n.Tiling.String(), n.C, n.A, n.B, n.Batch, n.M, n.N, n.K)
		case *BlockCombine:
			fmt.Fprintf(b, "%scombine %s %s over the block into %s (scratch %s)\n", ind, n.Op, ir.ExprString(n.Value), ir.ExprString(n.Dst), n.Scratch)
			if len(n.Then) > 0 {
				fmt.Fprintf(b, "%sthen, in the storing thread\n", ind)
				dumpNodes(b, n.Then, depth+1)
			}
		case *Store:
			op := n.Op.String()
			if n.Atomic {
				op = "atomic " + op
			}
			if n.Vec > 1 {
				op = fmt.Sprintf("%s vec%d", op, n.Vec)
			}
			fmt.Fprintf(b, "%s%s %s %s\n", ind, ir.ExprString(n.Dst), op, ir.ExprString(n.Value))
		case *Prefetch:
			fmt.Fprintf(b, "%sprefetch %s, %d bytes\n", ind, ir.ExprString(n.Addr), n.Bytes)
		case *If:
			fmt.Fprintf(b, "%sif %s\n", ind, ir.ExprString(n.Cond))
			dumpNodes(b, n.Body, depth+1)
		default:
			fmt.Fprintf(b, "%s<%T>\n", ind, n)
		}
	}
}
