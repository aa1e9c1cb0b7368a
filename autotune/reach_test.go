package autotune

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/loops"
	"github.com/neoflow/neoflow/core/pipeline"
	"github.com/neoflow/neoflow/internal/testops"
)

// gateOp reads two halves of one tensor, as an LSTM cell reads its
// gates: its gradient writes d_G under wheres that pick the half, the
// statement shape whose relaid guarded reads once ran off the stack.
var gateOp = testops.Op{Name: "gates", Src: "H[b, j] = sigmoid(G[b, j]) * tanh(G[b, j + 8]) + C[b, j]",
	Shapes: [][]int64{{12, 16}, {12, 8}}, Sizes: map[string]int64{"j": 8}}

// TestRandomSchedulesStayInBuffers lowers many random tiled genomes of
// every test op and of its gradient (whose statements read under wheres)
// with relayouts asked for, and requires each to lower: the lowering's
// last step (loops.checkReach) rejects any nest with an access that may
// leave its buffer, guards ignored. Running kernels cannot show this
// reliably, since a stray load that stays in mapped memory goes unseen;
// the test also requires that relaid guarded reads occurred.
func TestRandomSchedulesStayInBuffers(t *testing.T) {
	per := 150
	if testing.Short() {
		per = 30
	}
	var specs []*ir.Spec
	for _, o := range append(testops.All, gateOp) {
		spec, err := o.Spec(ir.Float32)
		if err != nil {
			t.Fatal(err)
		}
		specs = append(specs, spec)
		if len(spec.InputsDecl()) > 0 {
			g, _, err := o.GradSpec(ir.Float32)
			if err != nil {
				t.Fatal(err)
			}
			specs = append(specs, g)
		}
	}
	clamped := 0
	for si, spec := range specs {
		sp := NewSpace(spec)
		rng := rand.New(rand.NewPCG(uint64(si), 7))
		for range per {
			g := randomGenome(rng, sp.Cardinalities())
			for _, ss := range sp.stmts {
				if !ss.scatter {
					g[ss.off+geneMode] = 1
					g[ss.off+geneRelayout] = 1
				}
			}
			scheds := sp.Decode(g)
			fn, err := pipeline.Lower(spec, func(_ *ir.Spec, i int) loops.Schedule { return scheds[i] })
			if err != nil {
				t.Fatalf("%s: %v", spec.Op.Name, err)
			}
			if d := loops.Dump(fn); strings.Contains(d, "%relayout") && strings.Contains(d, "min(max(") {
				clamped++
			}
		}
	}
	if clamped == 0 {
		t.Error("no schedule relaid a tensor read under a where")
	}
	t.Logf("%d specs, %d schedules each; %d kernels with clamped relaid reads", len(specs), per, clamped)
}
