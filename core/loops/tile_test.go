package loops

import (
	"strings"
	"testing"

	"github.com/neoflow/neoflow/core/ir"
)

// gemmTiling is a register-tiled matmul: i and j in three levels, k in
// two, the accumulator after the middle spatial tiles.
func gemmTiling(accAt int) *Tiling {
	return &Tiling{
		Splits:   []Split{{Axis: "i", Factors: []int64{2, 2}}, {Axis: "j", Factors: []int64{2, 4}}, {Axis: "k", Factors: []int64{3}}},
		Loops:    []string{"i.t0", "j.t0", "k.t0", "i.t1", "j.t1", "k.t1", "i.t2", "j.t2"},
		Parallel: 2,
		Vector:   true,
		Unroll:   []Unroll{{"i.t2", 2}},
		AccAt:    accAt,
	}
}

// packedGemm is gemmTiling(5) with B[k, j] packed before i.t1: the
// buffer is indexed by j.t1, k.t1 and j.t2, the lane loop innermost.
func packedGemm() *Tiling {
	t := gemmTiling(5)
	t.Packs = []Pack{{Read: 1, At: 3}}
	return t
}

// A split over a size (Split.Size) lowers to the same structure whatever
// the axis's extent: the outer loop to s0 / 3 and a remainder block whose
// rows loop runs to s0 % 3, with its value for the bounds check
// (Nest.SizeValues), at an extent the factor divides (12) and at one it
// does not (13), and at one below the factor (2).
func TestTiledSplitOverASize(t *testing.T) {
	for _, m := range []int64{12, 13, 2} {
		tl := gemmTiling(5)
		tl.Splits[0] = Split{Axis: "i", Factors: []int64{1, 3}, Size: "$s0"}
		tl.Loops = []string{"j.t0", "i.t0", "k.t0", "i.t1", "j.t1", "k.t1", "i.t2", "j.t2"}
		tl.Parallel = 1
		n, err := LowerStmt(matmulSpec(ir.Float32, m, 16, 6), 0, Schedule{Tiling: tl})
		if err != nil {
			t.Fatalf("%d rows: %v", m, err)
		}
		if n.SizeValues["$s0"] != m {
			t.Errorf("%d rows: size values %v", m, n.SizeValues)
		}
		var outer, rem *Loop
		var walk func([]Node)
		walk = func(ns []Node) {
			for _, x := range ns {
				switch x := x.(type) {
				case *Loop:
					if x.Var == "i.t0" {
						outer = x
					}
					if x.Var == "i.t2" && x.Rem {
						rem = x
					}
					walk(x.Body)
				case *Block:
					walk(x.Body)
				}
			}
		}
		walk(n.Body)
		if outer == nil || outer.Size != "$s0" || outer.By != 3 || outer.Extent != m/3 || rem == nil || rem.Extent != m%3 || rem.By != 3 {
			t.Fatalf("%d rows: outer loop %+v, remainder loop %+v", m, outer, rem)
		}
	}
}

func TestTiledGolden(t *testing.T) {
	for name, tl := range map[string]*Tiling{
		"tiled_acc_inner":    gemmTiling(5), // accumulator: a 2x4 register tile
		"tiled_acc_outer":    gemmTiling(2), // accumulator over the whole i.t0, j.t0 tile
		"tiled_acc_partial":  gemmTiling(3), // k.t0 outside: identity fill, combining stores
		"tiled_no_acc":       gemmTiling(8), // straight into C
		"tiled_pack":         packedGemm(),  // B's k.t0 tile copied, j.t2 innermost
		"tiled_pack_shared":  sharedPack(),  // all of B copied once before the parallel loops
		"tiled_lane_red":     laneRedGemm(), // k.t1 is the lane loop: one partial sum per lane
		"tiled_rem":          remGemm(),     // j in lanes of 5: 3 tiles and a remainder of 1, B packed inside
		"tiled_lane_red_rem": laneRedRem(),  // k in lanes of 4: 1 tile and a remainder of 2
		"tiled_relayout":     relaidGemm(),  // B copied as [j][k] before the loops, read as the copy
	} {
		t.Run(name, func(t *testing.T) {
			s := matmulSpec(ir.Float32, 8, 16, 6)
			n, err := LowerStmt(s, 0, Schedule{Tiling: tl})
			if err != nil {
				t.Fatal(err)
			}
			golden(t, name, Dump(&Func{Spec: s, Nests: []*Nest{n}}))
		})
	}
}

// sharedPack is packedGemm with the pack before every loop, shared by
// the threads of the parallel loops.
func sharedPack() *Tiling {
	t := packedGemm()
	t.Packs[0].At = 0
	return t
}

// relaidGemm is gemmTiling(5) with B relaid, k innermost.
func relaidGemm() *Tiling {
	t := gemmTiling(5)
	t.Relayouts = []Relayout{{Tensor: "B", Dim: 0}}
	return t
}

// laneRedGemm reduces over k in lanes (rfactor): the accumulator holds
// one partial sum per k.t1 lane, combined after the k loops.
func laneRedGemm() *Tiling {
	t := gemmTiling(3)
	t.Loops[5], t.Loops[7] = t.Loops[7], t.Loops[5]
	return t
}

// remGemm splits j (16) into lanes of 5, leaving a remainder of 1, with
// B packed inside j.t0.
func remGemm() *Tiling {
	t := gemmTiling(5)
	t.Splits[1].Factors = []int64{1, 5}
	t.Parallel = 1
	t.Packs = []Pack{{Read: 1, At: 3}}
	return t
}

// laneRedRem is laneRedGemm with k (6) in lanes of 4 and the accumulator
// outside k.t0.
func laneRedRem() *Tiling {
	t := laneRedGemm()
	t.Splits[2].Factors = []int64{4}
	t.AccAt = 2
	return t
}

func TestTilingErrors(t *testing.T) {
	s := matmulSpec(ir.Float32, 8, 16, 6)
	for _, c := range []struct {
		mod  func(*Tiling)
		want string
	}{
		{func(t *Tiling) { t.Splits[0].Factors = []int64{3, 2} }, "do not divide"},
		{func(t *Tiling) { t.Splits[0].Factors = []int64{3, 1} }, "do not divide"},
		{func(t *Tiling) { t.Splits[1].Factors = []int64{1, 5} }, "runs in parallel"},
		{func(t *Tiling) { t.Splits[1].Factors = []int64{1, 5}; t.Parallel = 1; t.Vector = false }, "needs its last tile loop innermost"},
		{func(t *Tiling) { t.Splits[0].Factors = []int64{1, 3}; t.Parallel = 1 }, "needs its last tile loop innermost"},
		{func(t *Tiling) { t.Splits[1].Factors = []int64{1, 5}; t.Parallel, t.AccAt = 1, 1 }, "inside the accumulator"},
		{func(t *Tiling) {
			t.Splits[2].Factors = []int64{4}
			t.Loops[5], t.Loops[7] = t.Loops[7], t.Loops[5]
			t.AccAt = 3
		}, "outside the accumulator"},
		{func(t *Tiling) {
			t.Splits[1].Factors = []int64{1, 5}
			t.Parallel = 1
			t.Packs = []Pack{{Read: 1, At: 1}}
		}, "whose remainder"},
		{func(t *Tiling) { t.Splits = append(t.Splits, Split{Axis: "i", Factors: []int64{2}}) }, "split twice"},
		// splits over a size (Split.Size)
		{func(t *Tiling) { t.Splits[0].Size = "$s0" }, "must be 1 but the last"},
		{func(t *Tiling) { t.Splits[0].Factors, t.Splits[0].Size = []int64{1, 3}, "$s0" }, "runs in parallel"},
		{func(t *Tiling) { t.Splits[1].Factors, t.Splits[1].Size, t.Parallel = []int64{1, 4}, "$s0", 1 }, "the lane loop of a split over a size"},
		{func(t *Tiling) {
			t.Splits[0].Factors, t.Splits[0].Size, t.Parallel, t.AccAt = []int64{1, 3}, "$s0", 0, 0
		}, "inside the accumulator"},
		{func(t *Tiling) { t.Splits[0].Axis = "z" }, "not an axis"},
		{func(t *Tiling) { t.Loops = t.Loops[1:] }, "do not list"},
		{func(t *Tiling) { t.Loops[0] = "j.t0" }, "not a permutation"},
		{func(t *Tiling) { t.Parallel = 3 }, "reduction loop"},
		{func(t *Tiling) { t.Loops[5], t.Loops[7] = t.Loops[7], t.Loops[5]; t.AccAt = 8 }, "reduction loop outside a local accumulator"},
		{func(t *Tiling) { t.Unroll = []Unroll{{"q", 2}} }, "no such loop"},
		{func(t *Tiling) { t.AccAt = 1 }, "out of range"},
		{func(t *Tiling) { t.Packs = []Pack{{Read: 2, At: 3}} }, "2 packable reads"},
		{func(t *Tiling) { t.Packs = []Pack{{Read: 0, At: 1}} }, "out of range"},
		{func(t *Tiling) { t.Packs = []Pack{{Read: 0, At: 3}, {Read: 0, At: 4}} }, "packed twice"},
		{func(t *Tiling) { t.Relayouts = []Relayout{{"Z", 0}} }, "reads no such tensor"},
		{func(t *Tiling) { t.Relayouts = []Relayout{{"C", 0}} }, "reads no such tensor"},
		{func(t *Tiling) { t.Relayouts = []Relayout{{"B", 1}} }, "not one of the 1 outer dimensions"},
		{func(t *Tiling) { t.Relayouts = []Relayout{{"B", -1}} }, "not one of the 1 outer dimensions"},
		{func(t *Tiling) { t.Relayouts = []Relayout{{"B", 0}, {"B", 0}} }, "relaid twice"},
	} {
		tl := gemmTiling(5)
		c.mod(tl)
		_, err := LowerStmt(s, 0, Schedule{Tiling: tl})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want %q", tl, err, c.want)
		}
	}
	big := matmulSpec(ir.Float32, 256, 256, 4)
	tl := &Tiling{Loops: []string{"i", "j", "k"}, AccAt: 0}
	if _, err := LowerStmt(big, 0, Schedule{Tiling: tl}); err == nil || !strings.Contains(err.Error(), "exceeds") {
		t.Errorf("a 65536-element accumulator: error %v", err)
	}
	wide := matmulSpec(ir.Float32, 4, 512, 512)
	tl = gemmTiling(5)
	tl.Splits = nil
	tl.Loops, tl.Parallel, tl.AccAt, tl.Unroll, tl.Vector = []string{"i", "j", "k"}, 1, 3, nil, false
	tl.Packs = []Pack{{Read: 1, At: 0}}
	if _, err := LowerStmt(wide, 0, Schedule{Tiling: tl}); err == nil || !strings.Contains(err.Error(), "262144 elements exceed 131072") {
		t.Errorf("a shared pack of 262144 elements: error %v", err)
	}
	tl.Packs = nil
	tl.Relayouts = []Relayout{{Tensor: "B", Dim: 0}}
	if _, err := LowerStmt(wide, 0, Schedule{Tiling: tl}); err == nil || !strings.Contains(err.Error(), "262144 elements with the other shared buffers exceed 131072") {
		t.Errorf("a relayout of 262144 elements: error %v", err)
	}
	// The relayouts and the shared packs of a statement share the limit.
	mid := matmulSpec(ir.Float32, 4, 256, 384)
	tl.Packs = []Pack{{Read: 1, At: 0}}
	tl.Relayouts = []Relayout{{Tensor: "A", Dim: 0}}
	if _, err := LowerStmt(mid, 0, Schedule{Tiling: tl}); err != nil {
		t.Errorf("a shared pack of 98304 and a relayout of 1536 elements: %v", err)
	}
	big2 := matmulSpec(ir.Float32, 128, 256, 384)
	if _, err := LowerStmt(big2, 0, Schedule{Tiling: tl}); err == nil || !strings.Contains(err.Error(), "147456 elements with the other shared buffers exceed 131072") {
		t.Errorf("a shared pack of 98304 and a relayout of 49152 elements: error %v", err)
	}
	if _, err := LowerStmt(s, 0, Schedule{Tiling: gemmTiling(5), Scatter: true}); err == nil {
		t.Error("a tiled scatter schedule was accepted")
	}
}

// TestRelayoutClampsGuardedReads lowers a statement that reads X under a
// where and outside one, with X relaid: the guarded read's index into the
// copy is clamped to the buffer (where the guard fails, g - 4 runs past
// X, and the lanes load anyway), the unguarded one is not.
func TestRelayoutClampsGuardedReads(t *testing.T) {
	guard := bin(ir.And, bin(ir.Ge, bin(ir.Sub, ix("g"), &ir.IntLit{Value: 4}), &ir.IntLit{Value: 0}),
		bin(ir.Lt, bin(ir.Sub, ix("g"), &ir.IntLit{Value: 4}), &ir.IntLit{Value: 4}))
	rhs := bin(ir.Add, &ir.Where{Cond: guard, Then: at("X", ix("b"), bin(ir.Sub, ix("g"), &ir.IntLit{Value: 4})), Else: &ir.FloatLit{}},
		at("X", ix("b"), &ir.IntLit{Value: 0}))
	s := spec("shift", ir.Float32,
		[]*ir.TensorDecl{tensor("X", ir.RoleInput, 8, 4), tensor("Y", ir.RoleOutput, 8, 12)},
		stmt("Y", ir.Assign, rhs, []ir.Var{{Name: "b", Extent: 8}, {Name: "g", Extent: 12}}))
	tl := &Tiling{Loops: []string{"g", "b"}, Vector: true, Relayouts: []Relayout{{Tensor: "X", Dim: 0}}}
	n, err := LowerStmt(s, 0, Schedule{Tiling: tl})
	if err != nil {
		t.Fatal(err)
	}
	d := Dump(&Func{Spec: s, Nests: []*Nest{n}})
	if c := strings.Count(d, "%relayout0["); c != 4 {
		t.Fatalf("%d uses of the copy, want its declaration, the fill and two reads:\n%s", c, d)
	}
	if !strings.Contains(d, "%relayout0[min(max(") || strings.Count(d, "min(max(") != 1 {
		t.Errorf("want the guarded read clamped and the other not:\n%s", d)
	}
}
