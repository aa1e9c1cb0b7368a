package ir

import (
	"fmt"
	"strings"
)

// PrintSpec renders a specialized op for a person to read: its dtype, its
// buffers in argument order with their shapes and roles, and each
// statement with the extents of its spatial and reduction axes (and,
// for a statement that writes a part of its tensor, where the part
// starts: "j < 256 at [0, 256]"). A statement that runs in the loop
// nest of the one before it (BoundStmt.Joined) starts with "& ".
//
//	spec mm float32
//	  A[64, 32] input
//	  B[32, 48] input
//	  C[64, 48] output
//	  C[i, j] += A[i, k] * B[k, j]  // i < 64, j < 48; over k < 32
func PrintSpec(spec *Spec) string {
	if spec == nil || spec.Op == nil {
		return "<nil>"
	}
	var b strings.Builder
	name := spec.Op.Name
	if name == "" {
		name = "_"
	}
	fmt.Fprintf(&b, "spec %s %s\n", name, spec.DType)
	for _, t := range spec.Tensors {
		fmt.Fprintf(&b, "  %s%s %s\n", t.Name, ShapeString(t.Shape), t.Role)
	}
	for _, st := range spec.Stmts {
		b.WriteString("  ")
		if st.Joined {
			b.WriteString("& ")
		}
		writeStmt(&b, st.Stmt)
		b.WriteString("  // ")
		writeVars(&b, st.Spatial)
		if st.Offset != nil {
			fmt.Fprintf(&b, " at %s", ShapeString(st.Offset))
		}
		if len(st.Reduction) > 0 {
			b.WriteString("; over ")
			writeVars(&b, st.Reduction)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// ShapeString prints a shape as "[2, 3]" (a scalar as "[]").
func ShapeString(shape []int64) string {
	parts := make([]string, len(shape))
	for i, d := range shape {
		parts[i] = fmt.Sprint(d)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// VarsString prints axes as "i < 64, j < 48" ("scalar" for none).
func VarsString(vs []Var) string {
	var b strings.Builder
	writeVars(&b, vs)
	return b.String()
}

func writeVars(b *strings.Builder, vs []Var) {
	if len(vs) == 0 {
		b.WriteString("scalar")
	}
	for i, v := range vs {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(b, "%s < %d", v.Name, v.Extent)
	}
}
