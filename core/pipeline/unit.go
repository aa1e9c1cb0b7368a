package pipeline

import (
	"github.com/neoflow/neoflow/core/autodiff"
	"github.com/neoflow/neoflow/core/fuse"
	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/loops"
)

// Target is the kind of code a unit is lowered for; it picks the default
// schedules.
type Target int

const (
	// CPU lowers for the C backend (loops.DefaultSchedule).
	CPU Target = iota
	// GPU lowers for the CUDA backend (loops.GPUSchedule).
	GPU
	// CPUProfiled is CPU for a kernel that times each statement's nest
	// (the tuner's): its nests are not fused (fuse-nests), so that each
	// statement's time is its own.
	CPUProfiled
)

// Unit is one op on its way through the passes. The caller fills the
// inputs of the passes it runs; each pass fills its result.
type Unit struct {
	// Op is the statement level: the checked op, or after autodiff the
	// gradient op.
	Op *ir.Op
	// DType, Shapes (one per input of Op) and Sizes (extents that cannot
	// be inferred) are what specialize specializes Op for.
	DType  ir.DType
	Shapes [][]int64
	Sizes  map[string]int64
	// Ints gives the element type of each integer input of Op (by name).
	Ints map[string]ir.DType

	// Spec is the specialized level.
	Spec *ir.Spec

	// Wrt selects the inputs autodiff differentiates with respect to; nil
	// means no gradient is asked for and autodiff does not run. With Save
	// the gradient op reads the forward temporaries and outputs it needs
	// (autodiff.GradSaving).
	Wrt  []bool
	Save bool
	// Forward has autodiff derive the tangent op instead (forward mode,
	// autodiff.Tangent): tangents of the inputs Wrt selects in, tangents
	// of every output out. Not with Save.
	Forward bool
	// Recompute is save-or-recompute's decision: the forward temporaries
	// a saving gradient computes again instead of reading them saved.
	Recompute map[string]bool
	// Grad is autodiff's result (a tangent op with Forward); its Op is
	// also Unit.Op afterwards.
	Grad *autodiff.GradOp

	// Fusion runs the fusion passes (core/fuse) on the Spec, and lets a
	// saving gradient (Save) recompute the forward temporaries the reward
	// chooses (save-or-recompute) instead of reading them saved; Keep
	// names the temporaries they must leave whole (the caller reads them
	// after the kernel). With KeepSaved, save-or-recompute adds the
	// temporaries the op's saving gradients read (the forward kernel of
	// an op differentiated under autograd). FusionNotes holds each
	// pass's decisions.
	Fusion      bool
	Keep        map[string]bool
	KeepSaved   bool
	FusionNotes map[string][]string
	// SplitAlways makes fuse-split split wherever it can (tests).
	SplitAlways bool
	// Machine weighs the fusion reward's terms (zero: fuse.DefaultMachine).
	Machine fuse.Machine

	// MergeAxes runs merge-axes (loops.MergeReductionAxes), for a kernel
	// the C backend builds: the caller sets it before the spec reaches
	// the builder and the tuner, which then schedule the merged axes.
	MergeAxes bool

	// Target picks the default schedules; Sched, when set, gives each
	// statement's schedule instead. Pick, when set, comes first: it is
	// asked once for the schedules of the spec as the schedule pass finds
	// it (after fusion: a caller cannot know it before), and gives nil for
	// none; Picked holds what it gave.
	Target Target
	Sched  func(spec *ir.Spec, i int) loops.Schedule
	Pick   func(spec *ir.Spec) []loops.Schedule
	Picked []loops.Schedule
	// Schedules holds one schedule per statement after the schedule pass.
	Schedules []loops.Schedule

	// Func is the loop level.
	Func *loops.Func

	// Dump, when set, receives the IR after the passes it selects.
	Dump *Dumper

	// Failed names the pass whose error ended the last Run on u.
	Failed string

	done   map[string]bool
	dumpID int
}

// FromSpec is a unit that starts at the specialized level: spec was made
// by sema.Specialize, so the specialize pass counts as done.
func FromSpec(spec *ir.Spec) *Unit {
	u := &Unit{Spec: spec}
	if spec != nil {
		u.Op, u.DType, u.Ints = spec.Op, spec.DType, spec.IntInputs()
	}
	u.markDone("specialize")
	return u
}

func (u *Unit) markDone(pass string) {
	if u.done == nil {
		u.done = map[string]bool{}
	}
	u.done[pass] = true
}

// Done reports whether the named pass has run on u.
func (u *Unit) Done(pass string) bool { return u.done[pass] }
