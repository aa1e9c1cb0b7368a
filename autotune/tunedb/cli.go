package tunedb

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/pkg/errors"
	"google.golang.org/protobuf/encoding/prototext"

	"github.com/neoflow/neoflow/api"
	"github.com/neoflow/neoflow/internal/fsutil"
)

// commands is the command summary that usage errors end with.
const commands = "list, show <id-prefix>, clear [<id-prefix>], export <file> [<id-prefix>...], import <file>"

func usageError(format string, args ...any) error {
	return errors.Errorf("tuning database: %s (commands: %s)", fmt.Sprintf(format, args...), commands)
}

// Run executes the tuning-database command args and writes its
// human-readable output to out:
//
//	list                            one line per record: id (12 digits), op
//	                                name, best and default time in ms,
//	                                speedup, trials, creation time
//	show <id-prefix>                the full record: key, every statement's
//	                                schedule, times, failures
//	clear [<id-prefix>]             remove one record, or all
//	export <file> [<id-prefix>...]  write the records (all by default) to an
//	                                export file (mode 0644, written atomically)
//	import <file>                   merge an export file (faster records win)
//
// Unknown commands and bad arguments are errors naming the problem and
// listing the commands.
func Run(db *DB, args []string, out io.Writer) error {
	if len(args) == 0 {
		return usageError("no command given")
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "list":
		if len(rest) != 0 {
			return usageError("list takes no arguments, got %q", rest)
		}
		return runList(db, out)
	case "show":
		if len(rest) != 1 {
			return usageError("show takes one id prefix, got %d arguments", len(rest))
		}
		e, err := db.Find(rest[0])
		if err != nil {
			return err
		}
		return show(out, e)
	case "clear":
		switch len(rest) {
		case 0:
			n, err := db.Clear()
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(out, "removed %d records from %s\n", n, db.Dir())
			return err
		case 1:
			e, err := db.Find(rest[0])
			if err != nil {
				return err
			}
			if err := db.Remove(e.ID); err != nil {
				return err
			}
			_, err = fmt.Fprintf(out, "removed %s (%s)\n", e.ID, orDash(e.Record.OpName))
			return err
		}
		return usageError("clear takes at most one id prefix, got %d arguments", len(rest))
	case "export":
		if len(rest) == 0 {
			return usageError("export needs a file name")
		}
		return runExport(db, rest[0], rest[1:], out)
	case "import":
		if len(rest) != 1 {
			return usageError("import takes one file name, got %d arguments", len(rest))
		}
		f, err := os.Open(rest[0])
		if err != nil {
			return errors.Wrap(err, "tuning database: import")
		}
		defer f.Close()
		n, err := db.Import(f)
		if err != nil {
			return errors.Wrapf(err, "importing %s", rest[0])
		}
		_, err = fmt.Fprintf(out, "imported %d records from %s into %s\n", n, rest[0], db.Dir())
		return err
	}
	return usageError("unknown command %q", cmd)
}

func runList(db *DB, out io.Writer) error {
	entries, err := db.List()
	if err != nil {
		return err
	}
	if len(entries) == 0 {
		_, err := fmt.Fprintf(out, "no records in %s\n", db.Dir())
		return err
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tOP\tBEST MS\tDEFAULT MS\tSPEEDUP\tTRIALS\tCREATED")
	for _, e := range entries {
		r := e.Record
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\n", e.ID[:12], orDash(r.OpName), ms(r.BestSeconds),
			ms(r.DefaultSeconds), speedup(r), r.Trials, orDash(r.Created))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err = fmt.Fprintf(out, "%d records in %s\n", len(entries), db.Dir())
	return err
}

func runExport(db *DB, file string, prefixes []string, out io.Writer) error {
	var ids []string
	for _, p := range prefixes {
		e, err := db.Find(p)
		if err != nil {
			return err
		}
		ids = append(ids, e.ID)
	}
	var buf bytes.Buffer
	n, err := db.Export(&buf, ids...)
	if err != nil {
		return err
	}
	if err := fsutil.WriteFileAtomic(file, buf.Bytes(), 0o644); err != nil {
		return errors.Wrapf(err, "tuning database: writing %s", file)
	}
	_, err = fmt.Fprintf(out, "exported %d records to %s\n", n, file)
	return err
}

// show writes the whole record of e.
func show(out io.Writer, e Entry) error {
	r := e.Record
	k := r.GetKey()
	var b strings.Builder
	field := func(name, format string, args ...any) {
		fmt.Fprintf(&b, "%-10s %s\n", name, fmt.Sprintf(format, args...))
	}
	field("id", "%s", e.ID)
	field("op", "%s", orDash(r.OpName))
	field("kernel", "%s", orDash(k.GetKernel()))
	if len(k.GetTensors()) == 0 {
		field("tensors", "-")
	}
	for i, t := range k.GetTensors() {
		name := ""
		if i == 0 {
			name = "tensors"
		}
		field(name, "%s", t)
	}
	field("target", "%s", orDash(k.GetTarget()))
	field("version", "%s", orDash(k.GetVersion()))
	field("created", "%s", orDash(r.Created))
	field("seed", "%d", r.Seed)
	field("trials", "%d", r.Trials)
	field("best", "%s ms", ms(r.BestSeconds))
	field("default", "%s ms (speedup %s)", ms(r.DefaultSeconds), speedup(r))
	field("schedules", "%d statements", len(r.Schedules))
	for i, s := range r.Schedules {
		fmt.Fprintf(&b, "statement %d:\n%s", i, indent(schedule(s, true), "  "))
	}
	field("failures", "%d", len(r.Failures))
	for i, f := range r.Failures {
		fmt.Fprintf(&b, "failure %d: %s\n", i+1, strings.TrimSpace(f.Error))
		for j, s := range f.Schedules {
			fmt.Fprintf(&b, "  statement %d: %s", j, schedule(s, false))
		}
	}
	_, err := io.WriteString(out, b.String())
	return err
}

// schedule renders s as protobuf text (one line per field when
// multiline) ending in a newline.
func schedule(s *api.StmtSchedule, multiline bool) string {
	opts := prototext.MarshalOptions{}
	if multiline {
		opts.Indent = "  "
	}
	text := strings.TrimSpace(opts.Format(s))
	if text == "" {
		return "(empty)\n"
	}
	return text + "\n"
}

func indent(text, prefix string) string {
	lines := strings.SplitAfter(strings.TrimSuffix(text, "\n"), "\n")
	return prefix + strings.Join(lines, prefix) + "\n"
}

func ms(seconds float64) string {
	if seconds == 0 {
		return "-"
	}
	return fmt.Sprintf("%.4g", seconds*1e3)
}

func speedup(r *api.TuneRecord) string {
	if r.DefaultSeconds <= 0 || r.BestSeconds <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.2fx", r.DefaultSeconds/r.BestSeconds)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
