package cgen

import (
	"fmt"
	"strings"

	"github.com/neoflow/neoflow/core/ir"
)

// vecMathFuncs are the <math.h> functions whose vector variants glibc's
// libmvec provides on x86-64 (exp, log, pow, sin and cos since glibc 2.22;
// the others since 2.35).
var vecMathFuncs = []struct {
	name  string
	arity int
}{
	{"exp", 1}, {"log", 1}, {"tanh", 1}, {"erf", 1}, {"pow", 2}, {"sin", 1}, {"cos", 1}, {"tan", 1}, {"asin", 1},
	{"acos", 1}, {"atan", 1}, {"atan2", 2}, {"sinh", 1}, {"cosh", 1}, {"log1p", 1}, {"expm1", 1}, {"log2", 1},
	{"exp2", 1},
}

// vectorMathDecls redeclares the math functions of the kernel's value type
// with "#pragma omp declare simd", so that lane loops calling them vectorize
// (through libmvec, linked by kernels/cc on linux/amd64) instead of calling
// the scalar function once per lane. libmvec's results are within 4 ulp of
// the scalar ones. The block is compiled only with glibc >= 2.35 on x86-64;
// elsewhere the scalar functions are used.
func vectorMathDecls(ctype, suffix string) string {
	var b strings.Builder
	b.WriteString("#if defined(__x86_64__) && defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 35)\n")
	for _, f := range vecMathFuncs {
		params := strings.TrimSuffix(strings.Repeat(ctype+", ", f.arity), ", ")
		fmt.Fprintf(&b, "#pragma omp declare simd notinbranch\n%s %s%s(%s);\n", ctype, f.name, suffix, params)
	}
	b.WriteString("#endif\n\n")
	return b.String()
}

// powHelpers are the helpers that multiply out pow(x, n), by exponent.
var powHelpers = map[int]string{2: "nf_pow2", 3: "nf_pow3", 4: "nf_pow4", -1: "nf_pow_1", -2: "nf_pow_2"}

// smallPower reports whether call e is pow(x, n) with n a literal of
// powHelpers, and n. The product differs from pow's correctly rounded
// result by a rounding or two (as PyTorch's, which multiplies out the
// same exponents); pow(x, 1) stays a call, rare enough not to matter.
func smallPower(e *ir.Call) (int, bool) {
	if e.Fn != ir.FuncPow {
		return 0, false
	}
	var v float64
	switch l := e.Args[1].(type) {
	case *ir.IntLit:
		v = float64(l.Value)
	case *ir.FloatLit:
		v = l.Value
	default:
		return 0, false
	}
	n := int(v)
	_, ok := powHelpers[n]
	return n, ok && float64(n) == v
}
