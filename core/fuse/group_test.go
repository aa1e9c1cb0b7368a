package fuse

import (
	"strings"
	"testing"

	"github.com/neoflow/neoflow/core/ir"
)

// groups lists the fused groups of spec as their statements' tensors.
func groups(spec *ir.Spec) [][]string {
	var out [][]string
	for _, st := range spec.Stmts {
		if !st.Joined || len(out) == 0 {
			out = append(out, nil)
		}
		out[len(out)-1] = append(out[len(out)-1], st.Stmt.Tensor)
	}
	return out
}

func hasGroup(gs [][]string, want ...string) bool {
	for _, g := range gs {
		if strings.Join(g, " ") == strings.Join(want, " ") {
			return true
		}
	}
	return false
}

// At bench size, LLTM's saving gradient runs the two input gradients and
// a half of d_W, which all read d_G over b, g and j, as one nest (W does
// not fit the cache: the input gradients alone would read it once per
// batch row), and computes the same values as unfused.
func TestLLTMGradientGroups(t *testing.T) {
	g := lltmGrad(t, 16, 256)
	var notes Notes
	f := all(g, Options{}, &notes)
	gs := groups(f)
	if !hasGroup(gs, "d_W", "d_H", "d_X") {
		t.Errorf("groups %v, want d_W d_H d_X in one\n%s\n%s", gs, strings.Join(notes, "\n"), ir.PrintSpec(f))
	}
	if !strings.Contains(strings.Join(notes, "\n"), "group: d_H, d_X joins d_W's nest") {
		t.Errorf("the notes do not explain the join:\n%s", strings.Join(notes, "\n"))
	}
	small := lltmGrad(t, 2, 4)
	sameOutputs(t, small, all(small, Options{}, nil), 1)
}

// Operands that fit the cache (W: 1 MiB) are read again cheaply: the
// reward refuses the join, whose accumulators would cost more than the
// loop nest it saves, and says so.
func TestSmallContractionsStayApart(t *testing.T) {
	spec := specOf(t, "d_W[g,j] += d_G[b,g] * H[b,j]\nd_H[b,j] += d_G[b,g] * W[g,j]", nil,
		[]string{"d_G", "H", "W"}, [][]int64{{16, 512}, {16, 512}, {512, 512}}, nil)
	spec.DType = ir.Float32
	var notes Notes
	f := Group(spec, Options{}, &notes)
	if gs := groups(f); len(gs) != 2 {
		t.Errorf("groups %v, want the two contractions apart", gs)
	}
	if !strings.Contains(strings.Join(notes, "\n"), "d_H stays out of d_W's nest (both read d_G): R = -") {
		t.Errorf("notes %q do not give the refusing reward", notes)
	}
}

// A statement joins only where a point-by-point loop computes what the
// statements one after the other do.
func TestGroupLegality(t *testing.T) {
	cases := []struct {
		name, src string
		joined    bool
	}{
		{"same point", "A[i,j] = X[i,j] * 2.0\nB[i,j] = A[i,j] + X[i,j]", true},
		{"shifted read", "A[i,j] = X[i,j] * 2.0\nB[i,j] = A[i,(j + 1) % 8] + X[i,j]", false},
		{"transposed read", "A[i,j] = X[i,j] * 2.0\nB[i,j] = A[j,i] + X[i,j]", false},
		// A reduction's consumer at the element it completes joins as its
		// epilogue (X[i,k] * X[k,j] runs in lanes over j, the last axis of
		// both outputs); elsewhere it does not.
		{"reads a reduction", "A[i,j] += X[i,k] * X[k,j]\nB[i,j] = A[i,j] + X[i,j]", true},
		{"reads a reduction elsewhere", "A[i,j] += X[i,k] * X[k,j]\nB[i,j] = A[i,(j + 1) % 8] + X[i,j]", false},
		{"reads a reduction at its element and elsewhere", "A[i,j] += X[i,k] * X[k,j]\nB[i,j] = A[i,j] * A[j,i]", false},
		// Transposed, its stores would stride across the lanes.
		{"reads a reduction transposed", "A[i,j] += X[i,k] * X[k,j]\nB[i,j] = A[j,i] + X[i,j]", false},
		{"reads a reduction, then the epilogue", "A[i,j] += X[i,k] * X[k,j]\nB[i,j] = A[i,j] * X[j,i]\nC[i,j] = tanh(B[i,j]) + A[i,j]", true},
		{"epilogue over fewer axes", "A[i,j] += X[i,k] * X[k,j]\nB[i] = A[i,0] * 2.0", false},
		{"independent", "A[i,j] = X[i,j] * 2.0\nB[i,j] = exp(X[i,j])", true},
	}
	for _, c := range cases {
		spec := specOf(t, c.src, nil, []string{"X"}, [][]int64{{8, 8}}, nil)
		f := Group(spec, Options{}, nil)
		if got := len(groups(f)) == 1; got != c.joined {
			t.Errorf("%s: joined %v, want %v\n%s", c.name, got, c.joined, ir.PrintSpec(f))
		}
		sameOutputs(t, spec, f, 2)
	}
	// A statement between that feeds the later one keeps it from moving
	// up; one that neither feeds nor reads it lets it.
	spec := specOf(t, "A[i,j] = X[i,j] * 2.0\nT[i] += X[i,k]\nB[i,j] = X[i,j] * T[i]", nil, []string{"X"}, [][]int64{{8, 8}}, nil)
	if gs := groups(Group(spec, Options{}, nil)); hasGroup(gs, "A", "B") {
		t.Errorf("B joined A past T, which it reads: %v", gs)
	}
	spec = specOf(t, "A[i,j] = X[i,j] * 2.0\nT[i] += X[i,k]\nB[i,j] = X[i,j] * 3.0", nil, []string{"X"}, [][]int64{{8, 8}}, nil)
	f := Group(spec, Options{}, nil)
	if gs := groups(f); !hasGroup(gs, "A", "B") {
		t.Errorf("B did not join A past T: %v", gs)
	}
	sameOutputs(t, spec, f, 3)
}

// Re-reads of an operand that fits the last-level cache cost its
// bandwidth, not memory's: with accumulators as dear as this machine's
// (measured: 6 to 11 units a point), the input gradient's 16 passes over
// a 4 MiB W are cheaper than fusing, from a 32 MiB cache; from an 8 MiB
// one (W then takes more than its quarter), they stream from memory and
// the join pays.
func TestLastLevelCacheRereads(t *testing.T) {
	spec := specOf(t, "d_W[g,j] += d_G[b,g] * H[b,j]\nd_H[b,j] += d_G[b,g] * W[g,j]", nil,
		[]string{"d_G", "H", "W"}, [][]int64{{16, 1024}, {16, 1024}, {1024, 1024}}, nil)
	spec.DType = ir.Float32
	m := Machine{BytesPerSec: 3e10, OpsPerSec: 2e11, NestSec: 1e-6, CallOps: 60, AccumulatorOps: 8,
		CacheBytes: 1 << 20, LLCBytes: 32 << 20, LLCBytesPerSec: 1.5e11}
	var notes Notes
	if gs := groups(Group(spec, Options{Machine: m}, &notes)); len(gs) != 2 {
		t.Errorf("W in the last-level cache: groups %v, want the two apart\n%s", gs, strings.Join(notes, "\n"))
	}
	m.LLCBytes = 8 << 20
	notes = nil
	f := Group(spec, Options{Machine: m}, &notes)
	if gs := groups(f); len(gs) != 1 {
		t.Errorf("W past the last-level cache: groups %v, want one\n%s", gs, strings.Join(notes, "\n"))
	}
	small := specOf(t, "d_W[g,j] += d_G[b,g] * H[b,j]\nd_H[b,j] += d_G[b,g] * W[g,j]", nil,
		[]string{"d_G", "H", "W"}, [][]int64{{3, 5}, {3, 4}, {5, 4}}, nil)
	sameOutputs(t, small, Group(small, Options{Machine: Machine{BytesPerSec: 1e10, OpsPerSec: 1e30, NestSec: 1}}, nil), 4)
}
