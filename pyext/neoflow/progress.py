"""Progress bars for neoflow's slow work (tuning, waiting for background
tuning, a kernel build or a bundle write that takes more than a second:
_lib.call_interruptible), drawn by tqdm on stderr.

A bar shows when the caller asks for one (``progress=True``, the default
of ``neoflow.tune``) and stderr is a terminal. NEOFLOW_PROGRESS=0 turns
every bar off, NEOFLOW_PROGRESS=1 draws them on any stderr (a log file, a
pipe). Without tqdm installed there are no bars. What a bar reports at its
end also goes to the ``neoflow`` loggers.
"""

from __future__ import annotations

import os
import sys


def enabled(asked: bool = True) -> bool:
    """Whether a bar the caller asked for (or not) is drawn."""
    env = os.environ.get("NEOFLOW_PROGRESS", "").strip().lower()
    if not asked or env in ("0", "false", "no", "off"):
        return False
    if env in ("1", "true", "yes", "on"):
        return True
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):  # replaced or closed stderr
        return False


def bar(asked: bool = True, **kwargs):
    """A tqdm bar on stderr (``kwargs`` are tqdm's), disabled when
    ``enabled(asked)`` is false or tqdm is missing."""
    try:
        from tqdm import tqdm
    except ImportError:
        return _NoBar()
    return tqdm(file=sys.stderr, disable=not enabled(asked), dynamic_ncols=True, **kwargs)


class _NoBar:
    """What bar returns without tqdm: tqdm's methods that neoflow calls, doing nothing."""

    total = n = 0

    def update(self, n=1):
        pass

    def set_postfix_str(self, s="", refresh=True):
        pass

    def refresh(self):
        pass

    def close(self):
        pass
