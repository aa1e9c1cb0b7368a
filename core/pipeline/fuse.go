package pipeline

import (
	"github.com/neoflow/neoflow/core/fuse"
	"github.com/neoflow/neoflow/core/ir"
)

// The fusion passes (core/fuse), Spec -> Spec, each run when the unit
// asks for fusion (Unit.Fusion). Their decisions go to Unit.FusionNotes
// and into their dumps.

func fuseFold(u *Unit) error   { return fusePass(u, "fuse-fold", fuse.Fold) }
func fuseMerge(u *Unit) error  { return fusePass(u, "fuse-merge", fuse.Merge) }
func fuseSplit(u *Unit) error  { return fusePass(u, "fuse-split", fuse.Split) }
func fuseCSE(u *Unit) error    { return fusePass(u, "fuse-cse", fuse.CSE) }
func fuseInline(u *Unit) error { return fusePass(u, "fuse-inline", fuse.Inline) }
func fusePrune(u *Unit) error  { return fusePass(u, "fuse-prune", fuse.Prune) }
func fuseGroup(u *Unit) error  { return fusePass(u, "fuse-group", fuse.Group) }

func fusePass(u *Unit, name string, pass func(*ir.Spec, fuse.Options, *fuse.Notes) *ir.Spec) error {
	var notes fuse.Notes
	u.Spec = pass(u.Spec, fuse.Options{Keep: u.Keep, SplitAlways: u.SplitAlways, Machine: u.Machine}, &notes)
	u.Op = u.Spec.Op
	if u.FusionNotes == nil {
		u.FusionNotes = map[string][]string{}
	}
	u.FusionNotes[name] = notes
	return nil
}

// wantsFusion: the fusion passes run when the unit asks for them.
func wantsFusion(u *Unit) bool { return u.Fusion }

// Fused is the last fusion pass: a caller that runs the table to it has
// the fused Spec, whose buffers (Spec.Tensors) the kernels take.
const Fused = "fuse-group"

// Fuse runs the fusion passes on spec with opts; it returns spec itself
// when they change nothing.
func Fuse(spec *ir.Spec, opts fuse.Options) (*ir.Spec, error) {
	u := FromSpec(spec)
	u.Fusion, u.Keep, u.SplitAlways, u.Machine = true, opts.Keep, opts.SplitAlways, opts.Machine
	if err := runPasses(u, fusion); err != nil {
		return nil, err
	}
	return u.Spec, nil
}
