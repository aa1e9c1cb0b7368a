package loops

import (
	"testing"

	"github.com/neoflow/neoflow/core/ir"
)

// TestIndexSpanKeepsSemaFacts: index forms sema proves in bounds stay
// provable once the index variable is split for vectors or tiles
// (i = i.o * 16 + i.l): a difference of equal terms is 0, a where's
// condition bounds its branches, and extents up to sema's 2^62 limit are
// bounded exactly.
func TestIndexSpanKeepsSemaFacts(t *testing.T) {
	split := bin(ir.Add, bin(ir.Mul, ix("i.o"), lit(16)), ix("i.l"))
	ext := map[string]int64{"i.o": 3, "i.l": 16} // i in [0, 48)
	for _, c := range []struct {
		name   string
		e      ir.Expr
		lo, hi int64
	}{
		{"i - i + 0", bin(ir.Add, bin(ir.Sub, split, split), lit(0)), 0, 0},
		{"where(i > 0, i - 1, 0)", where(bin(ir.Gt, split, lit(0)), bin(ir.Sub, split, lit(1)), lit(0)), 0, 46},
		{"where(i > 1, i - 1, 0)", where(bin(ir.Gt, split, lit(1)), bin(ir.Sub, split, lit(1)), lit(0)), 0, 46},
		{"where(i < 1, 0, i - 1)", where(bin(ir.Lt, split, lit(1)), lit(0), bin(ir.Sub, split, lit(1))), 0, 46},
		{"where(!(i >= 2), 0, i - 2)", where(&ir.Unary{Op: ir.Not, X: bin(ir.Ge, split, lit(2))}, lit(0), bin(ir.Sub, split, lit(2))), 0, 45},
		{"where(i >= 1 && i < 40, i - 1, 0)", where(bin(ir.And, bin(ir.Ge, split, lit(1)), bin(ir.Lt, split, lit(40))), bin(ir.Sub, split, lit(1)), lit(0)), 0, 38},
		{"where(i == 0, 5, i - 1)", where(bin(ir.Eq, split, lit(0)), lit(5), bin(ir.Sub, split, lit(1))), 0, 46},
		// The gradient's form of where(i > 0, i - 1, 0) after lane splitting:
		// from -l + 1 > 0 follows l <= 0, so -l is at least 0 (issue 30 fuzzing).
		{"where(-l + 1 > 0, -l, 0)", where(bin(ir.Gt, bin(ir.Add, neg(ix("i.l")), lit(1)), lit(0)), neg(ix("i.l")), lit(0)), 0, 0},
		{"where(2 - l > 0, 1 - l, 0)", where(bin(ir.Gt, bin(ir.Sub, lit(2), ix("i.l")), lit(0)), bin(ir.Sub, lit(1), ix("i.l")), lit(0)), 0, 1},
		{"where(l * 2 < 7, l, 0)", where(bin(ir.Lt, bin(ir.Mul, ix("i.l"), lit(2)), lit(7)), ix("i.l"), lit(0)), 0, 3},
		{"abs(i - 3)", &ir.Call{Fn: ir.FuncAbs, Args: []ir.Expr{bin(ir.Sub, split, lit(3))}}, 0, 44},
	} {
		s, ok := indexSpan(c.e, ext)
		if !ok || s.Lo != c.lo || s.Hi != c.hi {
			t.Errorf("%s: got [%d, %d] (ok %v), want [%d, %d]", c.name, s.Lo, s.Hi, ok, c.lo, c.hi)
		}
	}
	// A condition that never holds leaves only the other branch.
	never := where(bin(ir.Lt, ix("i.l"), lit(0)), lit(-5), ix("i.l"))
	if s, ok := indexSpan(never, ext); !ok || s.Lo != 0 || s.Hi != 15 {
		t.Errorf("never-taken branch: got [%d, %d] (ok %v), want [0, 15]", s.Lo, s.Hi, ok)
	}
	// A where it cannot reason about stays as wide as both branches.
	opaque := where(bin(ir.Gt, bin(ir.Mod, split, lit(2)), ix("i.l")), bin(ir.Sub, split, lit(1)), lit(0))
	if s, ok := indexSpan(opaque, ext); !ok || s.Lo != -1 {
		t.Errorf("opaque condition: got [%d, %d] (ok %v), want lo -1", s.Lo, s.Hi, ok)
	}
	// Extents past 2^40 (sizes={"i": 2**45}) are bounded exactly.
	big := map[string]int64{"i.o": 1 << 41, "i.l": 16}
	if s, ok := indexSpan(split, big); !ok || s.Lo != 0 || s.Hi != 1<<45-1 {
		t.Errorf("2^45 elements: got [%d, %d] (ok %v)", s.Lo, s.Hi, ok)
	}
	// A product past the limit is unknown, never wrapped.
	huge := bin(ir.Mul, ix("a"), ix("b"))
	if _, ok := indexSpan(huge, map[string]int64{"a": 1 << 40, "b": 1 << 40}); ok {
		t.Errorf("a product of 2^80 is bounded; want unknown")
	}
}

func neg(x ir.Expr) ir.Expr { return &ir.Unary{Op: ir.Neg, X: x} }
