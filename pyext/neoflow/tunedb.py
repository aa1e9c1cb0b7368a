"""The tuning database's command line: ``python -m neoflow.tunedb ACTION``.

Commands: ``list``; ``show ID``; ``clear [ID]``; ``export FILE [ID...]``;
``import FILE``. IDs may be abbreviated to a unique prefix of at least four
characters. The database lives in NEOFLOW_CACHE_DIR/tune.
"""

from __future__ import annotations

import argparse
import sys
import warnings

from . import _lib, config
from ._proto import neoflow_pb2 as pb
from .errors import Error


def run(*args: str) -> str:
    """Runs a tuning-database command and returns what it prints.

    Corrupt records met on the way are moved aside and reported as
    RuntimeWarnings.
    """
    config.ensure()
    resp = _lib.call("nf_tunedb", pb.TuneDBRequest(args=[str(a) for a in args]), pb.TuneDBResponse)
    for w in resp.warnings:
        warnings.warn(w, RuntimeWarning, stacklevel=2)
    return resp.output


def add_commands(parser: argparse.ArgumentParser) -> None:
    """Adds the commands as subcommands of parser (``neoflow tunedb`` and
    ``python -m neoflow.tunedb`` share them)."""
    sub = parser.add_subparsers(dest="tunedb_command", metavar="ACTION", required=True)
    prefix = "a record's id, or a unique prefix of it of at least four characters"
    p = sub.add_parser("list", help="one line per record: id, op, best and default time, speedup, trials, created")
    p.set_defaults(tunedb_args=lambda a: ["list"])
    p = sub.add_parser("show", help="one record in full: key, every statement's schedule, times, failures")
    p.add_argument("id", help=prefix)
    p.set_defaults(tunedb_args=lambda a: ["show", a.id])
    p = sub.add_parser("clear", help="remove one record, or all of them")
    p.add_argument("id", nargs="?", help=f"{prefix} (default: every record)")
    p.set_defaults(tunedb_args=lambda a: ["clear", *([a.id] if a.id else [])])
    p = sub.add_parser("export", help="write records (all by default) to a file that import reads")
    p.add_argument("file")
    p.add_argument("ids", nargs="*", metavar="ID", help=prefix)
    p.set_defaults(tunedb_args=lambda a: ["export", a.file, *a.ids])
    p = sub.add_parser("import", help="merge an export file into the database (faster records win)")
    p.add_argument("file")
    p.set_defaults(tunedb_args=lambda a: ["import", a.file])
    parser.set_defaults(run=_run_parsed)


def _run_parsed(args: argparse.Namespace) -> int:
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out = run(*args.tunedb_args(args))
        for w in caught:
            print(f"neoflow.tunedb: warning: {w.message}", file=sys.stderr)
        sys.stdout.write(out)
    except (Error, ValueError) as e:
        print(f"neoflow.tunedb: {e}", file=sys.stderr)
        return 1
    return 0


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = argparse.ArgumentParser(prog="python -m neoflow.tunedb", description=__doc__.split("\n\n")[0])
    add_commands(parser)
    if not argv:
        parser.print_help()
        return 2
    args = parser.parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
