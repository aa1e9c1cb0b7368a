package autotune

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/neoflow/neoflow/core/fuse"
	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/loops"
	"github.com/neoflow/neoflow/core/pipeline"
	"github.com/neoflow/neoflow/internal/hostbuf"
	"github.com/neoflow/neoflow/internal/testops"
)

// fusedSpecs are the fused forward and gradient specs of the test ops.
func fusedSpecs(t *testing.T, dt ir.DType) map[string]*ir.Spec {
	t.Helper()
	out := map[string]*ir.Spec{}
	for _, o := range testops.All {
		fwd, err := o.Spec(dt)
		if err != nil {
			t.Fatal(err)
		}
		specs := map[string]*ir.Spec{o.Name: fwd}
		if g, _, err := o.GradSpec(dt); err == nil {
			specs[o.Name+"_grad"] = g
		}
		for name, spec := range specs {
			f, err := pipeline.Fuse(spec, fuse.Options{SplitAlways: true})
			if err != nil {
				t.Fatalf("%s: fusion: %v", name, err)
			}
			out[name] = f
		}
	}
	return out
}

// groupedSpecs are the fused specs (fusedSpecs) that have fused groups
// the space tiles as one nest.
func groupedSpecs(t *testing.T, dt ir.DType) map[string]*ir.Spec {
	t.Helper()
	out := map[string]*ir.Spec{}
	for name, f := range fusedSpecs(t, dt) {
		if slices.ContainsFunc(NewSpace(f).stmts, func(ss stmtSpace) bool { return ss.grp != nil }) {
			out[name] = f
		}
	}
	return out
}

// TestGroupSpace checks the fused groups' genes: random genomes that put
// every group in the group mode, and the group seeds, decode to group
// tilings that lower and compute what the interpreter computes, on 3
// threads; the space reaches tilings other than the default one.
func TestGroupSpace(t *testing.T) {
	parallelAlways(t)
	b := testBuilder(t)
	specs := groupedSpecs(t, ir.Float64)
	if len(specs) < 3 {
		t.Fatalf("only %d fused specs with groups among the test ops", len(specs))
	}
	others := 0
	for name, spec := range specs {
		t.Run(name, func(t *testing.T) {
			sp := NewSpace(spec)
			rng := rand.New(rand.NewPCG(7, uint64(len(name))))
			inputs := hostbuf.RandomInputs(spec, true, 3)
			for range 3 {
				g := randomGenome(rng, sp.Cardinalities())
				for _, ss := range sp.stmts {
					if ss.grp != nil {
						g[ss.off+geneMode] = 2
					}
				}
				scheds := sp.Decode(g)
				for i, ss := range sp.stmts {
					if ss.grp == nil {
						continue
					}
					if scheds[i].Group == nil {
						t.Fatalf("statement %d: group mode decoded to %v", i, scheds[i])
					}
					if scheds[i].Group.String() != loops.DefaultSchedule(spec, i).Group.String() {
						others++
					}
				}
				checkAgainstInterp(t, b, spec, scheds, inputs, 3)
			}
			seeds := 0
			for _, g := range sp.Seeds() {
				if slices.ContainsFunc(sp.stmts, func(ss stmtSpace) bool { return ss.grp != nil && g[ss.off+geneMode] == 2 }) {
					seeds++
					checkAgainstInterp(t, b, spec, sp.Decode(g), inputs, 3)
				}
			}
			if seeds == 0 {
				t.Errorf("no group seed")
			}
		})
	}
	if others == 0 {
		t.Errorf("every group genome decoded to the default group tiling")
	}
}

// TestGroupUnits checks that the tuner composes and reverts a fused
// group's genes as one unit, timed as the sum of its members.
func TestGroupUnits(t *testing.T) {
	for name, spec := range groupedSpecs(t, ir.Float32) {
		units := groupOf(spec)
		flat := slices.Concat(units...)
		for i := range flat {
			if flat[i] != i {
				t.Fatalf("%s: units %v do not cover the statements in order", name, units)
			}
		}
		if len(units) == len(spec.Stmts) {
			t.Fatalf("%s: no unit of several statements: %v", name, units)
		}
		for _, u := range units {
			for k, i := range u {
				if spec.Stmts[i].Joined != (k > 0) {
					t.Fatalf("%s: unit %v: statement %d joined %v", name, u, i, spec.Stmts[i].Joined)
				}
			}
		}
	}
}
