package pipeline

import "github.com/neoflow/neoflow/core/loops"

// parallelRows runs a fused nest's outer loop in parallel when its
// members, each too small for threads alone, have the work together
// (loops.ParallelRows): Func -> Func. It applies where fuse-nests does and
// the schedules are the defaults (withDefaults): a tuned or given schedule
// decided each statement's threads itself.
func parallelRows(u *Unit) error {
	u.Func = loops.ParallelRows(u.Func)
	return nil
}

// withDefaults reports whether parallel-rows runs on u.
func withDefaults(u *Unit) bool { return fusesNests(u) && u.Sched == nil && u.Picked == nil }
