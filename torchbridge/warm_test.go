package torchbridge

import (
	"fmt"
	"reflect"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/neoflow/neoflow/api"
	"github.com/neoflow/neoflow/autotune"
	"github.com/neoflow/neoflow/core/loops"
)

// A kernel tuned at one shape warm starts the same op at another: the
// record's genome projected onto the new shape seeds its search (and its
// picks), and builds its first kernel where the record's tuning gained
// enough over the defaults; a kernel of another dtype finds nothing.
func TestWarmStartFromTheNearestShape(t *testing.T) {
	r := newRuntime(t)
	def, err := r.Define(&api.DefineRequest{Source: "C[i,j] += A[i,k] * B[k,j]", Name: "warm"})
	if err != nil {
		t.Fatal(err)
	}
	tuned := []*api.TensorType{f64(64, 48), f64(48, 64)}
	tr, err := r.TuneBegin(&api.TuneRequest{OpId: def.OpId, Inputs: tuned, Trials: 6, Seed: 2})
	if err != nil {
		t.Fatal(err)
	}
	for {
		p, err := r.TuneStep(&api.TuneStepRequest{SessionId: tr.SessionId})
		if err != nil {
			t.Fatal(err)
		}
		if p.Done {
			break
		}
	}
	if _, err := r.TuneEnd(&api.TuneStepRequest{SessionId: tr.SessionId, Save: true}); err != nil {
		t.Fatal(err)
	}
	op, in, err := r.opInputs(def.OpId, []*api.TensorType{f64(80, 48), f64(48, 72)})
	if err != nil {
		t.Fatal(err)
	}
	spec, _, err := r.specialize(op, in, nil, true, fmt.Sprint(in))
	if err != nil {
		t.Fatal(err)
	}
	key := autotune.Key(spec, Version)
	rec := r.nearestRecord(spec, key)
	if rec == nil || rec.GetTrials() == 0 || len(rec.GetGenome()) == 0 {
		t.Fatalf("nearest record %v", rec)
	}
	g, want, ok := autotune.WarmStart(spec, rec, false)
	if !ok {
		t.Fatal("the tuned record does not project")
	}
	// The first build takes the projection where the record's tuning
	// gained WarmGain over its defaults, else the defaults.
	db, err := r.tuneDB()
	if err != nil {
		t.Fatal(err)
	}
	gained := proto.Clone(rec).(*api.TuneRecord)
	gained.BestSeconds, gained.DefaultSeconds = 1, 2
	r.stored(db, gained)
	if got := r.firstSchedules(spec); !reflect.DeepEqual(got, want) {
		t.Fatalf("schedules %v, want the warm start's %v", got, want)
	}
	flat := proto.Clone(rec).(*api.TuneRecord)
	flat.BestSeconds, flat.DefaultSeconds = 1, 1.1
	r.stored(db, flat)
	if got := r.firstSchedules(spec); got != nil {
		t.Fatalf("schedules %v from a record that gained 10%%, want the defaults", got)
	}
	if seeds := r.warmSeeds(spec, key, false); len(seeds) != 1 || !reflect.DeepEqual(seeds[0], g) {
		t.Fatalf("seeds %v", seeds)
	}
	if _, err := r.Specialize(&api.SpecializeRequest{OpId: def.OpId, Inputs: []*api.TensorType{f64(80, 48), f64(48, 72)}}); err != nil {
		t.Fatal(err)
	}
	// float32 is another family.
	op32, in32, err := r.opInputs(def.OpId, []*api.TensorType{{Dtype: "float32", Shape: []int64{80, 48}}, {Dtype: "float32", Shape: []int64{48, 72}}})
	if err != nil {
		t.Fatal(err)
	}
	spec32, _, err := r.specialize(op32, in32, nil, true, fmt.Sprint(in32))
	if err != nil {
		t.Fatal(err)
	}
	if rec := r.nearestRecord(spec32, autotune.Key(spec32, Version)); rec != nil {
		t.Fatalf("a float32 kernel found the float64 record %v", rec.GetKey())
	}
}

// Settings that move the cache to another directory drop the index of the
// old database: its records warm start nothing there.
func TestWarmIndexFollowsTheCache(t *testing.T) {
	r := newRuntime(t)
	def, err := r.Define(&api.DefineRequest{Source: "C[i,j] += A[i,k] * B[k,j]", Name: "warm2"})
	if err != nil {
		t.Fatal(err)
	}
	op, in, err := r.opInputs(def.OpId, []*api.TensorType{f64(40, 48), f64(48, 64)})
	if err != nil {
		t.Fatal(err)
	}
	old, _, err := r.specialize(op, in, nil, true, fmt.Sprint(in))
	if err != nil {
		t.Fatal(err)
	}
	db, err := r.tuneDB()
	if err != nil {
		t.Fatal(err)
	}
	rec := &api.TuneRecord{Key: autotune.Key(old, Version), Schedules: autotune.ToProto(make([]loops.Schedule, 1)),
		Family: autotune.Family(old, Version, autotune.Target()), Genome: []int32{0}, BestSeconds: 1, DefaultSeconds: 2}
	if _, err := db.Put(rec); err != nil {
		t.Fatal(err)
	}
	_, in2, _ := r.opInputs(def.OpId, []*api.TensorType{f64(48, 48), f64(48, 64)})
	spec, _, err := r.specialize(op, in2, nil, true, fmt.Sprint(in2))
	if err != nil {
		t.Fatal(err)
	}
	if r.nearestRecord(spec, autotune.Key(spec, Version)) == nil {
		t.Fatal("the record in this cache is not found")
	}
	if _, err := r.Init(&api.InitRequest{CacheDir: t.TempDir(), NumThreads: 2}); err != nil {
		t.Fatal(err)
	}
	if got := r.nearestRecord(spec, autotune.Key(spec, Version)); got != nil {
		t.Fatalf("another cache still finds %v", got.GetKey())
	}
}
