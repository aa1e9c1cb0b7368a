package bounds

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// symCase is an access x of a dimension of size size, over variables of
// constant extents ext or symbolic extents sym, under an optional guard.
type symCase struct {
	x, size, guard string
	ext            map[string]int64
	sym            map[string]string
	least          map[string]int64
}

func (c symCase) prove(t *testing.T) (bool, bool) {
	t.Helper()
	s := ForSymbolicExtents(c.ext, c.sym, c.least)
	if c.guard != "" {
		s = s.Guard(index(t, c.guard), false)
	}
	return s.WithinSize(index(t, c.x), index(t, c.size))
}

// TestWithinSize pins down what the prover proves for every value of the
// size variables, and what it must not.
func TestWithinSize(t *testing.T) {
	s0 := map[string]int64{"s": 1}
	tests := []struct {
		desc      string
		c         symCase
		low, high bool
	}{
		{"i < s in s", symCase{x: "i", size: "s", sym: map[string]string{"i": "s"}, least: s0}, true, true},
		{"i + 1 in s", symCase{x: "i + 1", size: "s", sym: map[string]string{"i": "s"}, least: s0}, true, false},
		{"i + 1 in s + 1", symCase{x: "i + 1", size: "s + 1", sym: map[string]string{"i": "s"}, least: s0}, true, true},
		{"padded window", symCase{x: "i + r", size: "s + 2", ext: map[string]int64{"r": 3}, sym: map[string]string{"i": "s"}, least: s0}, true, true},
		{"window without padding", symCase{x: "i + r", size: "s", ext: map[string]int64{"r": 3}, sym: map[string]string{"i": "s"}, least: s0}, true, false},
		{"zero padding guard", symCase{x: "i + r - 1", size: "s", guard: "i + r - 1 >= 0 && i + r - 1 < s",
			ext: map[string]int64{"r": 3}, sym: map[string]string{"i": "s"}, least: s0}, true, true},
		{"stride 2 with its tap", symCase{x: "i * 2 + j", size: "s * 2", ext: map[string]int64{"j": 2}, sym: map[string]string{"i": "s"}, least: s0}, true, true},
		{"reversed", symCase{x: "s - 1 - i", size: "s", sym: map[string]string{"i": "s"}, least: s0}, true, true},
		{"two sizes", symCase{x: "i + j", size: "s + t - 1", sym: map[string]string{"i": "s", "j": "t"},
			least: map[string]int64{"s": 1, "t": 1}}, true, true},
		{"a constant dimension needs a least size", symCase{x: "i", size: "8", sym: map[string]string{"i": "s"}, least: s0}, true, false},
		{"within a constant dimension under a guard", symCase{x: "i", size: "8", guard: "i < 8", sym: map[string]string{"i": "s"}, least: s0}, true, true},
		{"a constant extent in a symbolic dimension", symCase{x: "k", size: "s", ext: map[string]int64{"k": 4},
			least: map[string]int64{"s": 4}}, true, true},
		{"the least value matters", symCase{x: "k", size: "s", ext: map[string]int64{"k": 4},
			least: map[string]int64{"s": 3}}, true, false},
		{"negative", symCase{x: "i - 1", size: "s", sym: map[string]string{"i": "s"}, least: s0}, false, true},
	}
	for _, tc := range tests {
		low, high := tc.c.prove(t)
		if low != tc.low || high != tc.high {
			t.Errorf("%s: proved low %v high %v, want %v %v", tc.desc, low, high, tc.low, tc.high)
		}
	}
}

// TestWithinSizeIsSound draws accesses over symbolic and constant
// extents, with and without guards, and checks every one the prover
// accepts by evaluating it at every point for every size from the least
// value to three past it. It also requires the prover to accept a good
// share of those that are in bounds, so that the test cannot pass by
// proving nothing.
func TestWithinSizeIsSound(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 29))
	proved, inBounds := 0, 0
	for n := 0; n < 3000; n++ {
		c := randomSymCase(r)
		low, high := c.prove(t)
		ok := c.exhaustive(t)
		if ok {
			inBounds++
		}
		if low && high {
			proved++
			if !ok {
				t.Fatalf("proved in bounds but is not: %s in [0, %s) under %q, ext %v sym %v least %v",
					c.x, c.size, c.guard, c.ext, c.sym, c.least)
			}
		}
	}
	t.Logf("proved %d of the %d accesses in bounds (of 3000)", proved, inBounds)
	if proved < inBounds/2 || proved < 300 {
		t.Errorf("proved %d of the %d accesses in bounds (of 3000)", proved, inBounds)
	}
}

func randomSymCase(r *rand.Rand) symCase {
	c := symCase{ext: map[string]int64{}, sym: map[string]string{}, least: map[string]int64{}}
	for _, s := range []string{"s", "t"} {
		c.least[s] = []int64{1, 2, 4}[r.IntN(3)]
	}
	vars := []string{"i", "j", "k"}
	var terms []string
	for _, v := range vars {
		if r.IntN(2) == 0 {
			c.sym[v] = []string{"s", "t"}[r.IntN(2)]
		} else {
			c.ext[v] = int64(1 + r.IntN(4))
		}
		if a := r.IntN(4) - 1; a != 0 { // -1, 1, 2
			terms = append(terms, fmt.Sprintf("%d * %s", a, v))
		}
	}
	terms = append(terms, fmt.Sprint(r.IntN(5)-2))
	c.x = strings.Join(terms, " + ")
	// min, max and where over the affine index and a second one (WithinSize proves them by their
	// arguments)
	other := fmt.Sprintf("%s + %d", vars[r.IntN(3)], r.IntN(5)-2)
	switch r.IntN(6) {
	case 0:
		c.x = fmt.Sprintf("min(%s, %s)", c.x, other)
	case 1:
		c.x = fmt.Sprintf("max(%s, %s)", c.x, other)
	case 2:
		c.x = fmt.Sprintf("where(%s > 0, %s, %s)", vars[r.IntN(3)], c.x, other)
	}
	c.size = []string{"s", "t", "s + 2", "s * 2", "s + t", "s + t - 1", "4", "s * 2 + 1"}[r.IntN(8)]
	switch r.IntN(3) {
	case 0:
		c.guard = fmt.Sprintf("%s >= 0 && %s < %s", c.x, c.x, c.size)
	case 1:
		c.guard = fmt.Sprintf("%s >= 0", c.x)
	}
	return c
}

// exhaustive reports whether c's access stays in bounds wherever its guard
// holds, for every size from its least value to three past it.
func (c symCase) exhaustive(t *testing.T) bool {
	ok, _ := c.exhaustiveWhere(t, nil)
	return ok
}

// exhaustiveWhere is exhaustive over the sizes that meet every launch
// guard of guards; it also counts those sizes.
func (c symCase) exhaustiveWhere(t *testing.T, guards []Guard) (bool, int) {
	x, size := index(t, c.x), index(t, c.size)
	var guard = index(t, "1 > 0")
	if c.guard != "" {
		guard = index(t, c.guard)
	}
	met := 0
	for ds := int64(0); ds < 4; ds++ {
		for dt := int64(0); dt < 4; dt++ {
			at := map[string]int64{"s": c.least["s"] + ds, "t": c.least["t"] + dt}
			if !slices.ContainsFunc(guards, func(g Guard) bool { return !g.Holds(at) }) {
				met++
			} else {
				continue
			}
			ext := func(v string) int64 {
				if s, ok := c.sym[v]; ok {
					return at[s]
				}
				return c.ext[v]
			}
			for i := int64(0); i < ext("i"); i++ {
				for j := int64(0); j < ext("j"); j++ {
					for k := int64(0); k < ext("k"); k++ {
						at["i"], at["j"], at["k"] = i, j, k
						if evalIndex(guard, at) == 0 {
							continue
						}
						if v := evalIndex(x, at); v < 0 || v >= evalIndex(size, at) {
							return false, met
						}
					}
				}
			}
		}
	}
	return true, met
}

// TestGuardsWithinIsSound draws the accesses of TestWithinSizeIsSound and
// gives each one the prover does not accept its launch guards: wherever
// the guards hold, for every size from the least value to three past it,
// the access must be in bounds at every point. The guards must also hold
// at some sizes for a good share of the accesses guarded, so that the test
// cannot pass with guards that nothing meets.
func TestGuardsWithinIsSound(t *testing.T) {
	r := rand.New(rand.NewPCG(12, 30))
	guarded, useful := 0, 0
	for n := 0; n < 3000; n++ {
		c := randomSymCase(r)
		sc := ForSymbolicExtents(c.ext, c.sym, c.least)
		if c.guard != "" {
			sc = sc.Guard(index(t, c.guard), false)
		}
		low, high := sc.WithinSize(index(t, c.x), index(t, c.size))
		if low && high {
			continue
		}
		gs, ok := sc.GuardsWithin(index(t, c.x), index(t, c.size), !low, !high)
		if !ok {
			continue
		}
		guarded++
		in, met := c.exhaustiveWhere(t, gs)
		if !in {
			t.Fatalf("out of bounds where its guards %v hold: %s in [0, %s) under %q, ext %v sym %v least %v",
				gs, c.x, c.size, c.guard, c.ext, c.sym, c.least)
		}
		if met > 0 {
			useful++
		}
	}
	t.Logf("%d accesses guarded, %d of them in bounds at some of the sizes tried", guarded, useful)
	if guarded < 300 || useful < guarded/3 {
		t.Errorf("%d accesses guarded, %d of them in bounds at some of the sizes tried", guarded, useful)
	}
}

// TestGuardsWithin pins down the guards of a few accesses.
func TestGuardsWithin(t *testing.T) {
	s0 := map[string]int64{"s": 1, "t": 1}
	for _, tc := range []struct {
		c    symCase
		want string // the guards, "" when none is derived
	}{
		{symCase{x: "i + 2", size: "t", sym: map[string]string{"i": "s"}, least: s0}, "[-s + t - 2 >= 0]"},
		{symCase{x: "i", size: "8", sym: map[string]string{"i": "s"}, least: s0}, "[-s + 8 >= 0]"},
		{symCase{x: "i - 1", size: "s", sym: map[string]string{"i": "s"}, least: s0}, ""}, // -1 at i = 0, whatever s
		{symCase{x: "i / 2", size: "t", sym: map[string]string{"i": "s"}, least: s0}, ""}, // not linear
		{symCase{x: "2 * i + k", size: "t", ext: map[string]int64{"k": 3}, sym: map[string]string{"i": "s"}, least: s0}, "[-2*s + t - 1 >= 0]"},
	} {
		sc := ForSymbolicExtents(tc.c.ext, tc.c.sym, tc.c.least)
		low, high := sc.WithinSize(index(t, tc.c.x), index(t, tc.c.size))
		gs, ok := sc.GuardsWithin(index(t, tc.c.x), index(t, tc.c.size), !low, !high)
		got := ""
		if ok {
			got = fmt.Sprint(gs)
		}
		if got != tc.want {
			t.Errorf("%s in [0, %s): guards %q, want %q", tc.c.x, tc.c.size, got, tc.want)
		}
	}
}
