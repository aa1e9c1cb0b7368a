package bundle

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/neoflow/neoflow/kernels/cc"
)

var target = Target{HostID: strings.Repeat("ab", 32), Host: "linux/amd64\nmodel name:Test CPU", Flags: []string{"-O3", "-march=native"}}

const key = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// goodBundle compiles a tiny shared object and writes a bundle of it,
// with one tuning record and fusion rates, into dir.
func goodBundle(t *testing.T, dir string) string {
	t.Helper()
	so := filepath.Join(dir, "k.so")
	if err := (cc.Compiler{}).Compile(context.Background(), "int nf_seven(void) { return 7; }\n", so); err != nil {
		t.Skipf("no C compiler: %v", err)
	}
	path := filepath.Join(dir, "b.nfb")
	c := Contents{Target: target, Version: "9.9", Kernels: []Kernel{{Key: key, Op: "seven", Path: so}, {Key: key, Op: "seven", Path: so}},
		Records: []byte("record bytes"), NumRecords: 1, FusionRates: json.RawMessage(`{"CallOps":60}`)}
	m, err := Write(path, c)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Kernels) != 1 || m.Tuning == nil || m.Tuning.Records != 1 {
		t.Fatalf("manifest %+v: want one kernel (keys are deduplicated) and one record", m)
	}
	return path
}

// TestRoundTrip writes a bundle and opens it: the manifest, records and
// rates come back, the kernel loads (extracted once, again after the
// extracted file is damaged), and a key it lacks is not found.
func TestRoundTrip(t *testing.T) {
	dir := t.TempDir()
	b, err := Open(goodBundle(t, dir), target, "9.9", filepath.Join(dir, "x"))
	if err != nil {
		t.Fatal(err)
	}
	var rates bytes.Buffer
	_ = json.Compact(&rates, b.Manifest().FusionRates)
	if b.Len() != 1 || string(b.Records()) != "record bytes" || rates.String() != `{"CallOps":60}` {
		t.Fatalf("bundle %d kernels, records %q, rates %s", b.Len(), b.Records(), rates.String())
	}
	lib, path, ok, err := b.Library(key)
	if err != nil || !ok {
		t.Fatalf("Library: ok %v, %v", ok, err)
	}
	if _, err := lib.Symbol("nf_seven"); err != nil {
		t.Fatal(err)
	}
	_ = lib.Close()
	if _, _, ok, err := b.Library(strings.Repeat("cd", 32)); ok || err != nil {
		t.Fatalf("a key the bundle lacks: ok %v, %v", ok, err)
	}
	// A damaged extracted file is extracted again by the next process.
	if err := os.WriteFile(path, []byte("not a shared object"), 0o700); err != nil {
		t.Fatal(err)
	}
	b2, err := Open(b.Path(), target, "9.9", filepath.Join(dir, "x"))
	if err != nil {
		t.Fatal(err)
	}
	lib, _, _, err = b2.Library(key)
	if err != nil {
		t.Fatalf("after damage to the extracted kernel: %v", err)
	}
	_ = lib.Close()
}

// rezip copies the bundle src to dst, passing each member through edit
// (nil drops it).
func rezip(t *testing.T, src, dst string, edit func(name string, data []byte) []byte) {
	t.Helper()
	zr, err := zip.OpenReader(src)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, f := range zr.File {
		r, _ := f.Open()
		data, _ := io.ReadAll(r)
		r.Close()
		if data = edit(f.Name, data); data == nil {
			continue
		}
		w, _ := zw.Create(f.Name)
		w.Write(data)
	}
	zw.Close()
	if err := os.WriteFile(dst, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
}

// editManifest returns an edit that changes the manifest with fn.
func editManifest(fn func(m *Manifest)) func(string, []byte) []byte {
	return func(name string, data []byte) []byte {
		if name != manifestName {
			return data
		}
		var m Manifest
		_ = json.Unmarshal(data, &m)
		fn(&m)
		out, _ := json.Marshal(m)
		return out
	}
}

// TestRefusals checks that Open refuses, naming the problem, a bundle
// for another target, version or flags, one whose files do not match
// their checksums or are missing, and files that are not bundles.
func TestRefusals(t *testing.T) {
	dir := t.TempDir()
	good := goodBundle(t, dir)
	keep := func(_ string, data []byte) []byte { return data }
	cases := []struct {
		name string
		edit func(string, []byte) []byte
		tgt  Target
		ver  string
		want string
	}{
		{"good", keep, target, "9.9", ""},
		{"foreign host", keep, Target{HostID: strings.Repeat("ef", 32), Host: "linux/arm64", Flags: target.Flags}, "9.9", "built for another target"},
		{"other flags", keep, Target{HostID: target.HostID, Host: target.Host, Flags: []string{"-O2"}}, "9.9", "compiled with flags"},
		{"other version", keep, target, "9.10", "made by neoflow 9.9, this is neoflow 9.10"},
		{"corrupt kernel", func(name string, data []byte) []byte {
			if strings.HasPrefix(name, "kernels/") {
				data = bytes.Clone(data)
				data[len(data)/2] ^= 0xff
			}
			return data
		}, target, "9.9", "does not match its checksum"},
		{"corrupt records", func(name string, data []byte) []byte {
			if name == recordsName {
				return []byte("other bytes!")
			}
			return data
		}, target, "9.9", "does not match its checksum"},
		{"missing kernel", func(name string, data []byte) []byte {
			if strings.HasPrefix(name, "kernels/") {
				return nil
			}
			return data
		}, target, "9.9", "no kernels/"},
		{"no manifest", func(name string, data []byte) []byte {
			if name == manifestName {
				return nil
			}
			return data
		}, target, "9.9", "not a neoflow kernel bundle"},
		{"manifest not JSON", func(name string, data []byte) []byte {
			if name == manifestName {
				return []byte("{")
			}
			return data
		}, target, "9.9", "unreadable manifest"},
		{"future format", editManifest(func(m *Manifest) { m.Format = 2 }), target, "9.9", "manifest format 2"},
		{"entry outside kernels/", editManifest(func(m *Manifest) { m.Kernels[0].File = "../../evil.so" }), target, "9.9", "is malformed"},
	}
	for i, tc := range cases {
		path := filepath.Join(dir, "case"+string(rune('a'+i))+".nfb")
		rezip(t, good, path, tc.edit)
		_, err := Open(path, tc.tgt, tc.ver, filepath.Join(dir, "x"))
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: got %v, want an error containing %q", tc.name, err, tc.want)
		}
	}
	junk := filepath.Join(dir, "junk.nfb")
	if err := os.WriteFile(junk, []byte("PK not really a zip"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(junk, target, "9.9", dir); err == nil || !strings.Contains(err.Error(), "not a readable bundle") {
		t.Errorf("junk file: %v", err)
	}
}
