package torchbridge

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/neoflow/neoflow/api"
)

// The fusion reward's rates are measured once and kept in the cache
// directory: a second runtime reads them; a damaged file or other
// settings are measured again.
func TestMachineRatesAreMeasuredOnceAndKept(t *testing.T) {
	dir := t.TempDir()
	r := New()
	if _, err := r.Init(&api.InitRequest{CacheDir: dir, NumThreads: 2}); err != nil {
		t.Fatal(err)
	}
	m := r.machineRates()
	if m.BytesPerSec < 1e8 || m.OpsPerSec < 1e7 || m.NestSec < 0 || m.NestSec > 1e-2 || m.CallOps < 1 || m.CallOps > 1e4 ||
		m.LLCBytesPerSec < 1e8 || m.LLCBytes <= 0 || m.AccumulatorOps < 1 || m.AccumulatorOps > 1e3 {
		t.Fatalf("implausible rates %+v (warnings %v)", m, r.takeWarnings())
	}
	path := filepath.Join(dir, machineFile)
	kept, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// A second runtime reads the file: change it and see the change.
	if err := os.WriteFile(path, []byte(replaceRate(t, kept)), 0o644); err != nil {
		t.Fatal(err)
	}
	r2 := New()
	if _, err := r2.Init(&api.InitRequest{CacheDir: dir, NumThreads: 2}); err != nil {
		t.Fatal(err)
	}
	if got := r2.machineRates(); got.NestSec != 0.125 {
		t.Fatalf("the kept rates were not read: %+v", got)
	}
	// Damaged, kept by a neoflow that did not measure the cost of a math
	// call, the last-level cache or accumulators, or measured with
	// another thread count: measured again.
	noCalls := strings.Replace(replaceRate(t, kept), `"CallOps":`, `"CallOps":0,"Old":`, 1)
	noLLC := strings.Replace(replaceRate(t, kept), `"LLCBytesPerSec":`, `"LLCBytesPerSec":0,"Old":`, 1)
	noAcc := strings.Replace(replaceRate(t, kept), `"AccumulatorOps":`, `"AccumulatorOps":0,"Old":`, 1)
	damaged := []string{"{not json", noCalls, noLLC, noAcc}
	for i, init := range []*api.InitRequest{{CacheDir: dir, NumThreads: 2}, {CacheDir: dir, NumThreads: 2}, {CacheDir: dir, NumThreads: 2},
		{CacheDir: dir, NumThreads: 2}, {CacheDir: dir, NumThreads: 1}} {
		if i < len(damaged) {
			if err := os.WriteFile(path, []byte(damaged[i]), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		r3 := New()
		if _, err := r3.Init(init); err != nil {
			t.Fatal(err)
		}
		if got := r3.machineRates(); got.NestSec == 0.125 || got.BytesPerSec <= 0 {
			t.Fatalf("threads %d: rates %+v were not measured again", init.NumThreads, got)
		}
	}
}

// replaceRate sets the kept nest cost to 0.125 s.
func replaceRate(t *testing.T, data []byte) string {
	t.Helper()
	var rec machineRecord
	if err := json.Unmarshal(data, &rec); err != nil {
		t.Fatal(err)
	}
	rec.Rates.NestSec = 0.125
	out, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}
