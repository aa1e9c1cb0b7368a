"""Runtime settings: where kernels are cached and how they are compiled."""

from __future__ import annotations

import threading

import torch

from . import _lib
from ._proto import neoflow_pb2 as pb

_lock = threading.Lock()
_current: dict | None = None
_info: pb.InitResponse | None = None


def configure(cache_dir: str | None = None, cc: str | None = None, cflags=None) -> dict:
    """Sets neoflow's settings; unset arguments keep their current value.

    Defaults come from the environment when neoflow is first used:
    NEOFLOW_CACHE_DIR (kernel cache; default: the user's cache directory),
    NEOFLOW_CC (C compiler; default ``cc``) and NEOFLOW_CFLAGS (replaces the
    default flags). Kernels already built stay in use. Returns the settings
    in force, with the resolved cache directory.
    """
    global _current, _info
    with _lock:
        settings = dict(_current if _current is not None else _lib.settings_from_env())
        if cache_dir is not None:
            settings["cache_dir"] = str(cache_dir)
        if cc is not None:
            settings["cc"] = str(cc)
        if cflags is not None:
            if isinstance(cflags, str):
                cflags = cflags.split()
            settings["cflags"] = [str(f) for f in cflags]
        request = pb.InitRequest(
            cache_dir=settings["cache_dir"],
            cc=settings["cc"],
            cflags=settings["cflags"],
            num_threads=torch.get_num_threads(),
        )
        _info = _lib.call("nf_init", request, pb.InitResponse)
        _current = settings
        return dict(settings, cache_dir=_info.cache_dir, version=_info.version)


def ensure() -> None:
    """Sends the environment's settings once, before the first real call."""
    if _current is None:
        configure()


def reset() -> None:
    """Forgets explicit settings: the next call re-reads the environment."""
    global _current
    with _lock:
        _current = None
