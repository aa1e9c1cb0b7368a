package torchbridge

import (
	"fmt"
	"strings"

	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/pipeline"
)

// explainFusion is what the explanation of a specialization says: the
// fusion reward's rates, then each pass's decisions (the temporaries kept
// whole for the saving gradient and why each is saved or recomputed,
// then the fusion passes'), then the spec the kernel is built from.
func explainFusion(u *pipeline.Unit, fusion bool) string {
	if !fusion {
		return "fusion is off (NEOFLOW_FUSION=0)\n" + ir.PrintSpec(u.Spec)
	}
	var b strings.Builder
	m := u.Machine
	fmt.Fprintf(&b, "rates: %.3g GB/s (%.3g GB/s from a last-level cache of %d MiB), %.3g G ops/s, %d ops per math call, %.3g us per loop nest, cache %d KiB\n",
		m.BytesPerSec/1e9, m.LLCBytesPerSec/1e9, m.LLCBytes>>20, m.OpsPerSec/1e9, m.CallOps, m.NestSec*1e6, m.CacheBytes>>10)
	for _, pass := range pipeline.Passes() {
		for _, n := range u.FusionNotes[pass] {
			b.WriteString(n + "\n")
		}
	}
	b.WriteString(ir.PrintSpec(u.Spec))
	return b.String()
}
