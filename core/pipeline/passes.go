package pipeline

// Level is an IR level that a pass produces; each has a printer (dump.go).
type Level int

const (
	// LevelOp is the statement level, ir.Op (ir.Print).
	LevelOp Level = iota
	// LevelSpec is the specialized level, ir.Spec (ir.PrintSpec).
	LevelSpec
	// LevelFused is a Spec after a fusion pass, with the pass's decisions.
	LevelFused
	// LevelScheduled is a Spec with a schedule per statement.
	LevelScheduled
	// LevelLoops is the loop level, loops.Func (loops.Dump).
	LevelLoops
)

// Pass is one step of the pipeline.
type Pass struct {
	// Name is what dumps and errors call the pass.
	Name string
	// Run transforms the unit in place.
	Run func(u *Unit) error
	// Applies reports whether the pass runs on u; nil means always. A pass
	// that does not apply is skipped and does not count as done.
	Applies func(u *Unit) bool
	// After names the passes that must have run on the unit first.
	After []string
	// Out is the level the pass leaves the unit at, for dumps.
	Out Level
}

// passes is the pipeline, in the order it runs. It is set in init: the
// autodiff pass runs the fusion passes (Recompute), which makes the table
// refer to itself.
var passes []Pass

func table() []Pass {
	return []Pass{
		{Name: "specialize", Run: specialize, Applies: needsSpec, Out: LevelSpec},
		{Name: "autodiff", Run: differentiate, Applies: wantsGrad, After: []string{"specialize"}, Out: LevelOp},
		{Name: "fuse-fold", Run: fuseFold, Applies: wantsFusion, After: []string{"specialize"}, Out: LevelFused},
		{Name: "fuse-merge", Run: fuseMerge, Applies: wantsFusion, After: []string{"fuse-fold"}, Out: LevelFused},
		{Name: "fuse-split", Run: fuseSplit, Applies: wantsFusion, After: []string{"fuse-merge"}, Out: LevelFused},
		{Name: "fuse-cse", Run: fuseCSE, Applies: wantsFusion, After: []string{"fuse-split"}, Out: LevelFused},
		{Name: "fuse-inline", Run: fuseInline, Applies: wantsFusion, After: []string{"fuse-cse"}, Out: LevelFused},
		{Name: "fuse-prune", Run: fusePrune, Applies: wantsFusion, After: []string{"fuse-inline"}, Out: LevelFused},
		{Name: "fuse-group", Run: fuseGroup, Applies: wantsFusion, After: []string{"fuse-prune"}, Out: LevelFused},
		{Name: "merge-axes", Run: mergeAxes, Applies: wantsMergedAxes, After: []string{"specialize"}, Out: LevelSpec},
		{Name: "schedule", Run: schedule, After: []string{"specialize"}, Out: LevelScheduled},
		{Name: "lower", Run: lower, After: []string{"schedule"}, Out: LevelLoops},
		{Name: "hoist-guards", Run: hoistGuards, After: []string{"lower"}, Out: LevelLoops},
		{Name: "version-lanes", Run: versionLanes, After: []string{"hoist-guards"}, Out: LevelLoops},
		{Name: "check-bounds", Run: checkBounds, After: []string{"version-lanes"}, Out: LevelLoops},
	}
}

// The last passes of the two ways through the table.
const (
	// Derive ends with the gradient op of a specialized op.
	Derive = "autodiff"
	// Build ends with the loop nests the renderers take.
	Build = "check-bounds"
)

func init() {
	passes = table()
	if err := checkOrder(passes); err != nil {
		panic("pipeline: " + err.Error())
	}
}

// Passes lists the names of the passes in the order they run.
func Passes() []string {
	names := make([]string, len(passes))
	for i, p := range passes {
		names[i] = p.Name
	}
	return names
}
