package ga

import "testing"

func TestNewRejects(t *testing.T) {
	card := []int{2, 3, 4}
	for _, tc := range []struct {
		name  string
		card  []int
		p     Params
		seeds [][]int
	}{
		{"empty card", nil, Params{}, nil},
		{"zero cardinality", []int{2, 0, 4}, Params{}, nil},
		{"negative cardinality", []int{2, -1, 4}, Params{}, nil},
		{"seed too short", card, Params{}, [][]int{{1, 2}}},
		{"seed too long", card, Params{}, [][]int{{1, 2, 3, 0}}},
		{"seed gene too large", card, Params{}, [][]int{{1, 3, 0}}},
		{"seed gene negative", card, Params{}, [][]int{{0, 0, 0}, {0, -1, 0}}},
		{"negative population", card, Params{Population: -1}, nil},
		{"elite not below population", card, Params{Population: 4, Elite: 4}, nil},
		{"mutation rate above 1", card, Params{MutationRate: 1.5}, nil},
		{"negative mutation rate", card, Params{MutationRate: -0.1}, nil},
		{"negative oversample", card, Params{Oversample: -1}, nil},
	} {
		if _, err := New(tc.card, tc.p, tc.seeds...); err == nil {
			t.Errorf("%s: New succeeded", tc.name)
		}
	}
	if _, err := New([]int{1, 1}, Params{}, []int{0, 0}); err != nil {
		t.Errorf("cardinality 1: %v", err)
	}
}
