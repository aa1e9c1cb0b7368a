package cgen

import (
	"fmt"
	"strings"
	"testing"

	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/pipeline"
	"github.com/neoflow/neoflow/internal/testops"
)

// profiledSource renders test op name both ways.
func profiledSource(t *testing.T, name string, dt ir.DType) (plain, profiled string, nests int) {
	t.Helper()
	o, ok := testops.Lookup(name)
	if !ok {
		t.Fatalf("no test op %s", name)
	}
	spec, err := o.Spec(dt)
	if err != nil {
		t.Fatal(err)
	}
	u := pipeline.FromSpec(spec) // as kernels builds a profiled kernel: its nests unfused
	u.Target = pipeline.CPUProfiled
	if err := pipeline.Run(u, pipeline.Build); err != nil {
		t.Fatal(err)
	}
	fn := u.Func
	if plain, err = Render(fn, "nf_kernel"); err != nil {
		t.Fatal(err)
	}
	profiled, err = RenderProfiled(fn, "nf_kernel")
	if err != nil {
		t.Fatal(err)
	}
	return plain, profiled, len(fn.Nests)
}

// TestRenderProfiled checks that the profiled kernel is the plain one plus
// the timing lines: the POSIX define before the includes, the timing
// buffer after the tensors, and a clock read around each nest adding to
// that nest's entry.
func TestRenderProfiled(t *testing.T) {
	plain, prof, nests := profiledSource(t, "softmax", ir.Float32)
	if nests != 4 {
		t.Fatalf("softmax has %d nests, want 4", nests)
	}
	if prof == plain {
		t.Fatal("the profiled source equals the plain one")
	}
	def := strings.Index(prof, "#define _POSIX_C_SOURCE 199309L\n")
	if def < 0 || def > strings.Index(prof, "#include") {
		t.Errorf("the POSIX define is missing or after an include:\n%s", prof)
	}
	for _, want := range []string{
		"// buffers: X[7, 19] input, Y[7, 19] output, M[7] temp, E[7, 19] temp, S[7] temp, nf_prof[4] double seconds per statement\n",
		"#include <stdint.h>\n#include <time.h>\n",
		"\tdouble *restrict nf_prof = (double *)bufs[5];\n\tstruct timespec nf_t0, nf_t1;\n",
	} {
		if !strings.Contains(prof, want) {
			t.Errorf("the profiled source lacks %q:\n%s", want, prof)
		}
	}
	// Each nest, in order, is enclosed by its two clock reads.
	rest := prof
	for i := range nests {
		start := strings.Index(rest, "\tclock_gettime(CLOCK_MONOTONIC, &nf_t0);\n\t// ")
		add := fmt.Sprintf("\tclock_gettime(CLOCK_MONOTONIC, &nf_t1);\n\tnf_prof[%d] += (double)(nf_t1.tv_sec - nf_t0.tv_sec) + 1e-9 * (double)(nf_t1.tv_nsec - nf_t0.tv_nsec);\n", i)
		end := strings.Index(rest, add)
		if start < 0 || end < start {
			t.Fatalf("nest %d is not enclosed by clock reads:\n%s", i, prof)
		}
		rest = rest[end+len(add):]
	}
	if strings.Contains(rest, "clock_gettime") {
		t.Errorf("clock reads after the last nest:\n%s", prof)
	}
	// Without the timing lines it is the plain kernel.
	var kept []string
	for _, l := range strings.SplitAfter(prof, "\n") {
		if strings.Contains(l, "nf_t0") || strings.Contains(l, "nf_t1") || strings.Contains(l, "*restrict nf_prof") || strings.Contains(l, "_POSIX_C_SOURCE") || l == "#include <time.h>\n" {
			continue
		}
		kept = append(kept, strings.Replace(l, ", nf_prof[4] double seconds per statement", "", 1))
	}
	if got := strings.Join(kept, ""); got != plain {
		t.Errorf("the profiled source less its timing lines differs from the plain source:\n%s\nplain:\n%s", got, plain)
	}
}

// TestRenderProfiledCompiles checks the profiled source of every golden op
// with the C compiler as kernels/cc compiles it (-std=c11), warnings as
// errors.
func TestRenderProfiledCompiles(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	checkCompiles(t, func(name string, dt ir.DType) string {
		_, src, _ := profiledSource(t, name, dt)
		return src
	})
}
