package bounds

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
)

// linearString prints a linear form canonically: "-1 + 1*i + -1*j".
func linearString(l Linear) string {
	parts := []string{fmt.Sprint(l.c)}
	for _, k := range slices.Sorted(maps.Keys(l.coef)) {
		parts = append(parts, fmt.Sprintf("%d*%s", l.coef[k], k))
	}
	return strings.Join(parts, " + ")
}

func TestLinearize(t *testing.T) {
	tests := []struct {
		desc string
		expr string
		want string
	}{
		{"sum", "p*2 + r - 1", "-1 + 2*p + 1*r"},
		{"cancellation", "i - j + j", "0 + 1*i"},
		{"constant factor on the left", "3 * (i + 1)", "3 + 3*i"},
		{"integer constant", "i * G", "0 + 4*i"},
		{"negation", "-(i - 2)", "2 + -1*i"},
		{"opaque division", "h/2*2 + h%2", "0 + 1*h % 2 + 2*h / 2"},
		{"opaque product", "i * j + 1", "1 + 1*i * j"},
		{"constant division folds", "i * (12 / G) + 7 % G", "3 + 3*i"},
		{"opaque call", "min(i, 3) - 1", "-1 + 1*min(i, 3)"},
	}
	for _, tc := range tests {
		if got := linearString(Linearize(index(t, tc.expr))); got != tc.want {
			t.Errorf("%s: Linearize(%s): got %q, want %q", tc.desc, tc.expr, got, tc.want)
		}
	}
}

func TestFacts(t *testing.T) {
	tests := []struct {
		desc   string
		cond   string
		negate bool
		want   []string
	}{
		{"less", "i < j", false, []string{"-1 + -1*i + 1*j"}},
		{"less or equal", "i <= j", false, []string{"0 + -1*i + 1*j"}},
		{"greater", "i > 3", false, []string{"-4 + 1*i"}},
		{"greater or equal", "i + r - 1 >= 0", false, []string{"-1 + 1*i + 1*r"}},
		{"equal", "i == 2", false, []string{"-2 + 1*i", "2 + -1*i"}},
		{"not equal", "i != 2", false, nil},
		{"conjunction", "i >= 1 && i < 8", false, []string{"-1 + 1*i", "7 + -1*i"}},
		{"negated less", "i < 4", true, []string{"-4 + 1*i"}},
		{"negated conjunction", "i >= 1 && i < 8", true, nil},
		{"disjunction", "i < 1 || i > 8", false, nil},
		{"negated disjunction", "i < 1 || i > 8", true, []string{"-1 + 1*i", "8 + -1*i"}},
		{"not", "!(i < 4)", false, []string{"-4 + 1*i"}},
		{"negated not equal", "i != 2", true, []string{"-2 + 1*i", "2 + -1*i"}},
		{"value comparison", "A[i] > 0.0", false, nil},
	}
	for _, tc := range tests {
		var got []string
		for _, f := range facts(index(t, tc.cond), tc.negate) {
			got = append(got, linearString(f))
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: facts(%s, negate=%v): got %q, want %q", tc.desc, tc.cond, tc.negate, got, tc.want)
		}
	}
}

func TestGuardAndProve(t *testing.T) {
	vars := map[string]Interval{"i": {0, 9}, "r": {0, 2}}
	tests := []struct {
		desc   string
		cond   string
		negate bool
		expr   string // prove expr >= 0 under the guard
		want   bool
		dead   bool
	}{
		{"tightened variable", "i >= 4", false, "i - 4", true, false},
		{"tightened from the else branch", "i < 4", true, "i - 4", true, false},
		{"fact cancels atoms", "i + r - 1 >= 0", false, "i + r - 1", true, false},
		{"fact with slack", "i + r - 1 >= 0", false, "i + r", true, false},
		{"two facts", "i - r >= 0 && r - 1 >= 0", false, "i - 1", true, false},
		{"unprovable", "i + r - 1 >= 0", false, "i - 1", false, false},
		{"contradiction", "i < 0", false, "i - 100", true, true},
		{"opaque atom", "i/2 < 3", false, "2 - i/2", true, false},
	}
	for _, tc := range tests {
		s := NewScope(vars).Guard(index(t, tc.cond), tc.negate)
		if s.dead != tc.dead {
			t.Errorf("%s: dead: got %v, want %v", tc.desc, s.dead, tc.dead)
		}
		if tc.dead {
			continue
		}
		if got := s.proveNonneg(Linearize(index(t, tc.expr))); got != tc.want {
			t.Errorf("%s: prove %s >= 0 under %s: got %v, want %v", tc.desc, tc.expr, tc.cond, got, tc.want)
		}
	}
}
