package pipeline

import (
	"github.com/pkg/errors"

	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/loops"
)

// schedule gives every statement its schedule: u.Pick's when it gives
// some, else u.Sched's (tuned or given) when set, else the target's
// default (loops.DefaultSchedule for the CPU, loops.GPUSchedule for the
// GPU). Spec -> Scheduled.
func schedule(u *Unit) error {
	if u.Pick != nil {
		u.Picked = u.Pick(u.Spec)
		if u.Picked != nil {
			if len(u.Picked) != len(u.Spec.Stmts) {
				return errors.Errorf("%d schedules picked for the %d statements of op %s", len(u.Picked), len(u.Spec.Stmts), u.Op.DisplayName())
			}
			u.Schedules = u.Picked
			return nil
		}
	}
	sched := u.Sched
	if sched == nil {
		sched = defaultSchedule(u.Target)
	}
	u.Schedules = make([]loops.Schedule, len(u.Spec.Stmts))
	for i := range u.Spec.Stmts {
		u.Schedules[i] = sched(u.Spec, i)
	}
	return nil
}

func defaultSchedule(t Target) func(*ir.Spec, int) loops.Schedule {
	if t == GPU {
		return loops.GPUSchedule
	}
	return loops.DefaultSchedule
}

// Given is a Sched of explicit schedules, one per statement; nil means the
// defaults.
func Given(scheds []loops.Schedule) func(*ir.Spec, int) loops.Schedule {
	if scheds == nil {
		return nil
	}
	return func(_ *ir.Spec, i int) loops.Schedule { return scheds[i] }
}
