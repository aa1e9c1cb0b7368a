package fuse

import (
	"testing"

	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/internal/progen"
)

// Generated programs and their saving gradient ops compute the same
// outputs fused and unfused (in the interpreter): with no temporary
// kept, with every temporary kept, and splitting wherever possible.
func TestGeneratedProgramsFuseExactly(t *testing.T) {
	n := 3000
	if testing.Short() {
		n = 300
	}
	fusedSome := 0
	for seed := uint64(1); seed <= uint64(n); seed++ {
		p := progen.New(seed)
		spec, err := p.Spec(ir.Float64)
		if err != nil {
			continue
		}
		specs := []*ir.Spec{spec}
		if g, err := gradOf(spec); err == nil { // an op of constants has none
			specs = append(specs, g)
		}
		for _, s := range specs {
			for mode := range 3 {
				keepAll := mode == 1
				opts := Options{SplitAlways: mode == 2}
				if keepAll {
					opts.Keep = map[string]bool{}
					for _, td := range s.Tensors {
						opts.Keep[td.Name] = true
					}
				}
				f := all(s, opts, nil)
				if f != s {
					fusedSome++
				}
				checkKept(t, s, f, opts)
				sameOutputs(t, s, f, int64(seed))
			}
		}
	}
	if fusedSome == 0 {
		t.Fatal("no generated program was changed by fusion")
	}
	t.Logf("%d fused specs changed", fusedSome)
}

// checkKept: every kept temporary is still a buffer, written whole by one
// statement as before.
func checkKept(t *testing.T, before, after *ir.Spec, opts Options) {
	t.Helper()
	for name := range opts.Keep {
		td := before.Tensor(name)
		if td == nil || td.Role != ir.RoleTemp {
			continue
		}
		if after.Tensor(name) == nil {
			t.Fatalf("kept temporary %s was removed:\n%s", name, ir.PrintSpec(after))
		}
		for _, i := range writers(after.Stmts, name) {
			if after.Stmts[i].Partial(td.Shape) {
				t.Fatalf("kept temporary %s is written in parts:\n%s", name, ir.PrintSpec(after))
			}
		}
	}
}
