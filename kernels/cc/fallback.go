package cc

import (
	"slices"
	"strings"
	"sync"
)

// The default command line suits GCC 10 or later (or clang) on glibc 2.22
// or later. The wheel runs on older systems too (manylinux_2_17: RHEL 8's
// GCC 8, glibc 2.17), where a compiler refuses one of the optional
// arguments below. The first compile that fails for that reason is run
// again without it, and the compiler's later compiles in this process
// leave it out; every kernel stays correct without them.
//
//   - -fvect-cost-model=very-cheap (GCC 10): only limits GCC's own
//     vectorization of loops the schedule did not mark.
//   - -mprefer-vector-width=512 (GCC 8, clang 7): only the vector width
//     the compiler prefers on a CPU with AVX-512.
//   - -lmvec (glibc 2.22): vector math for the lane loops. An older glibc's
//     math.h declares no vector variants, so nothing calls into it.
var optionalArgs = []struct {
	arg   string
	signs []string // what a compiler that refuses arg writes to standard error
}{
	{"-fvect-cost-model=very-cheap", []string{"very-cheap", "vect-cost-model"}},
	{"-mprefer-vector-width=512", []string{"prefer-vector-width"}},
	{"-lmvec", []string{"-lmvec", "lmvec"}},
}

var leftOut struct {
	sync.Mutex
	args map[string][]string // by compiler path
}

// refused is the optional argument of args whose refusal stderr reports,
// or "".
func refused(args []string, stderr string) string {
	for _, o := range optionalArgs {
		if !slices.Contains(args, o.arg) {
			continue
		}
		for _, sign := range o.signs {
			if strings.Contains(stderr, sign) {
				return o.arg
			}
		}
	}
	return ""
}

// leaveOut has compiler's later command lines leave arg out; false if
// they already did.
func leaveOut(compiler, arg string) bool {
	leftOut.Lock()
	defer leftOut.Unlock()
	if slices.Contains(leftOut.args[compiler], arg) {
		return false
	}
	if leftOut.args == nil {
		leftOut.args = map[string][]string{}
	}
	leftOut.args[compiler] = append(leftOut.args[compiler], arg)
	return true
}

// withoutLeftOut is args less what compiler refused earlier.
func withoutLeftOut(compiler string, args []string) []string {
	leftOut.Lock()
	out := leftOut.args[compiler]
	leftOut.Unlock()
	if len(out) == 0 {
		return args
	}
	return slices.DeleteFunc(args, func(a string) bool { return slices.Contains(out, a) })
}

// openMPHint explains a compiler failure that mentions OpenMP: the kernels
// are built with -fopenmp.
func openMPHint(stderr string) string {
	lower := strings.ToLower(stderr)
	if !strings.Contains(lower, "openmp") && !strings.Contains(lower, "omp.h") && !strings.Contains(lower, "-lgomp") &&
		!strings.Contains(lower, "-lomp") {
		return ""
	}
	return "\n(the kernels are compiled with -fopenmp: this C compiler seems to lack OpenMP; install GCC, or clang " +
		"with libomp, and set NEOFLOW_CC to it, or use a kernel bundle, which needs no compiler)"
}
