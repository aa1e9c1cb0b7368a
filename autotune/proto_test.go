package autotune

import (
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/loops"
	"github.com/neoflow/neoflow/internal/testops"
)

// TestProtoRoundTrip converts the seeds and random schedules of every
// test op to their database form and back: every field of a schedule,
// packs included, must survive, or a stored best would rebuild as a
// different kernel from the one that was timed.
func TestProtoRoundTrip(t *testing.T) {
	packed, relaid := 0, 0
	for oi, o := range testops.All {
		spec, err := o.Spec(ir.Float32)
		if err != nil {
			t.Fatal(err)
		}
		sp := NewSpace(spec)
		genomes := sp.Seeds()
		rng := rand.New(rand.NewPCG(uint64(oi), 9))
		for range 20 {
			g := randomGenome(rng, sp.Cardinalities())
			for _, ss := range sp.stmts {
				if !ss.scatter {
					g[ss.off+geneMode] = 1
				}
			}
			genomes = append(genomes, g)
		}
		for _, g := range genomes {
			want := sp.Decode(g)
			got, err := FromProto(ToProto(want))
			if err != nil {
				t.Fatalf("%s: %v", o.Name, err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%s: schedules %v came back from the database form as %v", o.Name, want, got)
			}
			for _, s := range want {
				if s.Tiling != nil && len(s.Tiling.Packs) > 0 {
					packed++
				}
				if s.Tiling != nil && len(s.Tiling.Relayouts) > 0 {
					relaid++
				}
			}
		}
	}
	if packed == 0 || relaid == 0 {
		t.Fatalf("%d schedules had a pack and %d a relayout: the round trip of both must be tested", packed, relaid)
	}
}

// TestProtoRoundTripFields guards against a field added to the schedule
// types and not to the database form: it fills every field and compares.
func TestProtoRoundTripFields(t *testing.T) {
	want := []loops.Schedule{{
		VectorWidth: 8, VectorAxis: "j", Order: []string{"i", "j"}, ParallelDepth: 1, Scatter: true, Atomic: true, Threads: 128, LaneSize: "$s",
		Tiling: &loops.Tiling{
			Splits:   []loops.Split{{Axis: "i", Factors: []int64{2, 4}}},
			Loops:    []string{"i.t0", "j", "i.t1", "i.t2"},
			Parallel: 1, Vector: true, AccAt: 2,
			Unroll:    []loops.Unroll{{Loop: "i.t1", Factor: 2}},
			Packs:     []loops.Pack{{Read: 1, At: 2}},
			Relayouts: []loops.Relayout{{Tensor: "B", Dim: 0}},
			Prefetch:  8,
		},
		GPU: &loops.GPUTiling{
			Spatial: []loops.GPUAxis{{Axis: "i", Threads: 16, Regs: 4}},
			Steps:   []loops.GPUStep{{Axis: "k", Tile: 8}},
			Stage:   []int{0, 1},
		},
		GPUReduce: &loops.GPUReduction{Threads: 64},
		MMA:       &loops.MMATiling{BM: 64, BN: 128, Warps: 4},
		Group: &loops.GroupTiling{
			Splits: []loops.Split{{Axis: "j", Factors: []int64{2, 8}}},
			Loops:  []string{"j.t0", "k", "j.t1", "j.t2"}, Parallel: 1, Vector: true, AccAt: []int{1, 4},
		},
	}}
	for _, v := range []reflect.Value{reflect.ValueOf(want[0]), reflect.ValueOf(*want[0].Tiling), reflect.ValueOf(*want[0].GPU), reflect.ValueOf(*want[0].GPUReduce), reflect.ValueOf(*want[0].MMA), reflect.ValueOf(*want[0].Group)} {
		typ := v.Type()
		for i := range typ.NumField() {
			if v.Field(i).IsZero() {
				t.Fatalf("%s.%s is not set in this test: set it, and carry it in ToProto and FromProto", typ.Name(), typ.Field(i).Name)
			}
		}
	}
	got, err := FromProto(ToProto(want))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v, want %+v", got[0].Tiling, want[0].Tiling)
	}
}
