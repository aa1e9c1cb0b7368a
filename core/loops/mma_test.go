package loops

import (
	"testing"

	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/internal/testops"
)

func mmaStmt(t *testing.T, src string, shapes [][]int64, dt ir.DType) (*ir.Spec, *ir.BoundStmt) {
	t.Helper()
	spec, err := testops.Op{Name: "mma", Src: src, Shapes: shapes}.Spec(dt)
	if err != nil {
		t.Fatal(err)
	}
	return spec, spec.Stmts[0]
}

// MatchMMA sorts the axes into groups, puts the output's innermost axis in
// N (swapping the operands where needed), and orders each group so that
// the operand's contiguous axis is last.
func TestMatchMMAGroups(t *testing.T) {
	spec, st := mmaStmt(t, "Y[b,t,o] += W[o,i] * X[b,t,i]", [][]int64{{40, 48}, {2, 20, 48}}, ir.Float16)
	m, err := MatchMMA(spec, st)
	if err != nil {
		t.Fatal(err)
	}
	if m.A != "X" || m.B != "W" || len(m.M) != 2 || m.M[1].Name != "t" || m.M[1].SA != 48 || len(m.N) != 1 || m.N[0].Name != "o" || m.N[0].SB != 48 || m.K[0].SA != 1 || m.K[0].SB != 1 {
		t.Fatalf("groups %+v", m)
	}
	if len(m.Batch) != 0 || m.M[0].SC != 20*40 || m.N[0].SC != 1 {
		t.Fatalf("batch %v, output strides %v %v", m.Batch, m.M, m.N)
	}
}

// The default tile fits the extents, shrinks until the tiles fill a GPU,
// and a full 128x128 tile has 4 warps.
func TestDefaultMMATiling(t *testing.T) {
	for _, c := range []struct {
		n    int64
		want MMATiling
	}{
		{4096, MMATiling{BM: 128, BN: 128, Warps: 4}},
		{1024, MMATiling{BM: 64, BN: 128}},
		{100, MMATiling{BM: 32, BN: 32}},
	} {
		spec, st := mmaStmt(t, "C[i,j] += A[i,k] * B[k,j]", [][]int64{{c.n, 64}, {64, c.n}}, ir.BFloat16)
		m, err := MatchMMA(spec, st)
		if err != nil {
			t.Fatal(err)
		}
		if got := DefaultMMATiling(m); got != c.want {
			t.Errorf("n = %d: tile %v, want %v", c.n, got, c.want)
		}
		if s := GPUSchedule(spec, 0); s.MMA == nil || *s.MMA != c.want {
			t.Errorf("n = %d: GPU schedule %s", c.n, s)
		}
	}
}
