package pipeline

import "github.com/neoflow/neoflow/core/loops"

// checkBounds fails when an access of some nest may leave its buffer
// (loops.CheckFunc), so that no kernel that might is rendered: Func -> Func.
func checkBounds(u *Unit) error {
	fn, err := loops.CheckFunc(u.Func)
	if err != nil {
		return err
	}
	u.Func = fn
	return nil
}
