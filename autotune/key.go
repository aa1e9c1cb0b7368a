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
	for _, st := range spec.Stmts {
		b.WriteString("\n")
		for _, v := range st.Spatial {
			fmt.Fprintf(&b, " %s=%d", v.Name, v.Extent)
		}
		if st.Offset != nil {
			fmt.Fprintf(&b, " @%v", st.Offset) // a part of the tensor (index-set splitting)
		}
		if st.Joined {
			b.WriteString(" &") // runs in the nest of the statement before (a fused group)
		}
		b.WriteString(" |")
		for _, v := range st.Reduction {
			fmt.Fprintf(&b, " %s=%d", v.Name, v.Extent)
		}
	}
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
