package autotune

import (
	"context"
	"slices"
	"testing"

	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/internal/testops"
)

func tunedFor(t *testing.T, spec *ir.Spec, seed int64) *Tuner {
	t.Helper()
	tu, err := NewTuner(testBuilder(t), spec, Options{Trials: 8, Seed: seed, Timing: quickTiming, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tu.Close)
	if err := tu.Run(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	return tu
}

// TuneJointly times the matmul's and its gradient's finalists in pairs
// on shared buffers (the gradient reads A and B, which the forward reads)
// and keeps the choices made apart unless a pair beats theirs by MinGain.
func TestTuneJointly(t *testing.T) {
	o, _ := testops.Lookup("matmul")
	fspec, err := o.Spec(ir.Float32)
	if err != nil {
		t.Fatal(err)
	}
	bspec, _, err := o.GradSpec(ir.Float32)
	if err != nil {
		t.Fatal(err)
	}
	fwd, bwd := tunedFor(t, fspec, 1), tunedFor(t, bspec, 2)
	fBefore, bBefore := fwd.Best(), bwd.Best()
	nf, nb := len(fwd.finalists(JointTop)), len(bwd.finalists(JointTop))
	if nf < 2 || nb < 2 {
		t.Fatalf("finalists %d and %d: want the best, the default and more", nf, nb)
	}
	j, err := TuneJointly(context.Background(), fwd, bwd)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(j.Shared, []string{"A", "B"}) {
		t.Errorf("shared %v, want [A B]", j.Shared)
	}
	if j.Pairs != nf*nb || len(j.Seconds) != nf || len(j.Seconds[0]) != nb {
		t.Fatalf("%d pairs timed (%d rows), want %d x %d", j.Pairs, len(j.Seconds), nf, nb)
	}
	lowest := j.Seconds[0][0]
	for _, row := range j.Seconds {
		for _, s := range row {
			if s <= 0 {
				t.Fatalf("pair times %v: want all positive", j.Seconds)
			}
			lowest = min(lowest, s)
		}
	}
	if j.Before != j.Seconds[0][0] {
		t.Errorf("before %v, want the kept pair's %v", j.Before, j.Seconds[0][0])
	}
	same := schedKey(fwd.Best()) == schedKey(fBefore) && schedKey(bwd.Best()) == schedKey(bBefore)
	if j.Changed == same {
		t.Errorf("changed %v, but the choices are the same: %v", j.Changed, same)
	}
	if j.Changed && (j.After != lowest || j.After > j.Before*(1-MinGain)) {
		t.Errorf("changed to a pair of %v (lowest %v, before %v)", j.After, lowest, j.Before)
	}
	if j.Changed && (j.FwdChanged != (schedKey(fwd.Best()) != schedKey(fBefore)) || j.BwdChanged != (schedKey(bwd.Best()) != schedKey(bBefore))) {
		t.Errorf("changed forward %v, backward %v: not what the choices show", j.FwdChanged, j.BwdChanged)
	}
	if !j.Changed && j.After != j.Before {
		t.Errorf("kept, but after %v != before %v", j.After, j.Before)
	}
	if j.String() == "" || fwd.Record() == nil || bwd.Record() == nil {
		t.Errorf("summary %q, records %v %v", j.String(), fwd.Record(), bwd.Record())
	}
}

// A kernel that reads none of the other's tensors is not paired.
func TestTuneJointlyNeedsSharedData(t *testing.T) {
	o, _ := testops.Lookup("activations")
	spec, err := o.Spec(ir.Float32)
	if err != nil {
		t.Fatal(err)
	}
	fwd, bwd := tunedFor(t, tunerSpec(t), 1), tunedFor(t, spec, 2)
	j, err := TuneJointly(context.Background(), fwd, bwd)
	if err != nil || j.Pairs != 0 || j.Shared != nil || j.String() != "" {
		t.Fatalf("joint %+v, %v: want nothing paired", j, err)
	}
}

// The adopted finalist's record carries its own best time alone.
func TestAdoptTakesTheGenomesOwnTime(t *testing.T) {
	tu := tunedFor(t, tunerSpec(t), 3)
	def := tu.space.Default()
	tu.adopt(def)
	if schedKey(tu.Best()) != schedKey(tu.space.Decode(def)) {
		t.Fatal("adopt did not keep the genome")
	}
	want := 0.0
	for _, c := range tu.timed {
		if schedKey(tu.space.Decode(c.g)) == schedKey(tu.space.Decode(def)) && (want == 0 || c.secs < want) {
			want = c.secs
		}
	}
	if tu.Record().BestSeconds != want || want == 0 {
		t.Errorf("best seconds %v, want the default's lowest %v", tu.Record().BestSeconds, want)
	}
}
