package loops

import (
	"strings"
	"testing"

	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/parse"
	"github.com/neoflow/neoflow/core/sema"
)

func indexedSpec(t *testing.T, src string, shapes [][]int64, ints map[string]ir.DType) *ir.Spec {
	t.Helper()
	op, err := parse.Parse(src, parse.Options{Name: "g"})
	if err != nil {
		t.Fatal(err)
	}
	s, err := sema.SpecializeTyped(op, ir.Float32, shapes, nil, ints)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// An embedding bag streams each gathered row whole into a row
// accumulator: bags outermost and parallel, the bag's indices, then the
// row's lanes, and the row 8 indices ahead prefetched (across bags,
// clamped to the last index). Rows longer than gatherAccElems combine
// straight into the output, in float32; in float16 they keep the default.
func TestGatheredRowsStreamIntoTheOutput(t *testing.T) {
	s := indexedSpec(t, "O[b, d] += LUT[I[b, k], d]", [][]int64{{1000, 128}, {512, 20}}, map[string]ir.DType{"I": ir.Int64})
	sched := DefaultSchedule(s, 0)
	if sched.Tiling == nil || strings.Join(sched.Tiling.Loops, " ") != "b k d" || !sched.Tiling.Vector ||
		sched.Tiling.AccAt != 1 || sched.Tiling.Parallel != 1 {
		t.Fatalf("schedule %v, want tiled loops [b k d] parallel 1, vector, accumulator at 1", sched)
	}
	got := Dump(lower(t, s))
	for _, want := range []string{"parallel(1) for b < 512", "for k < 20", "vector for d < 128", "+= LUT[I[b, k], d]",
		"prefetch LUT[I[min(b * 20 + k + 8, 10239) / 20, min(b * 20 + k + 8, 10239) % 20], 0], 512 bytes"} {
		if !strings.Contains(got, want) {
			t.Errorf("dump lacks %q:\n%s", want, got)
		}
	}
	long := indexedSpec(t, "O[b, d] += LUT[I[b, k], d]", [][]int64{{10, 4096}, {8, 3}}, map[string]ir.DType{"I": ir.Int64})
	if tl := DefaultSchedule(long, 0).Tiling; tl == nil || tl.AccAt != 3 {
		t.Errorf("rows of 4096: tiling %v, want no accumulator", tl)
	}
	long.DType = ir.Float16
	if tl := gatherRows(long, long.Stmts[0], DefaultSchedule(long, 0)); tl != nil {
		t.Errorf("float16 rows of 4096: tiling %v, want none", tl)
	}
	// A dense contraction keeps its register accumulators.
	m := parsed(t, "C[i, j] += A[i, k] * B[k, j]", [][]int64{{64, 64}, {64, 64}}, nil)
	if DefaultSchedule(m, 0).Tiling != nil {
		t.Errorf("a matrix product got the gather's tiling")
	}
}
