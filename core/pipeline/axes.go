package pipeline

import "github.com/neoflow/neoflow/core/loops"

// mergeAxes merges the reduction axes that every access reads as two
// adjacent dimensions (loops.MergeReductionAxes), Spec -> Spec.
func mergeAxes(u *Unit) error {
	u.Spec = loops.MergeReductionAxes(u.Spec)
	u.Op = u.Spec.Op
	return nil
}

// wantsMergedAxes: merge-axes runs when the unit asks for it.
func wantsMergedAxes(u *Unit) bool { return u.MergeAxes }
