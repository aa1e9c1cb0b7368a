package fuse

import (
	"slices"
	"strings"
	"testing"

	"github.com/neoflow/neoflow/core/autodiff"
	"github.com/neoflow/neoflow/core/ir"
)

func none(string) string { return "" }

// savedOf is the saving gradient's Saved for every input of spec.
func savedOf(t *testing.T, spec *ir.Spec) []string {
	t.Helper()
	wrt := make([]bool, len(spec.Op.Inputs))
	for i := range wrt {
		wrt[i] = true
	}
	g, err := autodiff.GradSaving(spec, wrt)
	if err != nil {
		t.Fatal(err)
	}
	return g.Saved
}

// TestRecomputeLLTM: at bench size, in float64, at the default rates the
// LLTM gradient recomputes E (an elementwise function of G, which it
// reads saved anyway) and keeps G; with arithmetic a million times dearer
// it keeps E saved too; a
// temporary the gradient compares exactly stays saved whatever the rates.
func TestRecomputeLLTM(t *testing.T) {
	const h = 256
	spec := specOf(t, lltmCell, map[string]int64{"N": h}, []string{"W", "H", "X", "Bias", "C"},
		[][]int64{{3 * h, 2 * h}, {16, h}, {16, h}, {3 * h}, {16, h}}, map[string]int64{"u": h, "j": h})
	saved := savedOf(t, spec)
	if !slices.Contains(saved, "E") || !slices.Contains(saved, "G") {
		t.Fatalf("the saving gradient reads %v, want E and G among them", saved)
	}
	rec, notes := Recompute(spec, saved, none, DefaultMachine)
	if !rec["E"] || rec["G"] || len(rec) != 1 {
		t.Fatalf("recomputed %v, want E alone\n%s", rec, strings.Join(notes, "\n"))
	}
	if !slices.ContainsFunc(notes, func(n string) bool {
		return strings.HasPrefix(n, "recomputed: the gradient computes E again from G: R = +")
	}) {
		t.Fatalf("notes %q", notes)
	}
	slow := DefaultMachine
	slow.OpsPerSec /= 1e6
	if rec, notes := Recompute(spec, saved, none, slow); len(rec) != 0 || !slices.ContainsFunc(notes, func(n string) bool { return strings.HasPrefix(n, "saved: E stays saved") }) {
		t.Fatalf("slow arithmetic: recomputed %v, notes %q", rec, notes)
	}
	exact := func(n string) string {
		if n == "E" {
			return "the gradient compares it exactly"
		}
		return ""
	}
	if rec, notes := Recompute(spec, saved, exact, DefaultMachine); len(rec) != 0 || !slices.Contains(notes, "saved: E stays saved for the gradient: the gradient compares it exactly") {
		t.Fatalf("an exactly compared E: recomputed %v, notes %q", rec, notes)
	}
}

// TestRecomputeChargesUnsavedReads: recomputing T from S would make the
// gradient read S, a temporary it does not read otherwise and 64 times
// T's size (S must then be stored and loaded), so T stays saved; the same
// T read straight from the input, a column (one load), is recomputed.
func TestRecomputeChargesUnsavedReads(t *testing.T) {
	for _, c := range []struct {
		src  string
		cols int64
		rec  bool
	}{
		{"S[i,j] = X[i,j] * X[i,j]\nT[i] = S[i,0] * 3.0\nY[i] = T[i] * T[i]", 64, false},
		{"T[i] = X[i,0] * 3.0\nY[i] = T[i] * T[i]", 1, true},
	} {
		spec := specOf(t, c.src, nil, []string{"X"}, [][]int64{{64, c.cols}}, nil)
		saved := savedOf(t, spec)
		if !slices.Equal(saved, []string{"T"}) {
			t.Fatalf("saved %v, want [T]", saved)
		}
		rec, notes := Recompute(spec, saved, none, DefaultMachine)
		if rec["T"] != c.rec {
			t.Fatalf("%s: recomputed %v\n%s", c.src, rec, strings.Join(notes, "\n"))
		}
	}
}
