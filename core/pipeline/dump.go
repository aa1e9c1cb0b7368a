package pipeline

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/pkg/errors"

	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/loops"
)

// Dumper prints the IR after the passes it selects. Each dump starts with
// a header line "// after <pass>: op <name> <dtype>". It writes to one
// writer, or, with a directory, one file per op and pass named
// "<unit>-<op>-<pass number>-<pass>.txt", where <unit> numbers the units
// in the order they were first dumped. It is safe for concurrent use; a
// nil *Dumper dumps nothing.
type Dumper struct {
	all    bool
	passes map[string]bool
	dir    string
	w      io.Writer

	mu    sync.Mutex
	units int
	err   error
}

// NewDumper reads a dump setting (NEOFLOW_DUMP): "" for none (a nil
// Dumper), "all", or pass names separated by commas. With dir set the
// dumps go to files in dir (created when missing), else to w.
func NewDumper(which, dir string, w io.Writer) (*Dumper, error) {
	which = strings.TrimSpace(which)
	if which == "" {
		return nil, nil
	}
	d := &Dumper{passes: map[string]bool{}, dir: dir, w: w}
	for _, name := range strings.Split(which, ",") {
		name = strings.TrimSpace(name)
		switch {
		case name == "all":
			d.all = true
		case indexOf(name) >= 0:
			d.passes[name] = true
		default:
			return nil, errors.Errorf("NEOFLOW_DUMP=%q: no pass named %q; the passes are all, %s", which, name, strings.Join(Passes(), ", "))
		}
	}
	if dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, errors.Wrap(err, "NEOFLOW_DUMP_DIR")
		}
	}
	return d, nil
}

// Wants reports whether d dumps the IR after the named pass.
func (d *Dumper) Wants(pass string) bool { return d != nil && (d.all || d.passes[pass]) }

// Err is the first error writing a dump met, if any; dumping never fails
// a build.
func (d *Dumper) Err() error {
	if d == nil {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.err
}

// TakeErr is Err, and forgets the error: the next failure is reported
// again.
func (d *Dumper) TakeErr() error {
	if d == nil {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	err := d.err
	d.err = nil
	return err
}

func (d *Dumper) after(u *Unit, p Pass, before string) {
	if !d.Wants(p.Name) {
		return
	}
	body := strings.TrimRight(Print(u, p.Out, p.Name), "\n") + "\n"
	text := fmt.Sprintf("// after %s: op %s %s\n%s", p.Name, u.Op.DisplayName(), u.DType, body)
	if before != "" && before == bare(u, p.Out) {
		// The pass changed nothing: its notes say why.
		var notes strings.Builder
		for _, n := range u.FusionNotes[p.Name] {
			fmt.Fprintf(&notes, "  // %s\n", n)
		}
		text = fmt.Sprintf("// after %s: op %s %s (unchanged)\n%s", p.Name, u.Op.DisplayName(), u.DType, notes.String())
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if u.dumpID == 0 {
		d.units++
		u.dumpID = d.units
	}
	var err error
	if d.dir == "" {
		_, err = io.WriteString(d.w, text)
	} else {
		name := fmt.Sprintf("%04d-%s-%02d-%s.txt", u.dumpID, fileSafe(u.Op.DisplayName()), indexOf(p.Name)+1, p.Name)
		err = os.WriteFile(filepath.Join(d.dir, name), []byte(text), 0o644)
	}
	if err != nil && d.err == nil {
		d.err = err
	}
}

// before is the unit's IR before pass p runs, at the level p leaves it
// at, for after to tell whether p changed it; "" when p is not dumped or
// the unit is not at that level yet.
func (d *Dumper) before(u *Unit, p Pass) string {
	if !d.Wants(p.Name) {
		return ""
	}
	return bare(u, p.Out)
}

// bare is u's IR at level without any pass's notes; "" when u has none at
// that level.
func bare(u *Unit, level Level) string {
	switch level {
	case LevelSpec, LevelFused:
		if u.Spec == nil {
			return ""
		}
		return ir.PrintSpec(u.Spec)
	case LevelLoops:
		if u.Func == nil {
			return ""
		}
		return loops.Dump(u.Func)
	}
	return ""
}

// Print renders u at the given level, as it stands after the named pass.
func Print(u *Unit, level Level, pass string) string {
	switch level {
	case LevelOp:
		return ir.Print(u.Op)
	case LevelSpec:
		return ir.PrintSpec(u.Spec)
	case LevelFused:
		var b strings.Builder
		b.WriteString(ir.PrintSpec(u.Spec))
		for _, n := range u.FusionNotes[pass] {
			fmt.Fprintf(&b, "  // %s\n", n)
		}
		return b.String()
	case LevelScheduled:
		var b strings.Builder
		b.WriteString(ir.PrintSpec(u.Spec))
		for i, s := range u.Schedules {
			fmt.Fprintf(&b, "  schedule %d: %s\n", i, s)
		}
		return b.String()
	case LevelLoops:
		if u.Func == nil {
			return "<no loop nests>"
		}
		return loops.Dump(u.Func)
	}
	return fmt.Sprintf("<level %d>", level)
}

// fileSafe keeps a name's letters, digits, '_', '.' and '-'.
func fileSafe(name string) string {
	out := []rune(name)
	for i, r := range out {
		ok := r == '_' || r == '.' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z'
		if !ok {
			out[i] = '_'
		}
	}
	return string(out[:min(len(out), 64)])
}
