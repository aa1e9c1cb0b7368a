// Package pipeline is neoflow's compiler pipeline: one ordered table of
// named passes (passes.go) that takes a checked op (after core/parse and
// sema.Check) to the loop nests that the renderers (kernels/cgen) take.
// Forward ops and gradient ops go through the same table; torchbridge and
// kernels call Run and never string the steps together themselves: a
// request runs one plan, named for the last pass it runs (Derive: the
// gradient op; Kernel: the spec a kernel is built from; Build: the loop
// nests of one schedule). The table does not refer to itself:
// save-or-recompute runs the fusion passes (the slice fusion, which the
// table holds) on the gradient op it weighs, never Run.
//
// A Unit carries one op through the passes, at the IR level the passes so
// far have brought it to: the statement level (ir.Op), the specialized
// level (ir.Spec), the scheduled level (a Spec and one loops.Schedule per
// statement) and the loop level (loops.Func). Each pass is an IR -> IR
// function in a file named for it; the table in passes.go lists them all,
// in order, with the passes each needs first and the level it leaves the
// unit at (Passes lists their names; docs/how-it-works.md says what each
// does).
//
// Run(u, last) runs the table in order up to and including the pass named
// last, skipping the passes that do not apply to u (autodiff without a
// gradient request; specialize when u already holds a Spec). A pass names
// the passes it needs first (After); the table's order is checked against
// them when the package initializes, and each Run checks that what a pass
// needs has run on the unit, failing loudly before it starts. An error
// from a pass is wrapped with its name ("pass specialize: ..."). With
// NEOFLOW_CHECK=1 in the environment, Run verifies the IR after every pass
// (check.go: the op checks, every access of a specialized op is still
// proven in bounds, the loop nests keep their accesses in their buffers).
//
// Dumps. A Dumper prints the IR after the passes it selects, each under a
// header line "// after <pass>: ..." (which ends "(unchanged)", with only
// the pass's notes below it, when the pass changed nothing), to a writer or one file per op and
// pass in a directory: NEOFLOW_DUMP=all or NEOFLOW_DUMP=<pass>,<pass>
// and NEOFLOW_DUMP_DIR, read by Python and sent in the init request.
//
// Symbolic runs the Build plan twice, on one op specialized at two values
// of some sizes, under the same schedules, and generalizes the two loop
// nests into one kernel for every value (loops.Generalize), after
// sema.ProveSymbolic has proven every access for every size, or for the
// sizes that meet its launch guards (loops.Func.Guards), which must hold
// at the two values.
//
// To add a pass: write it in a file named for it as a function of *Unit,
// add it to the table where it belongs with the passes it needs, and give
// the level it produces a printer (dump.go) if it is a new level.
package pipeline
