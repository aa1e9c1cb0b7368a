package sema

import (
	"fmt"
	"strings"
	"testing"

	"github.com/neoflow/neoflow/core/bounds"
	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/parse"
)

// soundnessCases are ops that once passed Specialize and then read out of
// bounds (or wrapped around in int64 index arithmetic) at run time.
var soundnessCases = []specCase{
	// Reads inside an index expression are proven too.
	{
		desc:   "read inside an index where",
		src:    "Y[i] = X[i] + X[where(A[i*3+100000000] > 0.0, i, 0)]",
		shapes: [][]int64{{4}, {4}},
		err:    []string{"1:23:", "access A[i * 3 + 100000000] may be out of bounds: dimension 0 index i * 3 + 100000000 ranges over [100000000, 100000009] but A has size 4 there"},
	},
	{
		desc:   "read inside an index",
		src:    "Y[i] = X[i] + X[min(i, 0) * 0 + where(X[i + 1] > 0.0, 0, 1)]",
		shapes: [][]int64{{4}},
		err:    []string{"access X[i + 1] may be out of bounds"},
	},
	{
		desc:    "read inside an index in bounds",
		src:     "Y[i] = X[where(A[i] > 0.0, i, 0)]",
		shapes:  [][]int64{{4}, {4}},
		tensors: []string{"X input [4]", "A input [4]", "Y output [4]"},
		axes:    []string{"i=4 |"},
	},

	// A literal MaxInt64 once stood for +infinity, and +inf + -inf gave
	// the first operand: the index below ranged over [100, 100].
	{
		desc:   "literal MaxInt64 is no infinity",
		src:    "Y[i] = X[i] + X[1000000000 - min(9223372036854775807 - 9223372036854775807 + i, 999999900)]",
		shapes: [][]int64{{101}},
		err:    []string{"1:34:", "index arithmetic may overflow int64: integer literal 9223372036854775807 is too large for index arithmetic (its magnitude must be below 2^62)"},
	},

	// Linear forms once wrapped around where intervals saturated.
	{
		desc:   "wrapping constant",
		src:    "Y[i] = X[i] + X[i + 9223372036854775807 + 1 + 1000000000]",
		shapes: [][]int64{{4}},
		err:    []string{"1:21:", "index arithmetic may overflow int64: integer literal 9223372036854775807"},
	},
	{
		desc:   "wrapping guard",
		src:    "Y[i] = where(i + 4611686018427387904 >= -4611686018427387904 - 4611686018427387904, X[i+100], 0.0)",
		shapes: [][]int64{{4}},
		sizes:  map[string]int64{"i": 4},
		err:    []string{"1:18:", "integer literal 4611686018427387904 is too large"},
	},
	{
		desc:   "wrapping guard product",
		src:    "Y[i] = where(i*4611686018427387904*2 >= 0, X[i], 0.0)",
		shapes: [][]int64{{1}},
		sizes:  map[string]int64{"i": 4},
		err:    []string{"1:16:", "integer literal 4611686018427387904 is too large"},
	},
	{
		desc:   "large integer constant",
		src:    "Y[i] = X[i + N - N]",
		opts:   parse.Options{Consts: map[string]parse.ConstValue{"N": {Int: -1 << 62}}},
		shapes: [][]int64{{4}},
		err:    []string{"1:14:", "index arithmetic may overflow int64: integer constant N = -4611686018427387904 is too large"},
	},
	{
		desc:   "product beyond 2^62",
		src:    "Y[i] = where(i*2305843009213693952*4 >= 0, X[i], 0.0)",
		shapes: [][]int64{{1}},
		sizes:  map[string]int64{"i": 4},
		err: []string{"1:14:", "index arithmetic may overflow int64: i * 2305843009213693952 ranges over [0, 6917529027641081856], " +
			"beyond the limit of ±2^62 for index values"},
	},
	{
		desc:   "sum beyond 2^62 in a value",
		src:    "Y[i] = X[i] * (i + 4611686018427387903)",
		shapes: [][]int64{{4}},
		err:    []string{"1:16:", "index arithmetic may overflow int64: i + 4611686018427387903 ranges over [4611686018427387903, 4611686018427387906]"},
	},
	{
		desc:   "overflow in a guarded branch",
		src:    "Y[i] = where(i < 1000, X[i + i*3074457345618258602], 0.0) + X[i]",
		shapes: [][]int64{{4}},
		err:    []string{"index arithmetic may overflow int64: i * 3074457345618258602"},
	},
	{
		desc:    "large but safe literal",
		src:     "Y[i] = X[i + 4611686018427387000 - 4611686018427387000]",
		shapes:  [][]int64{{4}},
		tensors: []string{"X input [4]", "Y output [4]"},
		axes:    []string{"i=4 |"},
	},
	{
		desc:    "large literal as a value",
		src:     "Y[i] = X[i] * 9223372036854775807",
		shapes:  [][]int64{{4}},
		tensors: []string{"X input [4]", "Y output [4]"},
		axes:    []string{"i=4 |"},
	},
	{
		desc:    "overflow only where a guard rules it out",
		src:     "Y[i] = where(i < 1, X[i*4611686018427387000], 0.0) + X[i]",
		shapes:  [][]int64{{4}},
		tensors: []string{"X input [4]", "Y output [4]"},
		axes:    []string{"i=4 |"},
	},

	// Element offsets must fit in int64.
	{
		desc:   "too many elements",
		src:    "Y[i, j] = X[min(i, 0)] + X[min(j, 0)]",
		shapes: [][]int64{{4}},
		sizes:  map[string]int64{"i": 1 << 31, "j": 1 << 31},
		err:    []string{"1:1:", "tensor Y has shape [2147483648, 2147483648]: 2^62 elements or more, too many to address"},
	},
	{
		desc:   "input with too many elements",
		src:    "Y[i] = X[i, 0, 0]",
		shapes: [][]int64{{1 << 21, 1 << 21, 1 << 20}},
		err:    []string{"tensor X has shape [2097152, 2097152, 1048576]: 2^62 elements or more"},
	},
	{
		desc:    "just below 2^62 elements",
		src:     "Y[i, j] = X[min(i, 0)] + X[min(j, 0)]",
		shapes:  [][]int64{{4}},
		sizes:   map[string]int64{"i": 1<<31 - 1, "j": 1 << 31},
		tensors: []string{"X input [4]", "Y output [2147483647 2147483648]"},
		axes:    []string{"i=2147483647 j=2147483648 |"},
	},
}

func TestSpecializeSoundness(t *testing.T) {
	for _, tc := range soundnessCases {
		t.Run(tc.desc, func(t *testing.T) {
			op := mustParse(t, tc.src, tc.opts)
			spec, err := Specialize(op, ir.Float64, tc.shapes, tc.sizes)
			checkErr(t, err, tc.err...)
			if err != nil {
				return
			}
			tensors, axes := specString(spec)
			if got, want := strings.Join(tensors, "; "), strings.Join(tc.tensors, "; "); got != want {
				t.Errorf("tensors:\ngot  %s\nwant %s", got, want)
			}
			if got, want := strings.Join(axes, "; "), strings.Join(tc.axes, "; "); got != want {
				t.Errorf("axes:\ngot  %s\nwant %s", got, want)
			}
		})
	}
}

// TestEmptyRangeProvesNothing checks that an access whose index has an
// empty range in a scope not known to be dead is not taken as proven.
func TestEmptyRangeProvesNothing(t *testing.T) {
	op := mustParse(t, "Y[i] = X[i]", parse.Options{})
	p := &prover{op: op, shapes: map[string][]int64{"X": {4}}, info: bounds.NewInfo()}
	sc := bounds.NewScopeInfo(map[string]bounds.Interval{"i": {Lo: 5, Hi: 3}}, p.info)
	err := p.access(op.Stmts[0].RHS.(*ir.Access), sc)
	checkErr(t, err, "access X[i] may be out of bounds")
}

// TestSpecializeNestedWhere checks that 50 nested index wheres are bounded
// (depth 20 once took 27 s: exponential work in the depth would not end).
func TestSpecializeNestedWhere(t *testing.T) {
	w := "i"
	for range 50 {
		w = fmt.Sprintf("where(%s < 3, i, 0)", w)
	}
	op := mustParse(t, "Y[i] = X[i] + X["+w+"]", parse.Options{})
	if _, err := Specialize(op, ir.Float64, [][]int64{{4}}, nil); err != nil {
		t.Fatal(err)
	}
}

// TestSpecializeManyConjuncts checks the proof from 2,000 guard facts (it
// must not try every pair: that once took 4 s).
func TestSpecializeManyConjuncts(t *testing.T) {
	var two, three []string
	for k := range 2000 {
		two = append(two, fmt.Sprintf("i + r - 1 >= %d", k%2-1))
		three = append(three, fmt.Sprintf("i + r - %d >= j", k%7))
	}
	tests := []struct {
		desc, src string
		shapes    [][]int64
		err       string
	}{
		{"two atoms", "Y[i] += where(" + strings.Join(two, " && ") + " && i + r - 1 < 8, X[i + r - 1], 0.0) * W[r]", [][]int64{{8}, {3}}, ""},
		{"three atoms", "Y[i, j] += where(" + strings.Join(three, " && ") + ", X[i + r - 1], 0.0) * W[r] + V[j]", [][]int64{{8}, {3}, {2}},
			"access X[i + r - 1] may be out of bounds"},
	}
	for _, tc := range tests {
		op := mustParse(t, tc.src, parse.Options{})
		_, err := Specialize(op, ir.Float64, tc.shapes, map[string]int64{"i": 8})
		if tc.err == "" {
			checkErr(t, err)
		} else {
			checkErr(t, err, tc.err)
		}
	}
}
