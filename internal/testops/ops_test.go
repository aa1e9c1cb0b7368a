package testops

import (
	"slices"
	"testing"

	"github.com/neoflow/neoflow/core/ir"
)

// TestTableIsConsistent: every op parses with the inputs it names, in that
// order, specializes at its test sizes, and each written tensor gets the
// shape the table says.
func TestTableIsConsistent(t *testing.T) {
	if len(All) < 30 {
		t.Fatalf("%d ops", len(All))
	}
	for _, o := range All {
		spec, err := o.Spec(ir.Float64)
		if err != nil {
			t.Errorf("%s: %v", o.Name, err)
			continue
		}
		if !slices.Equal(spec.Op.Inputs, o.Inputs) {
			t.Errorf("%s: inputs %v, the table says %v", o.Name, spec.Op.Inputs, o.Inputs)
		}
		written := 0
		for _, d := range spec.Tensors {
			if d.Role == ir.RoleInput {
				continue
			}
			written++
			if want, ok := o.Want[d.Name]; !ok || !slices.Equal(d.Shape, want) {
				t.Errorf("%s: %s has shape %v, the table says %v", o.Name, d.Name, d.Shape, want)
			}
		}
		if written != len(o.Want) {
			t.Errorf("%s: %d written tensors, the table lists %d", o.Name, written, len(o.Want))
		}
	}
	if _, err := load([]byte(`[{"name": "x", "source": "Y[i] = X[i]", "inputs": ["X"], "test": {"shapes": [[3]]}, "torch": "X", "typo": 1}]`)); err == nil {
		t.Error("an unknown field was accepted")
	}
}
