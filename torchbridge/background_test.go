package torchbridge

import (
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
