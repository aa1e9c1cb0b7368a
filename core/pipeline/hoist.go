package pipeline

import "github.com/neoflow/neoflow/core/loops"

// hoistGuards moves the conditions of guarded combining stores out of the
// loops they do not depend on, in every CPU nest (loops.HoistFunc):
// Func -> Func.
func hoistGuards(u *Unit) error {
	u.Func = loops.HoistFunc(u.Func)
	return nil
}
