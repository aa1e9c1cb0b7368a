package pipeline

import "github.com/neoflow/neoflow/core/loops"

// versionLanes gives guarded lane loops an unguarded copy for the
// iterations where every guard holds on all lanes (loops.VersionFunc):
// Func -> Func.
func versionLanes(u *Unit) error {
	u.Func = loops.VersionFunc(u.Func)
	return nil
}
