package kernels

import (
	"github.com/pkg/errors"

	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/loops"
	"github.com/neoflow/neoflow/kernels/cgen"
)

// CUDASource lowers spec with one schedule per statement (nil: the GPU
// defaults, loops.GPUSchedule) and renders it as a CUDA module whose
// functions are named after symbol.
func CUDASource(spec *ir.Spec, scheds []loops.Schedule, symbol string) (*cgen.CUDAModule, error) {
	if spec == nil || spec.Op == nil {
		return nil, errors.New("kernels: nil spec")
	}
	if scheds != nil && len(scheds) != len(spec.Stmts) {
		return nil, errors.Errorf("kernel %s: %d schedules for %d statements", opName(spec), len(scheds), len(spec.Stmts))
	}
	sched := loops.GPUSchedule
	if scheds != nil {
		sched = func(_ *ir.Spec, i int) loops.Schedule { return scheds[i] }
	}
	fn, err := loops.LowerWith(spec, sched)
	if err != nil {
		return nil, errors.Wrapf(err, "kernel %s", opName(spec))
	}
	mod, err := cgen.RenderCUDA(fn, symbol)
	if err != nil {
		return nil, errors.Wrapf(err, "kernel %s", opName(spec))
	}
	return mod, nil
}
