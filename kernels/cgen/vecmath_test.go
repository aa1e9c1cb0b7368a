package cgen

import (
	"strings"
	"testing"
)

func TestVectorMathDecls(t *testing.T) {
	for _, tc := range []struct{ desc, ctype, suffix, want string }{
		{"float", "float", "f", "float powf(float, float);"},
		{"double", "double", "", "double tanh(double);"},
	} {
		got := vectorMathDecls(tc.ctype, tc.suffix)
		if !strings.Contains(got, tc.want) || !strings.Contains(got, "#pragma omp declare simd notinbranch") {
			t.Errorf("%s: got\n%s\nwant a simd declaration %q", tc.desc, got, tc.want)
		}
		if !strings.HasPrefix(got, "#if defined(__x86_64__) && defined(__GLIBC__)") {
			t.Errorf("%s: declarations are not guarded by the platform check:\n%s", tc.desc, got)
		}
	}
}
