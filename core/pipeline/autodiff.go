package pipeline

import (
	"github.com/pkg/errors"

	"github.com/neoflow/neoflow/core/autodiff"
)

// differentiate derives the gradient op of the specialized op with respect
// to the inputs u.Wrt selects (autodiff.Grad, or GradSaving with u.Save):
// Spec -> Op. The unit's statement level becomes the gradient op, which
// is specialized afresh (with Grad.Sizes) when it is built.
func differentiate(u *Unit) error {
	derive := autodiff.Grad
	if u.Save {
		derive = autodiff.GradSaving
	}
	g, err := derive(u.Spec, u.Wrt)
	if err != nil {
		return errors.Wrapf(err, "differentiating op %s", opName(u))
	}
	if g.Op.Name == "" {
		g.Op.Name = "grad_" + opName(u)
	}
	u.Grad, u.Op, u.Spec = g, g.Op, nil
	return nil
}

// wantsGrad: autodiff runs only when a gradient is asked for.
func wantsGrad(u *Unit) bool { return u.Wrt != nil }
