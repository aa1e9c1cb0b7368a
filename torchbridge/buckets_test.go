package torchbridge

import (
	"runtime"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/neoflow/neoflow/api"
)

// A kernel with symbolic extents gets one kernel id per size bucket: each
// bucket's schedules are picked by the worker and kept in the database
// under the bucket's key, sizes of one bucket share its id, and a later
// runtime builds a bucket's kernel from its record without queuing
// anything. Every bucket's kernel computes what the op says. A bucket
// with too little work to pick for runs the kernel's own id.
func TestSizeBuckets(t *testing.T) {
	dir := t.TempDir()
	r := New()
	if _, err := r.Init(&api.InitRequest{CacheDir: dir, NumThreads: 2}); err != nil {
		t.Fatal(err)
	}
	template := symbolicRows(t, r)
	at := func(n int64) uint64 {
		resp, err := r.Specialize(&api.SpecializeRequest{BucketOf: template, SizeValues: []int64{n}})
		if err != nil {
			t.Fatal(err)
		}
		return resp.KernelId
	}
	b32, b32b, b64, b4 := at(20), at(24), at(40), at(3)
	if b32 == template || b32 != b32b || b64 == b32 || b64 == template || b4 != template {
		t.Fatalf("ids: template %d, 20 -> %d, 24 -> %d, 40 -> %d, 3 -> %d", template, b32, b32b, b64, b4)
	}
	var st *api.TuneStatusResponse
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if st = r.TuneStatus(); len(st.Kernels) == 2 && st.Pending == 0 {
			break
		}
	}
	if len(st.Kernels) != 2 || st.Pending != 0 {
		t.Fatalf("status %v", st)
	}
	for _, k := range st.Kernels {
		t.Logf("%s: %d candidates, default %.1f us, best %.1f us, swapped %v", k.Kernel, k.Progress.Trials, k.Progress.DefaultSeconds*1e6, k.Progress.BestSeconds*1e6, k.Swapped)
		if k.Error != "" || k.Progress.Trials < 2 || k.Progress.BestSeconds > k.Progress.DefaultSeconds || !strings.Contains(k.Kernel, "s0=") {
			t.Fatalf("bucket pick %v", k)
		}
	}
	for _, c := range []struct {
		id uint64
		n  int64
	}{{b32, 20}, {b32, 24}, {b64, 40}, {b64, 33}, {template, 7}, {b4, 3}} {
		checkRows(t, r, c.id, c.n)
	}
	db, err := r.tuneDB()
	if err != nil {
		t.Fatal(err)
	}
	entries, _ := db.List()
	if len(entries) != 2 {
		t.Fatalf("database: %d records, want one per bucket", len(entries))
	}
	tiled := false // bucket 32's pick is not the defaults: a register tile split over the size
	for _, e := range entries {
		for _, s := range e.Record.GetSchedules() {
			tiled = tiled || s.GetTiling() != nil && strings.HasPrefix(e.Record.GetKey().GetTensors()[0], "X:float64[32,")
		}
	}
	t.Logf("bucket 32 picked a tile: %v", tiled)
	// With NEOFLOW_TUNE=off a bucket runs the defaults, whatever was picked before.
	if _, err := r.Init(&api.InitRequest{CacheDir: dir, NumThreads: 2, Tune: TuneOff}); err != nil {
		t.Fatal(err)
	}
	if id := at(20); id != template {
		t.Fatalf("with tuning off, bucket 32 runs kernel %d, not the kernel's own %d", id, template)
	}
	if _, err := r.Init(&api.InitRequest{CacheDir: dir, NumThreads: 2}); err != nil {
		t.Fatal(err)
	}
	if id := at(20); id != b32 {
		t.Fatalf("with tuning on again, bucket 32 runs kernel %d, not its pick %d", id, b32)
	}

	// A later runtime builds bucket 32's kernel from its record.
	r2 := New()
	if _, err := r2.Init(&api.InitRequest{CacheDir: dir, NumThreads: 2}); err != nil {
		t.Fatal(err)
	}
	template2 := symbolicRows(t, r2)
	resp, err := r2.Specialize(&api.SpecializeRequest{BucketOf: template2, SizeValues: []int64{17}})
	if err != nil {
		t.Fatal(err)
	}
	if st := r2.TuneStatus(); len(st.Kernels) != 0 {
		t.Fatalf("a bucket with a record was queued: %v", st)
	}
	checkRows(t, r2, resp.KernelId, 17)
	if own := r2.symbolic[template2].resp.GetCSource(); tiled && resp.GetCSource() == own {
		t.Error("the bucket built from its tiled record shows the default kernel's source")
	}

	for _, c := range []struct {
		req  *api.SpecializeRequest
		want string
	}{
		{&api.SpecializeRequest{BucketOf: 999, SizeValues: []int64{4}}, "not a loaded kernel with symbolic extents"},
		{&api.SpecializeRequest{BucketOf: template, SizeValues: []int64{4, 5}}, "takes 1 sizes, the request gives 2"},
		{&api.SpecializeRequest{BucketOf: template, SizeValues: []int64{0}}, "size s0 is 0"},
	} {
		if _, err := r.Specialize(c.req); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: got %v, want an error saying %q", c.req, err, c.want)
		}
	}
}

// With NEOFLOW_TUNE=off a bucket runs the kernel's own id.
func TestSizeBucketsOff(t *testing.T) {
	r := New()
	if _, err := r.Init(&api.InitRequest{CacheDir: t.TempDir(), NumThreads: 2, Tune: TuneOff}); err != nil {
		t.Fatal(err)
	}
	template := symbolicRows(t, r)
	resp, err := r.Specialize(&api.SpecializeRequest{BucketOf: template, SizeValues: []int64{100}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.KernelId != template || len(r.TuneStatus().Kernels) != 0 {
		t.Fatalf("bucket id %d, template %d, queued %v", resp.KernelId, template, r.TuneStatus())
	}
	if err := r.ReleaseKernel(resp.KernelId); err != nil {
		t.Fatal(err)
	}
	checkRows(t, r, template, 100)
}

// symbolicRows defines a linear layer's product, with enough work at
// every bucket from 32 rows up to pick for (autotune.Picks), and builds
// its kernel for every number of rows.
func symbolicRows(t *testing.T, r *Runtime) uint64 {
	t.Helper()
	def, err := r.Define(&api.DefineRequest{Source: "Y[n, j] += X[n, k] * W[j, k]", Name: "rows"})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := r.Specialize(&api.SpecializeRequest{OpId: def.OpId, Inputs: []*api.TensorType{f64(20, rowsK), f64(rowsJ, rowsK)},
		Like: []*api.TensorType{f64(24, rowsK), f64(rowsJ, rowsK)}})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.SizeNames) != 1 {
		t.Fatalf("sizes %v", resp.SizeNames)
	}
	return resp.KernelId
}

// The extents of symbolicRows' op: Y[n, rowsJ] += X[n, rowsK] * W[rowsJ, rowsK].
const rowsJ, rowsK = 256, 512

// checkRows launches kernel id (symbolicRows' op) at n rows and checks Y.
func checkRows(t *testing.T, r *Runtime, id uint64, n int64) {
	t.Helper()
	x, w, y := make([]float64, n*rowsK), make([]float64, rowsJ*rowsK), make([]float64, n*rowsJ)
	for i := range x {
		x[i] = float64(i%7) - 3
	}
	for i := range w {
		w[i] = float64(i%5) - 2
	}
	sizes := []int64{n}
	bufs := []unsafe.Pointer{unsafe.Pointer(&x[0]), unsafe.Pointer(&w[0]), unsafe.Pointer(&y[0]), unsafe.Pointer(&sizes[0])}
	var pin runtime.Pinner
	defer pin.Unpin()
	for _, p := range bufs {
		pin.Pin(p)
	}
	pin.Pin(&bufs[0])
	if err := r.Launch(id, unsafe.Pointer(&bufs[0]), len(bufs), 2); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		for j := range int64(rowsJ) {
			want := 0.0
			for k := range int64(rowsK) {
				want += x[i*rowsK+k] * w[j*rowsK+k]
			}
			if got := y[i*rowsJ+j]; got != want {
				t.Fatalf("kernel %d at %d rows: Y[%d, %d] = %g, want %g", id, n, i, j, got, want)
			}
		}
	}
}
