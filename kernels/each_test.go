package kernels

import (
	"testing"

	"github.com/pkg/errors"

	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/internal/testops"
)

// BuildEach returns the kernels in order, or the first error by index.
func TestBuildEach(t *testing.T) {
	b := testBuilder(t)
	spec, err := (testops.Op{Name: "each", Src: "C[i] = A[i] * 2.0", Inputs: []string{"A"}, Shapes: [][]int64{{8}}}).Spec(ir.Float32)
	if err != nil {
		t.Fatal(err)
	}
	ks, err := BuildEach(3, 0, func(int) (*Kernel, error) { return b.BuildScheduled(t.Context(), spec, nil) })
	if err != nil || len(ks) != 3 || ks[0] == nil || ks[2] == nil {
		t.Fatalf("kernels %v, %v", ks, err)
	}
	for _, k := range ks {
		_ = k.Close()
	}
	_, err = BuildEach(3, 0, func(i int) (*Kernel, error) {
		if i > 0 {
			return nil, errors.Errorf("build %d failed", i)
		}
		return b.BuildScheduled(t.Context(), spec, nil)
	})
	if err == nil || err.Error() != "build 1 failed" {
		t.Fatalf("error %v, want the first failure", err)
	}
}
