package pipeline

import "github.com/neoflow/neoflow/core/loops"

// hoistInvariants computes the math calls a loop does not change once
// before it (loops.HoistInvariants): Func -> Func, for C code (hostCode).
func hoistInvariants(u *Unit) error {
	u.Func = loops.HoistInvariants(u.Func)
	return nil
}

// hostCode reports whether u is lowered to C (for the CPU).
func hostCode(u *Unit) bool { return u.Target == CPU || u.Target == CPUProfiled }
