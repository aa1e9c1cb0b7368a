package pipeline

import "github.com/neoflow/neoflow/core/loops"

// fuseNests runs consecutive CPU nests whose outer loops agree in one nest
// (loops.FuseNests): Func -> Func. It applies to C code whose nests are
// not timed one by one (fusesNests): a profiled kernel (the tuner's)
// times each statement's nest, and CUDA kernels keep a launch per nest.
func fuseNests(u *Unit) error {
	u.Func = loops.FuseNests(u.Func)
	return nil
}

// fusesNests reports whether fuse-nests runs on u.
func fusesNests(u *Unit) bool { return u.Target == CPU }
