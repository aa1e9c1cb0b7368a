package sema

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

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

// TestIntervalInfinities checks that no finite end is mistaken for an
// infinity and that infinities of opposite signs never cancel.
func TestIntervalInfinities(t *testing.T) {
	iv := func(lo, hi int64) interval { return interval{lo, hi} }
	contains := func(r interval, vs ...int64) bool {
		for _, v := range vs {
			if v < r.lo || v > r.hi {
				return false
			}
		}
		return true
	}
	const maxI, minI = math.MaxInt64, math.MinInt64
	tests := []struct {
		desc string
		got  interval
		want []int64 // values the result must contain
	}{
		{"MaxInt64 - MaxInt64", point(maxI).sub(point(maxI)), []int64{0}},
		{"MinInt64 - MinInt64", point(minI).sub(point(minI)), []int64{0}},
		{"MaxInt64 + MinInt64", point(maxI).add(point(minI)), []int64{-1}},
		{"MinInt64 + MaxInt64", point(minI).add(point(maxI)), []int64{-1}},
		{"-MinInt64 - 1", point(minI).neg().sub(point(1)), []int64{maxI}},
		{"unbounded minus unbounded", iv(0, posInf).sub(iv(0, posInf)), []int64{minI + 1, 0, maxI}},
		{"abs of MinInt64", point(minI).abs(), []int64{maxI}},
		{"MaxInt64 * -1", point(maxI).scale(-1), []int64{-maxI}},
		{"MinInt64 * -1 stays above MaxInt64", point(minI).scale(-1), []int64{maxI}},
		{"div of MaxInt64", point(maxI).div(2), []int64{maxI / 2}},
		{"min with MaxInt64", point(maxI).sub(point(maxI)).add(iv(0, 100)), []int64{0, 100}},
	}
	for _, tc := range tests {
		if !contains(tc.got, tc.want...) {
			t.Errorf("%s: got %v, want it to contain %v", tc.desc, tc.got, tc.want)
		}
	}
	// The index of the once-accepted repro, bounded without Check.
	s := newScope(map[string]interval{"i": {0, 100}})
	r := s.intervalOf(index(t, "1000000000 - min(9223372036854775807 - 9223372036854775807 + i, 999999900)"))
	if !contains(r, 100, 1000000000) {
		t.Errorf("interval of the repro: got %v, want it to contain 100 and 1000000000", r)
	}
}

// TestLinearOverflow checks that linear forms never wrap around: a term
// whose form would overflow stays an atom, and facts that would overflow
// are dropped.
func TestLinearOverflow(t *testing.T) {
	tests := []struct {
		desc string
		expr string
		want string
	}{
		{"product", "i * 2305843009213693952 * 4", "0 + 1*i * 2305843009213693952 * 4"},
		{"sum", "i + 4611686018427387903 + 4611686018427387903", "0 + 1*i + 4611686018427387903 + 4611686018427387903"},
		{"huge literal", "i + 9223372036854775807", "0 + 1*9223372036854775807 + 1*i"},
		{"negated MinInt64", "-(i - -9223372036854775808)", "0 + 1*-9223372036854775808 + -1*i"},
	}
	for _, tc := range tests {
		if got := linearString(linearize(index(t, tc.expr))); got != tc.want {
			t.Errorf("%s: linearize(%s): got %q, want %q", tc.desc, tc.expr, got, tc.want)
		}
	}
	if fs := facts(index(t, "i*4611686018427387904*2 >= 0"), false); len(fs) != 1 || linearString(fs[0]) != "0 + 1*i * 4611686018427387904 * 2" {
		t.Errorf("facts of a wrapping product: got %d facts, want the product as an atom", len(fs))
	}
	// -2^62 - 2^62 does not fit a linear form: it stays an atom.
	fs := facts(index(t, "i + 4611686018427387904 >= -4611686018427387904 - 4611686018427387904"), false)
	if want := "4611686018427387904 + -1*-4611686018427387904 - 4611686018427387904 + 1*i"; len(fs) != 1 || linearString(fs[0]) != want {
		var got []string
		for _, f := range fs {
			got = append(got, linearString(f))
		}
		t.Errorf("facts of an overflowing comparison: got %q, want %q", got, want)
	}
	// A tightened guard on the most negative coefficient does not negate
	// MinInt64.
	s := newScope(map[string]interval{"i": {0, 3}}).guard(index(t, "-9223372036854775808 * i >= 0"), false)
	if s.dead {
		t.Errorf("guard -9223372036854775808 * i >= 0 with i in [0, 3]: got a dead branch, i = 0 satisfies it")
	}
}

// TestEmptyRangeProvesNothing checks that an access whose index has an
// empty range in a scope not known to be dead is not taken as proven.
func TestEmptyRangeProvesNothing(t *testing.T) {
	op := mustParse(t, "Y[i] = X[i]", parse.Options{})
	p := &prover{op: op, shapes: map[string][]int64{"X": {4}}, info: newExprInfo()}
	sc := newScopeInfo(map[string]interval{"i": {5, 3}}, p.info)
	err := p.access(op.Stmts[0].RHS.(*ir.Access), sc)
	checkErr(t, err, "access X[i] may be out of bounds")
}

// fastest runs f n times and returns the shortest duration.
func fastest(n int, f func()) time.Duration {
	best := time.Duration(math.MaxInt64)
	for range n {
		start := time.Now()
		f()
		best = min(best, time.Since(start))
	}
	return best
}

// TestSpecializeNestedWhereTime checks that bounding nested index wheres
// is not exponential in their depth (depth 20 once took 27 s).
func TestSpecializeNestedWhereTime(t *testing.T) {
	w := "i"
	for range 50 {
		w = fmt.Sprintf("where(%s < 3, i, 0)", w)
	}
	op := mustParse(t, "Y[i] = X[i] + X["+w+"]", parse.Options{})
	var err error
	d := fastest(3, func() { _, err = Specialize(op, ir.Float64, [][]int64{{4}}, nil) })
	if err != nil {
		t.Fatal(err)
	}
	if d > 100*time.Millisecond {
		t.Errorf("Specialize with 50 nested index wheres took %v, want under 100ms", d)
	}
}

// TestSpecializeManyConjunctsTime checks that the proof from guard facts
// does not try every pair of thousands of facts (2000 once took 4 s).
func TestSpecializeManyConjunctsTime(t *testing.T) {
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
		var err error
		d := fastest(3, func() { _, err = Specialize(op, ir.Float64, tc.shapes, map[string]int64{"i": 8}) })
		if tc.err == "" {
			checkErr(t, err)
		} else {
			checkErr(t, err, tc.err)
		}
		if d > 200*time.Millisecond {
			t.Errorf("%s: Specialize with 2000 conjuncts took %v, want under 200ms", tc.desc, d)
		}
	}
}
