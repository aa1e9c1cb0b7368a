package torchbridge

import (
	"github.com/pkg/errors"

	"github.com/neoflow/neoflow/api"
	"github.com/neoflow/neoflow/core/autodiff"
	"github.com/neoflow/neoflow/core/pipeline"
)

// Grad derives the gradient op of an op specialized for the request's
// inputs (the pipeline's specialize and autodiff passes) and registers it
// as a new op, so that it is specialized, built and differentiated again
// (double backward) like any other. With req.Save the gradient op reads
// the forward temporaries and outputs it needs as inputs instead of
// recomputing them (autodiff.GradSaving), except, with fusion on, the
// temporaries the fusion reward has it recompute (the save-or-recompute pass).
// With req.Forward it derives the tangent op instead (forward mode,
// autodiff.Tangent), registered the same way.
func (r *Runtime) Grad(req *api.GradRequest) (*api.GradResponse, error) {
	op, in, err := r.opInputs(req.GetOpId(), req.GetInputs())
	if err != nil {
		return nil, err
	}
	if len(req.GetWrt()) != len(op.Inputs) {
		return nil, errors.Errorf("gradient request names %d inputs, op %s has %d", len(req.GetWrt()), op.DisplayName(), len(op.Inputs))
	}
	if req.GetForward() && req.GetSave() {
		return nil, errors.Errorf("gradient request for op %s asks for a tangent op that reads saved tensors: forward and save do not go together", op.DisplayName())
	}
	cfg := r.config()
	// With fusion on a saving gradient recomputes what save-or-recompute
	// decides, as the forward kernel's Kernel plan decided it.
	u := &pipeline.Unit{Op: op, DType: in.dtype, Shapes: in.shapes, Ints: in.ints, Sizes: req.GetSizes(),
		Wrt: req.GetWrt(), Save: req.GetSave(), Forward: req.GetForward(), Fusion: cfg.Fusion, Dump: cfg.Dump}
	if err := pipeline.Run(u, pipeline.Derive); err != nil {
		return nil, err
	}
	g := u.Grad
	def, err := r.register(g.Op, req.GetSave())
	if err != nil {
		return nil, errors.Wrapf(err, "the gradient of op %s does not check (a neoflow bug)", op.DisplayName())
	}
	if !req.GetForward() { // a gradient op is tuned with its forward (joint.go)
		r.mu.Lock()
		r.gradOf[g.Op] = op
		r.mu.Unlock()
	}
	return &api.GradResponse{Op: def, Sizes: g.Sizes, Explain: autodiff.Explain(g), Saved: g.Saved}, nil
}
