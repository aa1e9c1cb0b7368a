package pipeline

import (
	"github.com/pkg/errors"

	"github.com/neoflow/neoflow/core/autodiff"
)

// differentiate derives the gradient op of the specialized op with respect
// to the inputs u.Wrt selects (autodiff.Grad; with u.Save
// autodiff.GradSaving, or with fusion on autodiff.GradRecomputing, which
// recomputes the temporaries save-or-recompute chose, u.Recompute, and
// reads the rest saved), or with u.Forward the tangent op
// (autodiff.Tangent): Spec -> Op. The unit's
// statement level becomes the gradient op, which is specialized afresh
// (with Grad.Sizes) when it is built.
func differentiate(u *Unit) error {
	var g *autodiff.GradOp
	var err error
	switch {
	case u.Forward && u.Save:
		return errors.Errorf("differentiating op %s: a tangent op (forward mode) reads no saved tensors", u.Op.DisplayName())
	case u.Forward:
		g, err = autodiff.Tangent(u.Spec, u.Wrt)
	case !u.Save:
		g, err = autodiff.Grad(u.Spec, u.Wrt)
	case u.Fusion:
		g, err = autodiff.GradRecomputing(u.Spec, u.Wrt, u.Recompute)
	default:
		g, err = autodiff.GradSaving(u.Spec, u.Wrt)
	}
	if err != nil {
		return errors.Wrapf(err, "differentiating op %s", u.Op.DisplayName())
	}
	if g.Op.Name == "" && u.Forward {
		g.Op.Name = "jvp_" + u.Op.DisplayName()
	} else if g.Op.Name == "" {
		g.Op.Name = "grad_" + u.Op.DisplayName()
	}
	u.Grad, u.Op, u.Spec = g, g.Op, nil
	return nil
}

// wantsGrad: autodiff runs only when a gradient is asked for.
func wantsGrad(u *Unit) bool { return u.Wrt != nil }
