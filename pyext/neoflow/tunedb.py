"""The tuning database's command line: ``python -m neoflow.tunedb COMMAND``.

Commands: ``list``; ``show ID``; ``clear [ID]``; ``export FILE [ID...]``;
``import FILE``. IDs may be abbreviated to a unique prefix of at least four
characters. The database lives in NEOFLOW_CACHE_DIR/tune.
"""

from __future__ import annotations

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


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(__doc__.strip())
        return 0 if argv else 2
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out = run(*argv)
        for w in caught:
            print(f"neoflow.tunedb: warning: {w.message}", file=sys.stderr)
        sys.stdout.write(out)
    except (Error, ValueError) as e:
        print(f"neoflow.tunedb: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
