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

// passes is the pipeline, in the order it runs.
var passes = table()

// fusion is the table's fusion passes (core/fuse), Spec -> Spec, in
// order. save-or-recompute runs them on the gradient op it weighs
// (storedAgain), and Fuse on a spec; every other caller reaches them
// through Run.
var fusion = []Pass{
	{Name: "fuse-fold", Run: fuseFold, Applies: wantsFusion, After: []string{"specialize"}, Out: LevelFused},
	{Name: "fuse-merge", Run: fuseMerge, Applies: wantsFusion, After: []string{"fuse-fold"}, Out: LevelFused},
	{Name: "fuse-split", Run: fuseSplit, Applies: wantsFusion, After: []string{"fuse-merge"}, Out: LevelFused},
	{Name: "fuse-cse", Run: fuseCSE, Applies: wantsFusion, After: []string{"fuse-split"}, Out: LevelFused},
	{Name: "fuse-inline", Run: fuseInline, Applies: wantsFusion, After: []string{"fuse-cse"}, Out: LevelFused},
	{Name: "fuse-prune", Run: fusePrune, Applies: wantsFusion, After: []string{"fuse-inline"}, Out: LevelFused},
	{Name: "fuse-group", Run: fuseGroup, Applies: wantsFusion, After: []string{"fuse-prune"}, Out: LevelFused},
}

func table() []Pass {
	t := []Pass{
		{Name: "specialize", Run: specialize, Applies: needsSpec, Out: LevelSpec},
		{Name: "save-or-recompute", Run: saveOrRecompute, Applies: wantsDecision, After: []string{"specialize"}, Out: LevelFused},
		{Name: "autodiff", Run: differentiate, Applies: wantsGrad, After: []string{"specialize"}, Out: LevelOp},
	}
	t = append(t, fusion...)
	return append(t,
		Pass{Name: "merge-axes", Run: mergeAxes, Applies: wantsMergedAxes, After: []string{"specialize"}, Out: LevelSpec},
		Pass{Name: "schedule", Run: schedule, After: []string{"specialize"}, Out: LevelScheduled},
		Pass{Name: "lower", Run: lower, After: []string{"schedule"}, Out: LevelLoops},
		Pass{Name: "hoist-guards", Run: hoistGuards, After: []string{"lower"}, Out: LevelLoops},
		Pass{Name: "version-lanes", Run: versionLanes, After: []string{"hoist-guards"}, Out: LevelLoops},
		Pass{Name: "fuse-nests", Run: fuseNests, Applies: fusesNests, After: []string{"version-lanes"}, Out: LevelLoops},
		Pass{Name: "parallel-rows", Run: parallelRows, Applies: withDefaults, After: []string{"fuse-nests"}, Out: LevelLoops},
		Pass{Name: "hoist-invariants", Run: hoistInvariants, Applies: hostCode, After: []string{"version-lanes"}, Out: LevelLoops},
		Pass{Name: "check-bounds", Run: checkBounds, After: []string{"version-lanes"}, Out: LevelLoops},
	)
}

// The plans: the last pass of each way through the table that a caller
// runs. A request of torchbridge runs one of the first two; a kernel
// builder runs Build for each schedule it lowers (the tuner lowers many
// from one spec, and a cached kernel lowers none).
const (
	// Derive ends with the gradient op of a specialized op.
	Derive = "autodiff"
	// Kernel ends with the spec a kernel is built from: specialized,
	// with fusion on fused (the temporaries its saving gradients read kept
	// whole), with MergeAxes its reduction axes merged.
	Kernel = "merge-axes"
	// Build ends with the loop nests the renderers take.
	Build = "check-bounds"
)

// order is each pass's place in the table, from 0.
var order = map[string]int{}

func init() {
	if err := checkOrder(passes); err != nil {
		panic("pipeline: " + err.Error())
	}
	for i, p := range passes {
		order[p.Name] = i
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
