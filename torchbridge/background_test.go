package torchbridge

import (
	"slices"
	"testing"
	"time"

	"github.com/neoflow/neoflow/api"
)

// TestBackgroundSwap runs a matmul in the background mode: Specialize
// returns the default kernel at once, the worker tunes it and, the tuned
// one being faster, swaps its entry point into the same kernel id; the
// record is stored, and the status says so.
func TestBackgroundSwap(t *testing.T) {
	r := New()
	if _, err := r.Init(&api.InitRequest{CacheDir: t.TempDir(), NumThreads: 2, Tune: TuneBackground}); err != nil {
		t.Fatal(err)
	}
	entries := publishedEntries(r)
	defer checkPublished(t, r, entries) // the swapped kernel's entry point included
	def, err := r.Define(&api.DefineRequest{Source: "C[i,j] += A[i,k] * B[k,j]", Name: "bg"})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := r.Specialize(&api.SpecializeRequest{OpId: def.OpId, Inputs: []*api.TensorType{f64(64, 48), f64(48, 40)}})
	if err != nil {
		t.Fatal(err)
	}
	table := *r.table.Load()
	first := table[resp.KernelId].fn.Load()
	var st *api.TuneStatusResponse
	for deadline := time.Now().Add(4 * time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if st = r.TuneStatus(); len(st.Kernels) == 1 && st.Pending == 0 {
			break
		}
	}
	if len(st.Kernels) != 1 || st.Pending != 0 || st.Kernels[0].Error != "" {
		t.Fatalf("status %v", st)
	}
	k := st.Kernels[0]
	p := k.Progress
	if p.Trials == 0 || p.DefaultSeconds <= 0 || p.BestSeconds > p.DefaultSeconds {
		t.Fatalf("progress %v", p)
	}
	now := (*r.table.Load())[resp.KernelId].fn.Load()
	if k.Swapped != (now != first) || k.Swapped != (p.BestSeconds < p.DefaultSeconds) {
		t.Fatalf("swapped %v, entry point changed %v, best %g default %g", k.Swapped, now != first, p.BestSeconds, p.DefaultSeconds)
	}
	db, err := r.tuneDB()
	if err != nil {
		t.Fatal(err)
	}
	if entries, _ := db.List(); len(entries) != 1 || entries[0].ID != k.RecordId {
		t.Fatalf("database: %v", entries)
	}
}

// In the default mode a kernel with enough work is built with its default
// schedules at once, and the worker picks the faster of those and the
// register-tiled ones per statement: a record of no trials, the picked
// kernel swapped in where it differs. A later runtime builds with the
// record at once and queues nothing, and tuning takes the kernel as
// untuned. A small kernel is not picked.
func TestDefaultModePicks(t *testing.T) {
	dir := t.TempDir()
	r := New()
	if _, err := r.Init(&api.InitRequest{CacheDir: dir, NumThreads: 2}); err != nil {
		t.Fatal(err)
	}
	def, err := r.Define(&api.DefineRequest{Source: "C[i,j] += A[i,k] * B[k,j]", Name: "pk"})
	if err != nil {
		t.Fatal(err)
	}
	ins := []*api.TensorType{f64(256, 256), f64(256, 256)}
	resp, err := r.Specialize(&api.SpecializeRequest{OpId: def.OpId, Inputs: ins})
	if err != nil {
		t.Fatal(err)
	}
	table := *r.table.Load()
	first := table[resp.KernelId].fn.Load()
	var st *api.TuneStatusResponse
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if st = r.TuneStatus(); len(st.Kernels) == 1 && st.Pending == 0 {
			break
		}
	}
	if len(st.Kernels) != 1 || st.Pending != 0 || st.Kernels[0].Error != "" {
		t.Fatalf("status %v", st)
	}
	k := st.Kernels[0]
	if p := k.Progress; p.Trials < 2 || p.DefaultSeconds <= 0 || p.BestSeconds > p.DefaultSeconds {
		t.Fatalf("progress %v", p)
	}
	if now := (*r.table.Load())[resp.KernelId].fn.Load(); k.Swapped != (now != first) {
		t.Fatalf("swapped %v, entry point changed %v", k.Swapped, now != first)
	}
	db, err := r.tuneDB()
	if err != nil {
		t.Fatal(err)
	}
	e, err := db.Find(k.RecordId)
	if err != nil || e.Record.GetTrials() != 0 || len(e.Record.GetSchedules()) != 1 {
		t.Fatalf("record %v, %v: want a pick", e.Record, err)
	}
	// A second runtime builds with the pick and queues nothing.
	r2 := New()
	if _, err := r2.Init(&api.InitRequest{CacheDir: dir, NumThreads: 2}); err != nil {
		t.Fatal(err)
	}
	def2, err := r2.Define(&api.DefineRequest{Source: "C[i,j] += A[i,k] * B[k,j]", Name: "pk"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r2.Specialize(&api.SpecializeRequest{OpId: def2.OpId, Inputs: ins}); err != nil {
		t.Fatal(err)
	}
	if _, err := r2.Specialize(&api.SpecializeRequest{OpId: def2.OpId, Inputs: []*api.TensorType{f64(16, 16), f64(16, 16)}}); err != nil {
		t.Fatal(err)
	}
	if st := r2.TuneStatus(); len(st.Kernels) != 0 {
		t.Fatalf("second runtime queued %v", st)
	}
	tr, err := r2.TuneBegin(&api.TuneRequest{OpId: def2.OpId, Inputs: ins, Trials: 2})
	if err != nil {
		t.Fatal(err)
	}
	if tr.Already {
		t.Fatal("tuning took the picked kernel as tuned")
	}
	if _, err := r2.TuneEnd(&api.TuneStepRequest{SessionId: tr.SessionId}); err != nil {
		t.Fatal(err)
	}
}

// Every queued kernel is picked before any is searched: the worker takes
// a pick job or a search not yet picked first, in queue order, and a
// search once its pick is done (searchPick puts it back at the end).
func TestPicksBeforeSearches(t *testing.T) {
	r := New()
	picked := &bgJob{name: "picked", picked: true}
	search := &bgJob{name: "search"}
	pick := &bgJob{name: "pick", pick: true}
	r.bg.queue = []*bgJob{picked, search, pick}
	var got []string
	for len(r.bg.queue) > 0 {
		j := r.nextJob()
		got = append(got, j.name)
		if j == search && !j.picked { // its pick done: back at the end for its search
			j.picked = true
			r.bg.queue = append(r.bg.queue, j)
		}
	}
	if want := []string{"search", "pick", "picked", "search"}; !slices.Equal(got, want) {
		t.Fatalf("order %v, want %v", got, want)
	}
}

// While compilers that a caller waits for run, C kernel launches leave
// each a core, and one more for a busy worker, down to one thread.
func TestLaunchLeavesCoresToCompilers(t *testing.T) {
	for _, c := range []struct {
		busy                    bool
		compiles, asked, wanted int
	}{{false, 1, 2, 1}, {false, 2, 4, 2}, {false, 5, 4, 1}, {true, 1, 4, 2}, {true, 1, 2, 1}, {false, 0, 3, 3}, {false, 2, 1, 1}, {false, 1, 0, 1}} {
		if got := ThreadsBeside(c.asked, c.busy, c.compiles); got != c.wanted {
			t.Errorf("busy %v, %d compiles, %d threads asked: launched on %d, want %d", c.busy, c.compiles, c.asked, got, c.wanted)
		}
	}
}

// While the worker runs a job, C kernel launches leave it a core.
func TestLaunchLeavesACoreWhileTuning(t *testing.T) {
	r := New()
	for _, c := range []struct {
		busy          bool
		asked, wanted int
	}{{false, 4, 4}, {true, 4, 3}, {true, 2, 1}, {true, 1, 1}, {false, 0, 1}, {true, 0, 1}} {
		r.bg.busy.Store(c.busy)
		if got := r.launchThreads(c.asked); got != c.wanted {
			t.Errorf("busy %v, %d threads asked: launched on %d, want %d", c.busy, c.asked, got, c.wanted)
		}
	}
}

// OnBusy's function hears every change of the worker's state, in order.
func TestOnBusyHearsTheWorker(t *testing.T) {
	r := New()
	var heard []bool
	r.OnBusy(func(busy bool) { heard = append(heard, busy) })
	r.bg.setBusy(true)
	if !r.bg.busy.Load() {
		t.Fatal("setBusy(true) left busy unset")
	}
	r.bg.setBusy(false)
	if !slices.Equal(heard, []bool{true, false}) {
		t.Fatalf("heard %v, want [true false]", heard)
	}
}
