package pipeline

import (
	"testing"

	"github.com/neoflow/neoflow/core/autodiff"
	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/internal/testops"
)

// savedTemps derives the gradients with respect to all inputs and to each
// alone; the temporaries the saving gradient of any set of inputs reads
// (with the temporaries Recompute has it recompute, as autodiff
// derives it with fusion on) must be among them, or fusion would drop one
// the backward needs. Every subset of every op's inputs in the test table
// (and of its gradient op's, for double backward), checked.
func TestSavedTempsCoverEverySubset(t *testing.T) {
	for _, o := range testops.All {
		spec, err := o.Spec(ir.Float64)
		if err != nil {
			t.Fatal(err)
		}
		specs := []*ir.Spec{spec}
		if len(spec.Op.Inputs) > 0 {
			g, _, err := o.GradSpec(ir.Float64)
			if err != nil {
				t.Fatal(err)
			}
			specs = append(specs, g)
		}
		for _, s := range specs {
			rec, _ := Recompute(s)
			keep := savedTemps(s, rec)
			n := len(s.Op.Inputs)
			if n > 10 {
				n = 10 // 1023 subsets at most
			}
			for mask := 1; mask < 1<<n; mask++ {
				wrt := make([]bool, len(s.Op.Inputs))
				for i := range n {
					wrt[i] = mask&(1<<i) != 0
				}
				g, err := autodiff.GradRecomputing(s, wrt, rec)
				if err != nil {
					continue
				}
				for _, name := range g.Saved {
					if td := s.Tensor(name); td != nil && td.Role == ir.RoleTemp && !keep[name] {
						t.Fatalf("%s (%s): the saving gradient for inputs %v reads temporary %s, which fusion would not keep (kept %v)", o.Name, s.Op.Name, wrt, name, keep)
					}
				}
			}
		}
	}
}
