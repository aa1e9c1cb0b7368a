package loops

import (
	"testing"

	"github.com/neoflow/neoflow/core/ir"
)

// withMinParallelWork runs f with MinParallelWork at w (the tests' default
// is 0, where every statement is parallel on its own).
func withMinParallelWork(w int64, f func()) {
	saved := MinParallelWork
	defer func() { MinParallelWork = saved }()
	MinParallelWork = w
	f()
}

func TestParallelRowsRunsASmallFusedSoftmaxInParallel(t *testing.T) {
	// 64 rows of 100: 6,400 points a statement, 19,200 in the fused nest.
	for _, tc := range []struct {
		min  int64
		want bool
	}{{10_000, true}, {30_000, false}} {
		withMinParallelWork(tc.min, func() {
			fn, err := LowerWith(softmaxSpec(true), DefaultSchedule)
			if err != nil {
				t.Fatal(err)
			}
			if len(fn.Nests) != 1 || fn.Nests[0].Body[0].(*Loop).Parallel {
				t.Fatalf("min %d: want one serial nest before the pass:\n%s", tc.min, Dump(fn))
			}
			fn = ParallelRows(fn)
			outer := fn.Nests[0].Body[0].(*Loop)
			if outer.Parallel != tc.want || outer.Parallel && outer.Collapse != 1 || anyParallel(outer.Body) {
				t.Errorf("min %d: outer loop parallel %v (collapse %d), want %v:\n%s", tc.min, outer.Parallel, outer.Collapse, tc.want, Dump(fn))
			}
		})
	}
}

func TestParallelRowsKeepsIterationsThatShareATensorSerial(t *testing.T) {
	// Every iteration of a adds into Y[b]: in parallel they would race.
	s := spec("cols", ir.Float32,
		[]*ir.TensorDecl{tensor("X", ir.RoleInput, 64, 100), tensor("Y", ir.RoleOutput, 100), tensor("Z", ir.RoleOutput, 64)},
		stmt("Y", ir.Sum, at("X", ix("a"), ix("b")), []ir.Var{v("b", 100)}, v("a", 64)),
		stmt("Z", ir.Sum, at("X", ix("a"), ix("b")), []ir.Var{v("a", 64)}, v("b", 100)),
	)
	inner := &Loop{Var: "b", Extent: 100, Body: []Node{
		&Store{Dst: &ir.Access{Tensor: "Y", Indices: []ir.Expr{ix("b")}}, Op: ir.Sum, Value: at("X", ix("a"), ix("b"))},
		&Store{Dst: &ir.Access{Tensor: "Z", Indices: []ir.Expr{ix("a")}}, Op: ir.Sum, Value: at("X", ix("a"), ix("b"))},
	}}
	fn := &Func{Spec: s, Nests: []*Nest{{Stmt: s.Stmts[0], Members: []int{0, 1}, Body: []Node{&Loop{Var: "a", Extent: 64, Body: []Node{inner}}}}}}
	withMinParallelWork(1, func() {
		if ParallelRows(fn).Nests[0].Body[0].(*Loop).Parallel {
			t.Errorf("a loop whose iterations all add into Y[b] made parallel:\n%s", Dump(fn))
		}
	})
	// Without Y, each iteration writes its own Z[a]: parallel.
	inner.Body = inner.Body[1:]
	withMinParallelWork(1, func() {
		if !ParallelRows(fn).Nests[0].Body[0].(*Loop).Parallel {
			t.Errorf("a loop whose iterations write Z[a] only stayed serial:\n%s", Dump(fn))
		}
	})
}

func TestParallelRowsLeavesSymbolicKernelsAndSingleStatements(t *testing.T) {
	withMinParallelWork(10_000, func() {
		fn, err := LowerWith(softmaxSpec(true), DefaultSchedule)
		if err != nil {
			t.Fatal(err)
		}
		fn.Sizes = []string{SizePrefix + "n"}
		if ParallelRows(fn).Nests[0].Body[0].(*Loop).Parallel {
			t.Error("a kernel with symbolic extents changed (its launch decides)")
		}
		fn.Sizes = nil
		fn.Nests[0].Members = nil
		if ParallelRows(fn).Nests[0].Body[0].(*Loop).Parallel {
			t.Error("a nest of one statement made parallel (its schedule decided)")
		}
	})
}
