package torchbridge

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"github.com/neoflow/neoflow/api"
	"github.com/neoflow/neoflow/kernels/cc"
)

// TestKernelsUnloadPastTheIdleLimit: kernels held by nobody stay loaded up
// to the idle limit, least recently released first out; an unloaded id is
// refused at launch and a new specialization loads the kernel again.
func TestKernelsUnloadPastTheIdleLimit(t *testing.T) {
	r := New()
	if _, err := r.Init(&api.InitRequest{CacheDir: t.TempDir(), NumThreads: 1, IdleKernels: 2}); err != nil {
		t.Fatal(err)
	}
	entries := publishedEntries(r)
	defer checkPublished(t, r, entries)
	libs0 := cc.NumLoaded()
	var ids []uint64
	var reqs []*api.SpecializeRequest
	for k := range 5 {
		def, err := r.Define(&api.DefineRequest{Source: fmt.Sprintf("Y[i] = X[i] * %d.5", k)})
		if err != nil {
			t.Fatal(err)
		}
		req := &api.SpecializeRequest{OpId: def.OpId, Inputs: []*api.TensorType{f64(4)}}
		resp, err := r.Specialize(req)
		if err != nil {
			t.Fatal(err)
		}
		again, err := r.Specialize(req) // a second holder of the same kernel
		if err != nil || again.KernelId != resp.KernelId {
			t.Fatalf("second specialization: %v, kernel %d want %d", err, again.GetKernelId(), resp.KernelId)
		}
		ids, reqs = append(ids, resp.KernelId), append(reqs, req)
	}
	if loaded, idle := r.LoadedKernels(); loaded != 5 || idle != 0 {
		t.Fatalf("loaded %d idle %d, want 5 and 0", loaded, idle)
	}
	for _, id := range ids {
		for range 2 {
			if err := r.ReleaseKernel(id); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := r.ReleaseKernel(ids[4]); err == nil || !strings.Contains(err.Error(), "not held") {
		t.Errorf("releasing an idle kernel: got %v", err)
	}
	if loaded, idle := r.LoadedKernels(); loaded != 2 || idle != 2 {
		t.Fatalf("loaded %d idle %d, want 2 and 2", loaded, idle)
	}
	if got := cc.NumLoaded() - libs0; got != 2 {
		t.Errorf("%d libraries stay loaded, want 2", got)
	}
	x, y := []float64{1, 2, 3, 4}, make([]float64, 4)
	bufs := []unsafe.Pointer{unsafe.Pointer(&x[0]), unsafe.Pointer(&y[0])}
	var pin runtime.Pinner
	defer pin.Unpin()
	pin.Pin(&x[0])
	pin.Pin(&y[0])
	pin.Pin(&bufs[0])
	err := r.Launch(ids[0], unsafe.Pointer(&bufs[0]), 2, 1)
	if err == nil || !strings.Contains(err.Error(), "was unloaded") {
		t.Fatalf("launching an unloaded kernel: got %v", err)
	}
	if err := r.Launch(ids[4], unsafe.Pointer(&bufs[0]), 2, 1); err != nil {
		t.Fatalf("an idle kernel still launches: %v", err)
	}
	// Specializing again revives an idle kernel and reloads an unloaded one.
	revived, err := r.Specialize(reqs[4])
	if err != nil || revived.KernelId != ids[4] {
		t.Fatalf("revived: %v, kernel %d want %d", err, revived.GetKernelId(), ids[4])
	}
	fresh, err := r.Specialize(reqs[0])
	if err != nil || fresh.KernelId == ids[0] {
		t.Fatalf("reloaded: %v, kernel %d, want a new id", err, fresh.GetKernelId())
	}
	if err := r.Launch(fresh.KernelId, unsafe.Pointer(&bufs[0]), 2, 1); err != nil || y[3] != 4*0.5 {
		t.Fatalf("reloaded kernel: %v, y = %v", err, y)
	}
}

// entry is a launch table entry as OnLaunchEntry tells it.
type entry struct {
	fn    uintptr
	nbufs int
}

// publishedEntries records what r's OnLaunchEntry tells, by kernel id.
// The map is written under r's lock (the background worker's swaps too),
// which checkPublished holds while it reads it.
func publishedEntries(r *Runtime) map[uint64]entry {
	m := map[uint64]entry{}
	r.OnLaunchEntry(func(id uint64, fn uintptr, nbufs int) { m[id] = entry{fn, nbufs} })
	return m
}

// checkPublished checks that the entries OnLaunchEntry told (C's copy of
// the launch table, capi/launch.c) are r's launch table: every C kernel
// loaded with its entry point now and its buffer count, every other id 0.
func checkPublished(t *testing.T, r *Runtime, m map[uint64]entry) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	table := *r.table.Load()
	for id := range uint64(len(table)) {
		l, want := table[id], entry{}
		if l != nil && l.cuda.Load() == nil {
			want = entry{l.fn.Load(), l.nbufs}
		}
		if m[id] != want {
			t.Errorf("kernel %d: published %+v, the launch table has %+v", id, m[id], want)
		}
	}
}
