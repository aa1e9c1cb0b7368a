package pipeline

import (
	"bytes"
	"strings"
	"testing"

	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/sema"
)

// mergeAxesOnly runs the merge-axes pass alone on spec (as the Kernel plan
// runs it for a C kernel), dumping it when dump selects it.
func mergeAxesOnly(spec *ir.Spec, dump *Dumper) (*ir.Spec, error) {
	u := FromSpec(spec)
	u.MergeAxes, u.Dump = true, dump
	if err := Run(u, "merge-axes"); err != nil {
		return nil, err
	}
	return u.Spec, nil
}

// merge-axes runs alone on a specialized op, dumps its result
// under "// after merge-axes", and leaves a spec with nothing to merge as
// it is; the build passes after it lower the merged axis.
func TestMergeAxesPass(t *testing.T) {
	op := checked(t, "S[c] += X[n, c, h, w]", "X")
	spec, err := sema.Specialize(op, ir.Float32, [][]int64{{2, 3, 4, 5}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	d, err := NewDumper("merge-axes", "", &out)
	if err != nil {
		t.Fatal(err)
	}
	m, err := mergeAxesOnly(spec, d)
	if err != nil {
		t.Fatal(err)
	}
	names, bodies := dumped(out.String())
	if len(names) != 1 || names[0] != "merge-axes" || !strings.Contains(bodies["merge-axes"], "X[n, c, h_w / 5, h_w % 5]") {
		t.Fatalf("dump:\n%s", out.String())
	}
	u := FromSpec(m)
	if err := Run(u, Build); err != nil {
		t.Fatal(err)
	}
	if u.Done("merge-axes") {
		t.Error("the build ran merge-axes again")
	}

	plain := checked(t, "Y[i] += A[i, k]", "A")
	ps, err := sema.Specialize(plain, ir.Float32, [][]int64{{3, 4}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := mergeAxesOnly(ps, nil); err != nil || got != ps {
		t.Errorf("a spec with one reduction axis changed (%v)", err)
	}
}
