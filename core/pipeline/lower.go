package pipeline

import "github.com/neoflow/neoflow/core/loops"

// lower builds one loop nest per statement with its schedule
// (loops.LowerNests): Scheduled -> Func.
func lower(u *Unit) error {
	fn, err := loops.LowerNests(u.Spec, Given(u.Schedules))
	if err != nil {
		return err
	}
	u.Func = fn
	return nil
}
