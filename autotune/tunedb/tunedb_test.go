package tunedb

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/neoflow/neoflow/api"
)

func key(kernel string) *api.TuneKey {
	return &api.TuneKey{
		Kernel:  kernel,
		Tensors: []string{"x:float32[4,8]", "y:float32[8]"},
		Target:  "Test CPU avx2 fma",
		Version: "test-1",
	}
}

func record(k *api.TuneKey, op string, best float64) *api.TuneRecord {
	return &api.TuneRecord{
		Key:    k,
		OpName: op,
		Schedules: []*api.StmtSchedule{
			{VectorWidth: 8, VectorAxis: "j", Order: []string{"i", "j"}, ParallelDepth: 1},
			{Order: []string{"i", "k"}, Tiling: &api.Tiling{
				Splits:   []*api.Split{{Axis: "k", Factors: []int64{4}}},
				Loops:    []string{"i.t0", "k.t0", "k.t1"},
				Parallel: 1,
				Vector:   true,
				Unroll:   []*api.Unroll{{Loop: "k.t1", Factor: 4}},
				AccAt:    2,
			}},
		},
		BestSeconds:    best,
		DefaultSeconds: 1.5 * best,
		Trials:         40,
		Failures: []*api.TrialFailure{{
			Schedules: []*api.StmtSchedule{{VectorWidth: 16, VectorAxis: "k"}},
			Error:     "compiling: vector width 16 does not divide extent 8",
		}},
		Created: "2025-01-02T03:04:05Z",
		Seed:    7,
	}
}

// logger collects the warnings of a DB.
type logger struct {
	mu    sync.Mutex
	lines []string
}

func (l *logger) logf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf(format, args...))
}

// take returns the warnings so far and forgets them.
func (l *logger) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	lines := l.lines
	l.lines = nil
	return lines
}

func openDB(t *testing.T, dir string) (*DB, *logger) {
	t.Helper()
	l := new(logger)
	db, err := Open(dir, l.logf)
	if err != nil {
		t.Fatal(err)
	}
	return db, l
}

func mustPut(t *testing.T, db *DB, r *api.TuneRecord, want bool) {
	t.Helper()
	stored, err := db.Put(r)
	if err != nil {
		t.Fatal(err)
	}
	if stored != want {
		t.Fatalf("Put(%s, %v): stored %v, want %v", r.OpName, r.BestSeconds, stored, want)
	}
}

func mustGet(t *testing.T, db *DB, k *api.TuneKey) *api.TuneRecord {
	t.Helper()
	r, ok, err := db.Get(k)
	if err != nil || !ok {
		t.Fatalf("Get(%s): %v %v", k.Kernel, ok, err)
	}
	return r
}

// noTemps fails if the directory holds anything but entries and locks.
func noTemps(t *testing.T, dir string) {
	t.Helper()
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if !validID(strings.TrimSuffix(e.Name(), ".lock")) {
			t.Errorf("left in the directory: %s", e.Name())
		}
	}
}

func TestPutGetRoundTrip(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tune")
	db, l := openDB(t, dir)
	k := key("matmul-1")
	if r, ok, err := db.Get(k); r != nil || ok || err != nil {
		t.Fatalf("Get of an empty database: %v %v %v", r, ok, err)
	}
	want := record(k, "matmul", 2e-3)
	mustPut(t, db, want, true)
	if got := mustGet(t, db, key("matmul-1")); !proto.Equal(got, want) {
		t.Errorf("got %v\nwant %v", got, want)
	}
	// A second DB stands for another process.
	db2, _ := openDB(t, dir)
	if got := mustGet(t, db2, k); !proto.Equal(got, want) {
		t.Errorf("second DB: got %v", got)
	}
	id := ID(k)
	if !validID(id) || id != ID(proto.Clone(k).(*api.TuneKey)) {
		t.Errorf("ID %q", id)
	}
	for path, mode := range map[string]os.FileMode{dir: 0o700, filepath.Join(dir, id): 0o600} {
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != mode {
			t.Errorf("%s: %v %v, want mode %v", path, fi, err, mode)
		}
	}
	payload, err := proto.MarshalOptions{Deterministic: true}.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, id)); err != nil || !bytes.Equal(b, frameRaw(payload)) {
		t.Errorf("entry file is not in the documented format: %q, %v", b, err)
	}
	noTemps(t, dir)
	if w := l.take(); len(w) != 0 {
		t.Errorf("warnings: %q", w)
	}
	if db.Dir() != dir {
		t.Errorf("Dir %q", db.Dir())
	}
}

func TestFasterWins(t *testing.T) {
	db, _ := openDB(t, t.TempDir())
	k := key("k")
	mustPut(t, db, record(k, "a", 2e-3), true)
	mustPut(t, db, record(k, "slower", 3e-3), false)
	if got := mustGet(t, db, k); got.OpName != "a" || got.BestSeconds != 2e-3 {
		t.Errorf("a slower record replaced a faster one: %v", got)
	}
	mustPut(t, db, record(k, "faster", 1e-3), true)
	mustPut(t, db, record(k, "tie", 1e-3), true)
	if got := mustGet(t, db, k); got.OpName != "tie" {
		t.Errorf("after a tie: %v", got)
	}
	for _, bad := range []*api.TuneRecord{
		{OpName: "no key", BestSeconds: 1},
		record(k, "zero", 0),
		record(k, "negative", -1),
		record(k, "nan", math.NaN()),
		record(k, "inf", math.Inf(1)),
		record(&api.TuneKey{Kernel: "\xff"}, "utf8", 1),
		nil,
	} {
		if _, err := db.Put(bad); err == nil {
			t.Errorf("Put(%v) stored an invalid record", bad)
		}
	}
	if _, _, err := db.Get(nil); err == nil {
		t.Error("Get(nil) did not fail")
	}
	if got := mustGet(t, db, k); got.OpName != "tie" {
		t.Errorf("after invalid Puts: %v", got)
	}
}

// Replace stores a slower record (a joint choice), but never a pick over
// a tuned record.
func TestReplace(t *testing.T) {
	db, _ := openDB(t, t.TempDir())
	k := key("k")
	mustPut(t, db, record(k, "fast", 1e-3), true)
	if stored, err := db.Replace(record(k, "joint", 2e-3)); err != nil || !stored {
		t.Fatalf("Replace: stored %v, %v", stored, err)
	}
	if got := mustGet(t, db, k); got.OpName != "joint" || got.BestSeconds != 2e-3 {
		t.Errorf("after Replace: %v", got)
	}
	pick := record(k, "pick", 1e-4)
	pick.Trials = 0
	if stored, err := db.Replace(pick); err != nil || stored {
		t.Errorf("a pick replaced a tuned record: stored %v, %v", stored, err)
	}
	if _, err := db.Replace(record(k, "zero", 0)); err == nil {
		t.Error("Replace stored an invalid record")
	}
}

func TestDistinctIDs(t *testing.T) {
	db, _ := openDB(t, t.TempDir())
	base := key("k")
	variant := func(f func(k *api.TuneKey)) *api.TuneKey {
		k := proto.Clone(base).(*api.TuneKey)
		f(k)
		return k
	}
	keys := []*api.TuneKey{
		base,
		variant(func(k *api.TuneKey) { k.Kernel = "k2" }),
		variant(func(k *api.TuneKey) { k.Target = "Other CPU avx512f" }),
		variant(func(k *api.TuneKey) { k.Version = "test-2" }),
		variant(func(k *api.TuneKey) { k.Tensors = []string{"x:float32[4,16]", "y:float32[8]"} }),
		variant(func(k *api.TuneKey) { k.Tensors = []string{"y:float32[8]", "x:float32[4,8]"} }),
		variant(func(k *api.TuneKey) { k.Tensors = k.Tensors[:1] }),
	}
	seen := map[string]int{}
	for i, k := range keys {
		id := ID(k)
		if j, ok := seen[id]; ok {
			t.Errorf("keys %d and %d share id %s", j, i, id)
		}
		seen[id] = i
		mustPut(t, db, record(k, "op"+strconv.Itoa(i), float64(i+1)), true)
	}
	for i, k := range keys {
		if got := mustGet(t, db, k); got.OpName != "op"+strconv.Itoa(i) {
			t.Errorf("key %d holds %s", i, got.OpName)
		}
	}
	if entries, err := db.List(); err != nil || len(entries) != len(keys) {
		t.Errorf("List: %d entries, %v", len(entries), err)
	}
}

// frameRaw frames payload as the package comment says.
func frameRaw(payload []byte) []byte {
	sum := sha256.Sum256(payload)
	b := append([]byte("NFTUNE1\n"), sum[:]...)
	b = binary.LittleEndian.AppendUint64(b, uint64(len(payload)))
	return append(b, payload...)
}

func TestCorruption(t *testing.T) {
	k, other := key("victim"), key("other")
	valid, err := frame(record(k, "victim", 1e-3))
	if err != nil {
		t.Fatal(err)
	}
	otherFile, _ := frame(record(other, "other", 1e-3))
	noKey, _ := frame(&api.TuneRecord{OpName: "keyless", BestSeconds: 1})
	with := func(f func(b []byte) []byte) []byte { return f(bytes.Clone(valid)) }
	for _, c := range []struct {
		name, reason string
		content      []byte
	}{
		{"empty", "empty file", nil},
		{"truncated magic", "truncated", valid[:4]},
		{"truncated header", "inside the 48-byte header", valid[:30]},
		{"truncated payload", "truncated", valid[:len(valid)-10]},
		{"flipped payload byte", "checksum mismatch", with(func(b []byte) []byte { b[len(b)-3] ^= 0x40; return b })},
		{"flipped checksum byte", "checksum mismatch", with(func(b []byte) []byte { b[10] ^= 1; return b })},
		{"bad magic", "bad magic", with(func(b []byte) []byte { copy(b, "XXTUNE1\n"); return b })},
		{"foreign format version", "unsupported format", with(func(b []byte) []byte { copy(b, "NFTUNE2\n"); return b })},
		{"trailing bytes", "wrong length", append(bytes.Clone(valid), "junk"...)},
		{"wrong length field", "wrong length", with(func(b []byte) []byte {
			binary.LittleEndian.PutUint64(b[40:], uint64(len(b)-headerLen-1))
			return b
		})},
		{"garbage payload, valid checksum", "unparsable record", frameRaw([]byte("garbage, not a protobuf record"))},
		{"no key", "no key", noKey},
		{"another key's record", "not of its file name", otherFile},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			db, l := openDB(t, dir)
			mustPut(t, db, record(other, "other", 1e-3), true)
			path := filepath.Join(dir, ID(k))
			corrupt := func() {
				t.Helper()
				if err := os.WriteFile(path, c.content, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			warned := func(what string) {
				t.Helper()
				w := l.take()
				if len(w) != 1 || !strings.Contains(w[0], path) || !strings.Contains(w[0], c.reason) {
					t.Errorf("%s: warnings %q, want one naming %s and %q", what, w, path, c.reason)
				}
			}

			corrupt()
			entries, err := db.List()
			if err != nil || len(entries) != 1 || entries[0].Record.OpName != "other" {
				t.Errorf("List: %v %v", entries, err)
			}
			warned("List")

			corrupt()
			r, ok, err := db.Get(k)
			if r != nil || ok || err != nil {
				t.Errorf("Get: %v %v %v", r, ok, err)
			}
			warned("Get")
			if _, err := os.Stat(path + ".corrupt"); err != nil {
				t.Errorf("not moved aside: %v", err)
			}
			if r, ok, err := db.Get(k); r != nil || ok || err != nil {
				t.Errorf("second Get: %v %v %v", r, ok, err)
			}
			if w := l.take(); len(w) != 0 {
				t.Errorf("reported again: %q", w)
			}

			corrupt()
			mustPut(t, db, record(k, "victim", 2e-3), true)
			warned("Put")
			if got := mustGet(t, db, k); got.BestSeconds != 2e-3 {
				t.Errorf("after Put: %v", got)
			}
			if got := mustGet(t, db, other); got.OpName != "other" {
				t.Errorf("the other record: %v", got)
			}
		})
	}
}

func TestIgnoresUnrelatedFiles(t *testing.T) {
	dir := t.TempDir()
	db, l := openDB(t, dir)
	k := key("k")
	mustPut(t, db, record(k, "op", 1), true)
	id := ID(k)
	for _, name := range []string{"README", id + ".lock", id + ".123.tmp", id + ".corrupt", strings.ToUpper(id), id[:31]} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("junk"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	os.Mkdir(filepath.Join(dir, strings.Repeat("ab", 16)), 0o700)
	entries, err := db.List()
	if err != nil || len(entries) != 1 || entries[0].ID != id {
		t.Errorf("List: %v %v", entries, err)
	}
	if w := l.take(); len(w) != 0 {
		t.Errorf("warnings: %q", w)
	}
}

// collidingKeys returns two keys whose ids share their first 4 digits.
func collidingKeys() (*api.TuneKey, *api.TuneKey) {
	seen := map[string]*api.TuneKey{}
	for i := 0; ; i++ {
		k := key("k" + strconv.Itoa(i))
		p := ID(k)[:4]
		if o, ok := seen[p]; ok {
			return o, k
		}
		seen[p] = k
	}
}

func TestFindRemoveClear(t *testing.T) {
	dir := t.TempDir()
	db, _ := openDB(t, dir)
	a, b := collidingKeys()
	c := key("c")
	for i, k := range []*api.TuneKey{a, b, c} {
		mustPut(t, db, record(k, "op"+strconv.Itoa(i), 1), true)
	}
	idA, idC := ID(a), ID(c)
	for _, p := range []string{idC[:4], strings.ToUpper(idC[:8]), idC} {
		if e, err := db.Find(p); err != nil || e.ID != idC || e.Record.OpName != "op2" {
			t.Errorf("Find(%q): %v %v", p, e, err)
		}
	}
	for p, want := range map[string]string{
		idA[:4]:                  "ambiguous",
		idA[:3]:                  "too short",
		"zzzz":                   "not an id prefix",
		idA + "0":                "not an id prefix",
		nonMatching(db, idA[:4]): "no record with id prefix",
	} {
		if _, err := db.Find(p); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Find(%q): %v, want %q", p, err, want)
		}
	}
	if e, err := db.Find(ID(b)[:12]); err != nil || e.Record.OpName != "op1" {
		t.Errorf("Find of a longer prefix: %v %v", e, err)
	}

	if err := db.Remove(idA); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := db.Get(a); ok {
		t.Error("removed record still there")
	}
	if err := db.Remove(idA); err == nil || !strings.Contains(err.Error(), "no record") {
		t.Errorf("second Remove: %v", err)
	}
	if err := db.Remove("../x"); err == nil {
		t.Error("Remove accepted an invalid id")
	}
	os.WriteFile(filepath.Join(dir, idA+".corrupt"), []byte("x"), 0o600)
	n, err := db.Clear()
	if err != nil || n != 2 {
		t.Errorf("Clear: %d %v, want 2", n, err)
	}
	if entries, _ := db.List(); len(entries) != 0 {
		t.Errorf("after Clear: %v", entries)
	}
	if _, err := os.Stat(filepath.Join(dir, idA+".corrupt")); !os.IsNotExist(err) {
		t.Errorf(".corrupt file survived Clear: %v", err)
	}
	noTemps(t, dir)
}

// nonMatching returns a 4-digit prefix of no id in db other than avoid.
func nonMatching(db *DB, avoid string) string {
	ids, _ := db.ids()
	for i := 0; ; i++ {
		p := fmt.Sprintf("%04x", i)
		ok := p != avoid
		for _, id := range ids {
			ok = ok && !strings.HasPrefix(id, p)
		}
		if ok {
			return p
		}
	}
}

func TestExportImport(t *testing.T) {
	src, _ := openDB(t, t.TempDir())
	for i, k := range []*api.TuneKey{key("a"), key("b"), key("c")} {
		mustPut(t, src, record(k, "op"+strconv.Itoa(i), float64(i+1)*1e-3), true)
	}
	var all bytes.Buffer
	if n, err := src.Export(&all); err != nil || n != 3 {
		t.Fatalf("Export: %d %v", n, err)
	}
	dst, l := openDB(t, t.TempDir())
	if n, err := dst.Import(bytes.NewReader(all.Bytes())); err != nil || n != 3 {
		t.Fatalf("Import: %d %v", n, err)
	}
	want, _ := src.List()
	got, _ := dst.List()
	if len(got) != len(want) {
		t.Fatalf("imported %d records, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i].ID != want[i].ID || !proto.Equal(got[i].Record, want[i].Record) {
			t.Errorf("record %d: %v, want %v", i, got[i], want[i])
		}
	}

	// Merging: a faster local record survives an import.
	mustPut(t, dst, record(key("a"), "local", 0.5e-3), true)
	if n, err := dst.Import(bytes.NewReader(all.Bytes())); err != nil || n != 2 {
		t.Errorf("re-import: %d %v, want 2 stored", n, err)
	}
	if r := mustGet(t, dst, key("a")); r.OpName != "local" {
		t.Errorf("import replaced a faster record: %v", r)
	}

	// Selected ids.
	var one bytes.Buffer
	if n, err := src.Export(&one, ID(key("b")), ID(key("b"))); err != nil || n != 1 {
		t.Fatalf("Export of one id: %d %v", n, err)
	}
	sel, _ := openDB(t, t.TempDir())
	if n, err := sel.Import(&one); err != nil || n != 1 {
		t.Errorf("Import of one: %d %v", n, err)
	}
	if _, err := src.Export(&one, ID(key("none"))); err == nil || !strings.Contains(err.Error(), "no record") {
		t.Errorf("Export of a missing id: %v", err)
	}

	// Corrupt exports import nothing.
	b := all.Bytes()
	badRecord, _ := frame(&api.TuneExport{Records: []*api.TuneRecord{record(key("z"), "z", 1), {OpName: "keyless", BestSeconds: 1}}})
	for name, c := range map[string]struct {
		content []byte
		want    string
	}{
		"flipped byte":  {append(bytes.Clone(b[:len(b)-1]), b[len(b)-1]^1), "checksum mismatch"},
		"truncated":     {b[:len(b)-7], "truncated"},
		"not an export": {[]byte("hello, world\n"), "bad magic"},
		"garbage":       {frameRaw([]byte("\xff\xff\xff")), "unparsable"},
		"bad record":    {badRecord, "record 1: the record has no key"},
	} {
		fresh, _ := openDB(t, t.TempDir())
		n, err := fresh.Import(bytes.NewReader(c.content))
		if err == nil || n != 0 || !strings.Contains(err.Error(), "corrupt export") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Import %d, %v; want an error naming %q", name, n, err, c.want)
		}
		if entries, _ := fresh.List(); len(entries) != 0 {
			t.Errorf("%s: imported %d records", name, len(entries))
		}
	}
	if w := l.take(); len(w) != 0 {
		t.Errorf("warnings: %q", w)
	}
}

func TestRefusesGroupWritable(t *testing.T) {
	for _, mode := range []os.FileMode{0o770, 0o707} {
		dir := filepath.Join(t.TempDir(), "tune")
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		os.Chmod(dir, mode)
		_, err := Open(dir, nil)
		if err == nil || !strings.Contains(err.Error(), "refusing to use "+dir) || !strings.Contains(err.Error(), "group- or world-writable") {
			t.Errorf("mode %v: %v", mode, err)
		}
	}
	if _, err := Open("", nil); err == nil {
		t.Error("Open of no directory")
	}
}

// Concurrency: workers Put records of shared keys and of their own key.
// Times shrink over the iterations, so that most Puts store, and overlap
// between workers, so that lost updates (a slower record written over a
// faster one) would show.
const (
	workers    = 4
	iterations = 40
	sharedKeys = 3
)

func workerKeys(w int) []*api.TuneKey {
	var ks []*api.TuneKey
	for j := range sharedKeys {
		ks = append(ks, key("shared"+strconv.Itoa(j)))
	}
	return append(ks, key("own"+strconv.Itoa(w)))
}

func workerTime(w, i, j int) float64 {
	return float64((iterations-i)*100+(w*37+j*11+i*7)%150) * 1e-6
}

// putAll runs worker w's Puts, starting at start.
func putAll(db *DB, w int, start time.Time) error {
	time.Sleep(time.Until(start))
	for i := range iterations {
		for j, k := range workerKeys(w) {
			r := record(k, "w"+strconv.Itoa(w), workerTime(w, i, j))
			r.Seed = int64(w*1000 + i)
			if _, err := db.Put(r); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkFastest verifies every file in dir and that each key holds the
// fastest time put.
func checkFastest(t *testing.T, dir string) {
	t.Helper()
	db, l := openDB(t, dir)
	best := map[string]float64{}
	for w := range workers {
		for j, k := range workerKeys(w) {
			for i := range iterations {
				id := ID(k)
				if v, ok := best[id]; !ok || workerTime(w, i, j) < v {
					best[id] = workerTime(w, i, j)
				}
			}
		}
	}
	ids, err := db.ids()
	if err != nil || len(ids) != len(best) {
		t.Errorf("%d entry files, want %d (%v)", len(ids), len(best), err)
	}
	for _, id := range ids {
		b, err := os.ReadFile(filepath.Join(dir, id))
		if err != nil {
			t.Fatal(err)
		}
		r, problem := parseEntry(id, b)
		if problem != "" {
			t.Errorf("%s: %s", id, problem)
			continue
		}
		if r.BestSeconds != best[id] {
			t.Errorf("%s (%s): best %v, want the fastest %v", id, r.Key.Kernel, r.BestSeconds, best[id])
		}
	}
	if w := l.take(); len(w) != 0 {
		t.Errorf("warnings: %q", w)
	}
	noTemps(t, dir)
}

func TestConcurrentGoroutines(t *testing.T) {
	dir := t.TempDir()
	shared, l := openDB(t, dir)
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	start := time.Now().Add(20 * time.Millisecond)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			db := shared
			if w%2 == 1 {
				var err error
				if db, err = Open(dir, l.logf); err != nil {
					errs <- err
					return
				}
			}
			errs <- putAll(db, w, start)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if w := l.take(); len(w) != 0 {
		t.Errorf("warnings: %q", w)
	}
	checkFastest(t, dir)
}

// TestConcurrentProcesses runs the workers in separate processes (this
// test binary re-executed).
func TestConcurrentProcesses(t *testing.T) {
	dir := t.TempDir()
	cmds := make([]*exec.Cmd, workers)
	outs := make([]bytes.Buffer, workers)
	// The workers start together, after the processes have started.
	start := strconv.FormatInt(time.Now().Add(300*time.Millisecond).UnixNano(), 10)
	for w := range cmds {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
		cmd.Env = append(os.Environ(), "NEOFLOW_TUNEDB_HELPER_DIR="+dir, "NEOFLOW_TUNEDB_HELPER_WORKER="+strconv.Itoa(w), "NEOFLOW_TUNEDB_HELPER_START="+start)
		cmd.Stdout, cmd.Stderr = &outs[w], &outs[w]
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds[w] = cmd
	}
	for w, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Errorf("worker %d: %v\n%s", w, err, outs[w].String())
		}
	}
	checkFastest(t, dir)
}

func TestHelperProcess(t *testing.T) {
	dir := os.Getenv("NEOFLOW_TUNEDB_HELPER_DIR")
	if dir == "" {
		t.Skip("helper for TestConcurrentProcesses")
	}
	w, err := strconv.Atoi(os.Getenv("NEOFLOW_TUNEDB_HELPER_WORKER"))
	if err != nil {
		t.Fatal(err)
	}
	start, err := strconv.ParseInt(os.Getenv("NEOFLOW_TUNEDB_HELPER_START"), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	db, err := Open(dir, func(format string, args ...any) { t.Errorf("warning: "+format, args...) })
	if err != nil {
		t.Fatal(err)
	}
	if err := putAll(db, w, time.Unix(0, start)); err != nil {
		t.Fatal(err)
	}
}

// A record of no trials is a pick of the first build's schedules: a tuned
// record replaces it even when it measured slower, and it never replaces
// a tuned one.
func TestPickAndTunedRecords(t *testing.T) {
	db, _ := openDB(t, t.TempDir())
	k := key("k")
	pick := record(k, "pick", 1e-3)
	pick.Trials = 0
	mustPut(t, db, pick, true)
	tuned := record(k, "tuned", 2e-3)
	tuned.Trials = 16
	mustPut(t, db, tuned, true)
	faster := record(k, "faster pick", 1e-4)
	faster.Trials = 0
	mustPut(t, db, faster, false)
	if got := mustGet(t, db, k); got.OpName != "tuned" {
		t.Errorf("stored %q, want the tuned record", got.OpName)
	}
}
