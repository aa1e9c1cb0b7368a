package autotune

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/neoflow/neoflow/api"
	"github.com/neoflow/neoflow/core/ir"
)

// Key is the tuning-database key of spec for this machine and neoflow
// version: the kernel's structure (the op's structural hash, which ignores
// its name, plus every statement's axis extents and offset), its tensors' dtypes and
// shapes, the target (Target) and the version.
func Key(spec *ir.Spec, version string) *api.TuneKey {
	return KeyFor(spec, version, Target())
}

// KeyFor is Key for another target: GPUTarget for a CUDA kernel.
func KeyFor(spec *ir.Spec, version, target string) *api.TuneKey {
	var b strings.Builder
	b.WriteString(ir.Hash(spec.Op))
	writeStmts(&b, spec, true)
	sum := sha256.Sum256([]byte(b.String()))
	k := &api.TuneKey{Kernel: hex.EncodeToString(sum[:16]), Target: target, Version: version}
	for _, t := range spec.Tensors {
		parts := make([]string, len(t.Shape))
		for i, d := range t.Shape {
			parts[i] = fmt.Sprint(d)
		}
		k.Tensors = append(k.Tensors, fmt.Sprintf("%s:%s[%s]", t.Name, spec.DType, strings.Join(parts, ",")))
	}
	return k
}

// writeStmts writes each statement's structure: its spatial and reduction
// axes, with their extents when extents (the key) or by name only (the
// family), whether it writes a part of its tensor (its offset, with
// extents) and whether it is joined to the statement before.
func writeStmts(b *strings.Builder, spec *ir.Spec, extents bool) {
	axis := func(v ir.Var) {
		if extents {
			fmt.Fprintf(b, " %s=%d", v.Name, v.Extent)
		} else {
			b.WriteString(" " + v.Name)
		}
	}
	for _, st := range spec.Stmts {
		b.WriteString("\n")
		for _, v := range st.Spatial {
			axis(v)
		}
		if st.Offset != nil { // a part of the tensor (index-set splitting)
			b.WriteString(" @")
			if extents {
				fmt.Fprintf(b, "%v", st.Offset)
			}
		}
		if st.Joined {
			b.WriteString(" &") // runs in the nest of the statement before (a fused group)
		}
		b.WriteString(" |")
		for _, v := range st.Reduction {
			axis(v)
		}
	}
}
