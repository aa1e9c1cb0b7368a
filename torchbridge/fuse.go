package torchbridge

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/neoflow/neoflow/core/autodiff"
	"github.com/neoflow/neoflow/core/fuse"
	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/pipeline"
)

// fuseSpec runs the pipeline's fusion passes (core/fuse) on a specialized op
// when the configuration has fusion on. The fused Spec is what Python
// sees (its buffers: fused-away temporaries are not allocated) and what
// the kernel is built and tuned from. The temporaries a saving gradient
// op of the op reads stay whole (savedTemps): under autograd the forward
// kernel hands them to the backward. With keepNone none is kept: for a
// saving gradient op, which runs without autograd (Python's backward, a
// compiled backward), and for an op defined forward only (a subgraph the
// torch.compile backend lowered: AOT Autograd traced its backward, and it
// runs without autograd). Should a caller differentiate one anyway, Python
// finds the temporaries missing and uses the recomputing gradient.
//
// The explanation lists each pass's decisions, then the fused op.
func fuseSpec(spec *ir.Spec, cfg Config, keepNone bool, rates func() fuse.Machine) (*ir.Spec, string, error) {
	if !cfg.Fusion {
		return spec, "fusion is off (NEOFLOW_FUSION=0)\n" + ir.PrintSpec(spec), nil
	}
	u := pipeline.FromSpec(spec)
	u.Fusion, u.Dump, u.Machine = true, cfg.Dump, rates()
	var recNotes []string
	if !keepNone {
		u.Keep, recNotes = savedTemps(spec)
	}
	if err := pipeline.Run(u, pipeline.Fused); err != nil {
		return nil, "", err
	}
	var b strings.Builder
	m := u.Machine
	fmt.Fprintf(&b, "rates: %.3g GB/s (%.3g GB/s from a last-level cache of %d MiB), %.3g G ops/s, %d ops per math call, %.3g us per loop nest, cache %d KiB\n",
		m.BytesPerSec/1e9, m.LLCBytesPerSec/1e9, m.LLCBytes>>20, m.OpsPerSec/1e9, m.CallOps, m.NestSec*1e6, m.CacheBytes>>10)
	if len(u.Keep) > 0 {
		fmt.Fprintf(&b, "kept whole for the saving gradient: %s\n", strings.Join(slices.Sorted(maps.Keys(u.Keep)), ", "))
	}
	for _, n := range recNotes {
		b.WriteString(n + "\n")
	}
	for _, pass := range pipeline.Passes() {
		for _, n := range u.FusionNotes[pass] {
			b.WriteString(n + "\n")
		}
	}
	if b.Len() == 0 {
		b.WriteString("no fusion applies\n")
	}
	b.WriteString(ir.PrintSpec(u.Spec))
	return u.Spec, b.String(), nil
}

// savedTemps names the temporaries of spec that a saving gradient op of
// it reads (autodiff.GradRecomputing's Saved, with the temporaries
// pipeline.Recompute has it recompute) for the gradient with
// respect to every input and to each input alone: the gradient of a set
// of inputs is made of the statements the gradients of each need. When a
// gradient does not derive, every temporary is kept. notes are the
// save-or-recompute decisions.
func savedTemps(spec *ir.Spec) (keep map[string]bool, notes []string) {
	keep = map[string]bool{}
	n := len(spec.Op.Inputs)
	if n == 0 {
		return keep, nil
	}
	rec, notes := pipeline.Recompute(spec)
	wrts := [][]bool{make([]bool, n)}
	for i := range n {
		wrts[0][i] = true
		if n > 1 {
			one := make([]bool, n)
			one[i] = true
			wrts = append(wrts, one)
		}
	}
	for _, wrt := range wrts {
		g, err := autodiff.GradRecomputing(spec, wrt, rec)
		if err != nil {
			for _, t := range spec.Tensors {
				if t.Role == ir.RoleTemp {
					keep[t.Name] = true
				}
			}
			return keep, notes
		}
		for _, name := range g.Saved {
			if t := spec.Tensor(name); t != nil && t.Role == ir.RoleTemp {
				keep[name] = true
			}
		}
	}
	return keep, notes
}
