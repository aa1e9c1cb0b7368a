package autotune

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"

	"github.com/neoflow/neoflow/kernels/cache"
)

// isaFlags are the CPU features named in a target; the full flag list is
// still part of it, through a hash.
var isaFlags = []string{"sse4_2", "avx", "avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512_bf16", "amx_tile", "asimd", "sve", "sve2"}

// Target names the machine a tuning result is valid for: the CPU model,
// OS/architecture, its notable ISA features, and a hash of everything
// kernels.cache keys compiled code by (all feature flags included), e.g.
// "AMD EPYC | linux/amd64 | avx avx2 avx512f fma | 3f2a9c1d".
func Target() string {
	desc := cache.HostDescription()
	lines := strings.Split(desc, "\n")
	model := ""
	var feats []string
	for _, l := range lines[1:] {
		k, v, _ := strings.Cut(l, ":")
		switch k {
		case "model name":
			model = v
		case "flags", "Features", "isa":
			for _, f := range strings.Fields(v) {
				if slices.Contains(isaFlags, f) {
					feats = append(feats, f)
				}
			}
		}
	}
	if model == "" {
		model = "unknown CPU"
	}
	slices.Sort(feats)
	sum := sha256.Sum256([]byte(desc))
	return model + " | " + lines[0] + " | " + strings.Join(feats, " ") + " | " + hex.EncodeToString(sum[:4])
}
