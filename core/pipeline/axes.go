package pipeline

import (
	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/loops"
)

// mergeAxes merges the reduction axes that every access reads as two
// adjacent dimensions (loops.MergeReductionAxes), Spec -> Spec.
func mergeAxes(u *Unit) error {
	u.Spec = loops.MergeReductionAxes(u.Spec)
	u.Op = u.Spec.Op
	return nil
}

// wantsMergedAxes: merge-axes runs when the unit asks for it.
func wantsMergedAxes(u *Unit) bool { return u.MergeAxes }

// MergeAxes runs merge-axes on spec (a specialized, possibly fused op the
// C backend builds), dumping it when dump selects it; it returns spec
// itself when no axes merge.
func MergeAxes(spec *ir.Spec, dump *Dumper) (*ir.Spec, error) {
	u := FromSpec(spec)
	u.MergeAxes, u.Dump = true, dump
	if err := Run(u, "merge-axes"); err != nil {
		return nil, err
	}
	return u.Spec, nil
}
