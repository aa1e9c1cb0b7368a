package tunedb

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"

	"github.com/neoflow/neoflow/api"
)

func run(t *testing.T, db *DB, args ...string) string {
	t.Helper()
	var out bytes.Buffer
	if err := Run(db, args, &out); err != nil {
		t.Fatalf("Run %q: %v", args, err)
	}
	return out.String()
}

// twoRecords fills db with a conv (1 ms, default 1.5 ms) and an add
// (0.25 ms, no default time) record.
func twoRecords(t *testing.T, db *DB) (conv, add *api.TuneRecord) {
	t.Helper()
	conv = record(key("conv-kernel"), "conv2d", 1e-3)
	add = record(key("add-kernel"), "add", 0.25e-3)
	add.DefaultSeconds, add.Trials, add.Created = 0, 3, ""
	mustPut(t, db, conv, true)
	mustPut(t, db, add, true)
	return conv, add
}

func TestRunList(t *testing.T) {
	db, _ := openDB(t, t.TempDir())
	if out := run(t, db, "list"); out != "no records in "+db.Dir()+"\n" {
		t.Errorf("empty list: %q", out)
	}
	conv, add := twoRecords(t, db)
	out := run(t, db, "list")
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 4 {
		t.Fatalf("list:\n%s", out)
	}
	fields := func(line string) []string { return strings.Fields(line) }
	want := [][]string{
		{"ID", "OP", "BEST", "MS", "DEFAULT", "MS", "SPEEDUP", "TRIALS", "CREATED"},
		{ID(add.Key)[:12], "add", "0.25", "-", "-", "3", "-"},
		{ID(conv.Key)[:12], "conv2d", "1", "1.5", "1.50x", "40", "2025-01-02T03:04:05Z"},
		{"2", "records", "in", db.Dir()},
	}
	for i, w := range want {
		if got := fields(lines[i]); strings.Join(got, " ") != strings.Join(w, " ") {
			t.Errorf("line %d: %q, want fields %q", i, lines[i], w)
		}
	}
	// Columns are aligned.
	if strings.Index(lines[1], "add") != strings.Index(lines[0], "OP") || strings.Index(lines[2], "1.50x") != strings.Index(lines[0], "SPEEDUP") {
		t.Errorf("columns not aligned:\n%s", out)
	}
}

func TestRunShow(t *testing.T) {
	db, _ := openDB(t, t.TempDir())
	conv, _ := twoRecords(t, db)
	id := ID(conv.Key)
	out := run(t, db, "show", id[:6])
	squeezed := regexp.MustCompile(`[ \t]+`).ReplaceAllString(out, " ")
	for _, want := range []string{
		"id " + id + "\n",
		"op conv2d\n",
		"kernel conv-kernel\n",
		"tensors x:float32[4,8]\n y:float32[8]\n",
		"target Test CPU avx2 fma\n",
		"version test-1\n",
		"created 2025-01-02T03:04:05Z\n",
		"seed 7\n",
		"trials 40\n",
		"best 1 ms\n",
		"default 1.5 ms (speedup 1.50x)\n",
		"schedules 2 statements\n",
		"failures 1\n",
		"failure 1: compiling: vector width 16 does not divide extent 8\n",
	} {
		if !strings.Contains(squeezed, want) {
			t.Errorf("show lacks %q:\n%s", want, out)
		}
	}
	// The schedules are protobuf text (whose spacing varies on purpose):
	// each must parse back to the stored schedule.
	lines := strings.Split(out, "\n")
	block := func(header string) string {
		for i, l := range lines {
			if l == header {
				var text []string
				for _, l := range lines[i+1:] {
					if !strings.HasPrefix(l, "  ") {
						break
					}
					text = append(text, l)
				}
				return strings.Join(text, "\n")
			}
		}
		t.Errorf("show lacks a line %q:\n%s", header, out)
		return ""
	}
	parsesTo := func(what, text string, want *api.StmtSchedule) {
		got := new(api.StmtSchedule)
		if err := prototext.Unmarshal([]byte(text), got); err != nil || !proto.Equal(got, want) {
			t.Errorf("%s: %q parses to %v, %v; want %v", what, text, got, err, want)
		}
	}
	parsesTo("statement 0", block("statement 0:"), conv.Schedules[0])
	parsesTo("statement 1", block("statement 1:"), conv.Schedules[1])
	if !strings.Contains(block("statement 1:"), "\n    splits:") {
		t.Errorf("statement 1 is not one field per line:\n%s", out)
	}
	failed := block("failure 1: compiling: vector width 16 does not divide extent 8")
	text, ok := strings.CutPrefix(failed, "  statement 0: ")
	if !ok || strings.Contains(text, "\n") {
		t.Errorf("failure schedule %q is not one line after \"statement 0: \"", failed)
	}
	parsesTo("failure 1", text, conv.Failures[0].Schedules[0])
}

func TestRunClear(t *testing.T) {
	db, _ := openDB(t, t.TempDir())
	conv, add := twoRecords(t, db)
	id := ID(conv.Key)
	if out := run(t, db, "clear", id[:8]); out != "removed "+id+" (conv2d)\n" {
		t.Errorf("clear one: %q", out)
	}
	if _, ok, _ := db.Get(conv.Key); ok {
		t.Error("cleared record still there")
	}
	if _, ok, _ := db.Get(add.Key); !ok {
		t.Error("clear of one record removed another")
	}
	if out := run(t, db, "clear"); out != "removed 1 records from "+db.Dir()+"\n" {
		t.Errorf("clear all: %q", out)
	}
	if entries, _ := db.List(); len(entries) != 0 {
		t.Errorf("after clear: %v", entries)
	}
}

func TestRunExportImport(t *testing.T) {
	src, _ := openDB(t, t.TempDir())
	conv, add := twoRecords(t, src)
	files := t.TempDir()
	all, one := filepath.Join(files, "all.nftune"), filepath.Join(files, "one.nftune")
	if out := run(t, src, "export", all); out != "exported 2 records to "+all+"\n" {
		t.Errorf("export: %q", out)
	}
	if fi, err := os.Stat(all); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("export file: %v %v", fi, err)
	}
	if out := run(t, src, "export", one, ID(add.Key)[:5]); out != "exported 1 records to "+one+"\n" {
		t.Errorf("export one: %q", out)
	}
	dst, _ := openDB(t, t.TempDir())
	if out := run(t, dst, "import", one); out != "imported 1 records from "+one+" into "+dst.Dir()+"\n" {
		t.Errorf("import one: %q", out)
	}
	if out := run(t, dst, "import", all); out != "imported 2 records from "+all+" into "+dst.Dir()+"\n" {
		t.Errorf("import all: %q", out)
	}
	for _, k := range []*api.TuneKey{conv.Key, add.Key} {
		mustGet(t, dst, k)
	}

	b, _ := os.ReadFile(all)
	b[len(b)-1] ^= 1
	bad := filepath.Join(files, "bad.nftune")
	os.WriteFile(bad, b, 0o600)
	fresh, _ := openDB(t, t.TempDir())
	err := Run(fresh, []string{"import", bad}, new(bytes.Buffer))
	if err == nil || !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), "checksum mismatch") {
		t.Errorf("import of a corrupt export: %v", err)
	}
	if entries, _ := fresh.List(); len(entries) != 0 {
		t.Errorf("a corrupt export imported %d records", len(entries))
	}
}

func TestRunErrors(t *testing.T) {
	db, _ := openDB(t, t.TempDir())
	a, b := collidingKeys()
	mustPut(t, db, record(a, "a", 1), true)
	mustPut(t, db, record(b, "b", 1), true)
	const commands = "(commands: list, show <id-prefix>, clear [<id-prefix>], export <file> [<id-prefix>...], import <file>)"
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "no command given " + commands},
		{[]string{"frob"}, `unknown command "frob" ` + commands},
		{[]string{"list", "x"}, "list takes no arguments"},
		{[]string{"show"}, "show takes one id prefix, got 0 arguments " + commands},
		{[]string{"show", "a", "b"}, "show takes one id prefix, got 2 arguments"},
		{[]string{"clear", "a", "b"}, "clear takes at most one id prefix"},
		{[]string{"export"}, "export needs a file name " + commands},
		{[]string{"import"}, "import takes one file name"},
		{[]string{"show", ID(a)[:4]}, "ambiguous"},
		{[]string{"clear", ID(a)[:4]}, "ambiguous"},
		{[]string{"show", nonMatching(db, "")}, "no record with id prefix"},
		{[]string{"show", "ab"}, "too short"},
		{[]string{"show", "xyzw"}, "not an id prefix"},
		{[]string{"export", filepath.Join(t.TempDir(), "x"), nonMatching(db, "")}, "no record with id prefix"},
		{[]string{"import", filepath.Join(t.TempDir(), "missing")}, "no such file"},
	} {
		err := Run(db, c.args, new(bytes.Buffer))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Run %q: %v, want an error containing %q", c.args, err, c.want)
		}
	}
	if entries, _ := db.List(); len(entries) != 2 {
		t.Errorf("failed commands changed the database: %d records", len(entries))
	}
}
