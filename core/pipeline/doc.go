// Package pipeline is neoflow's compiler pipeline: one ordered table of
// named passes (passes.go) that takes a checked op (after core/parse and
// sema.Check) to the loop nests that the renderers (kernels/cgen) take.
// Forward ops and gradient ops go through the same table; torchbridge and
// kernels call Run and never string the steps together themselves.
//
// A Unit carries one op through the passes, at the IR level the passes so
// far have brought it to: the statement level (ir.Op), the specialized
// level (ir.Spec), the scheduled level (a Spec and one loops.Schedule per
// statement) and the loop level (loops.Func). Each pass is an IR -> IR
// function in a file named for it:
//
//	specialize     Op -> Spec        sema.Specialize: shapes, extents, bounds proof
//	autodiff       Spec -> Op        the gradient op (gradient requests only)
//	schedule       Spec -> Scheduled the given schedules, else the target's defaults
//	lower          Scheduled -> Func loops.LowerNests: a loop nest per statement
//	hoist-guards   Func -> Func      guards out of the loops they do not depend on
//	version-lanes  Func -> Func      an unguarded copy of guarded lane loops
//	check-bounds   Func -> Func      no access of a nest can leave its buffer
//
// Run(u, last) runs the table in order up to and including the pass named
// last, skipping the passes that do not apply to u (autodiff without a
// gradient request; specialize when u already holds a Spec). A pass names
// the passes it needs first (After); the table's order is checked against
// them when the package initializes, and each Run checks that what a pass
// needs has run on the unit, failing loudly before it starts.
//
// Dumps. A Dumper prints the IR after the passes it selects, each under a
// header line "// after <pass>: ...", to a writer or one file per op and
// pass in a directory: NEOFLOW_DUMP=all or NEOFLOW_DUMP=<pass>,<pass>
// and NEOFLOW_DUMP_DIR, read by Python and sent in the init request.
//
// To add a pass: write it in a file named for it as a function of *Unit,
// add it to the table where it belongs with the passes it needs, and give
// the level it produces a printer (dump.go) if it is a new level.
package pipeline
