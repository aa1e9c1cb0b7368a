"""The tuning database's command line: ``python -m neoflow.tunedb COMMAND``.

Commands: ``list``; ``show ID``; ``clear [ID]``; ``export FILE [ID...]``;
``import FILE``. IDs may be abbreviated to a unique prefix of at least four
characters. The database lives in NEOFLOW_CACHE_DIR/tune.
"""

from __future__ import annotations

import sys

from . import _lib, config
from ._proto import neoflow_pb2 as pb
from .errors import Error


def run(*args: str) -> str:
    """Runs a tuning-database command and returns what it prints."""
    config.ensure()
    return _lib.call("nf_tunedb", pb.TuneDBRequest(args=[str(a) for a in args]), pb.TuneDBResponse).output


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(__doc__.strip())
        return 0 if argv else 2
    try:
        sys.stdout.write(run(*argv))
    except Error as e:
        print(f"neoflow.tunedb: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
