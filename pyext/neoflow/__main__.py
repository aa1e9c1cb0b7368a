"""``python -m neoflow``: the command line (see neoflow.cli)."""

import sys

from .cli import main

sys.exit(main())
