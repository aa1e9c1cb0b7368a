package torchbridge

import (
	"maps"
	"slices"

	"github.com/pkg/errors"

	"github.com/neoflow/neoflow/api"
	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/parse"
)

// Transform makes the text of a new op from a registered op by an IR
// transform: batched for torch.vmap (ir.Batched) or an instance to inline
// into another op (ir.Instance). Python defines the batched op, or adds the
// instance's statements to the op it builds, from the text; it never
// rewrites an op's text itself.
func (r *Runtime) Transform(req *api.TransformRequest) (*api.TransformResponse, error) {
	op, err := r.op(req.GetOpId())
	if err != nil {
		return nil, err
	}
	switch b, in := req.GetBatch(), req.GetInline(); {
	case b != nil && in == nil:
		return batch(op, b)
	case in != nil && b == nil:
		return instance(op, in)
	}
	return nil, errors.New("a transform request sets exactly one of batch and inline")
}

func batch(op *ir.Op, b *api.BatchTransform) (*api.TransformResponse, error) {
	names := map[string]bool{}
	for _, n := range b.GetInputs() {
		if !slices.Contains(op.Inputs, n) {
			return nil, errors.Errorf("op %s has no input %s to batch (inputs: %v)", op.DisplayName(), n, op.Inputs)
		}
		names[n] = true
	}
	v := ir.FreshName(op, "vb")
	return &api.TransformResponse{Source: ir.Print(ir.Batched(op, names, v)), BatchIndex: v}, nil
}

func instance(op *ir.Op, in *api.InlineTransform) (*api.TransformResponse, error) {
	reads := map[string]ir.Expr{}
	for _, name := range slices.Sorted(maps.Keys(in.GetReads())) {
		if !slices.Contains(op.Inputs, name) {
			return nil, errors.Errorf("op %s has no input %s to read through %q", op.DisplayName(), name, in.GetReads()[name])
		}
		e, err := parse.Expr(in.GetReads()[name])
		if err != nil {
			return nil, errors.Wrapf(err, "the read given for input %s of op %s", name, op.DisplayName())
		}
		reads[name] = e
	}
	inst, err := ir.Instance(op, in.GetTensorPrefix(), in.GetIndexPrefix(), reads)
	if err != nil {
		return nil, errors.Wrapf(err, "inlining op %s", op.DisplayName())
	}
	return &api.TransformResponse{Source: ir.Print(inst)}, nil
}
