"""Runtime settings: where kernels are cached and how they are compiled."""

from __future__ import annotations

import os
import threading

import torch

from . import _lib, memory
from ._proto import neoflow_pb2 as pb

_lock = threading.RLock()
_current: dict | None = None
_info: pb.InitResponse | None = None


TUNE_MODES = ("off", "default", "full", "background")
DYNAMIC_MODES = ("auto", "static")

# Called when a setting changes what kernels are built from (fusion): each
# drops what it cached of the kernels built before (on_rebuild).
_on_rebuild: list = []


def on_rebuild(hook) -> None:
    """Calls hook() whenever a setting changes what kernels are built from (fusion on or off), so that
    what a module cached of the kernels built before is dropped."""
    _on_rebuild.append(hook)


def configure(
    cache_dir: str | None = None,
    cc: str | None = None,
    cflags=None,
    tune: str | None = None,
    cpu_cache_mb: float | None = None,
    idle_kernels: int | None = None,
    dump: str | None = None,
    dump_dir: str | None = None,
    fusion: bool | None = None,
    bundle=None,
    deterministic: bool | None = None,
    dynamic: str | None = None,
) -> dict:
    """Sets neoflow's settings; unset arguments keep their current value.

    Defaults come from the environment when neoflow is first used:
    NEOFLOW_CACHE_DIR (kernel cache and tuning database; default: the
    user's cache directory), NEOFLOW_CC (C compiler; default ``cc``),
    NEOFLOW_CFLAGS (replaces the default flags) and NEOFLOW_TUNE, what
    happens when a kernel is first built for new shapes: ``off`` (default
    schedules, the tuning database is ignored), ``default`` (the database's
    tuned schedule when it has one, else the default schedule; nothing is
    tuned unless ``neoflow.tune`` asks), ``full`` (a kernel without a
    record is tuned there and then, with a progress bar, and stored) or
    ``background`` (a kernel without a record starts with its default
    schedule at once and is tuned behind the calls, the faster kernel
    swapped in between two calls; see ``neoflow.background_status``).
    Kernels already built stay in use. ``cpu_cache_mb`` bounds the freed
    output memory kept for reuse (NEOFLOW_CPU_CACHE_MB, default 1024; 0
    turns the cache off; see ``neoflow.memory``). ``idle_kernels``
    (NEOFLOW_IDLE_KERNELS, default 64) is how many compiled kernels that no
    op uses any more stay loaded, least recently used first out; the others
    are unloaded. ``dump`` (NEOFLOW_DUMP) prints the compiler's IR after
    the passes it names, ``"all"`` or names separated by commas (the
    passes are listed in docs/how-it-works.md), each under a line
    ``// after <pass>``, to stderr, or with ``dump_dir`` (NEOFLOW_DUMP_DIR)
    to one file per op and pass in that directory. ``fusion``
    (NEOFLOW_FUSION, on unless ``0``) runs the compiler's fusion passes,
    which merge, split and inline statements so that kernels store fewer
    temporaries (``Op.explain_fusion`` shows what they did); turning it off
    is for comparison and bisecting. Changing it drops the kernels built so
    far (a compiled graph traced before the change may expect the other
    temporaries: set it before ``torch.compile``). Returns the settings in
    force, with the resolved cache directory. ``bundle`` (NEOFLOW_BUNDLE)
    is a kernel bundle (``neoflow.bundle``) whose kernels are loaded
    instead of compiled; ``""`` stops using one. ``deterministic``
    (NEOFLOW_DETERMINISTIC, off unless ``1``) builds CUDA scatters (the
    gradient of a gather, ``Y[Dst[e], f] += ...``) without atomic adds, so
    that their sums come out bit for bit the same on every run, at the
    cost of parallelism; C kernels are deterministic either way. Changing
    it drops the kernels built so far. ``dynamic`` (NEOFLOW_DYNAMIC) is what
    an op does when a dimension varies between calls: ``"auto"`` (default)
    builds a kernel for the first shape, then one C kernel for every value of
    the dimensions that varied, which serves later shapes without a build
    (see docs/settings.md, "Shapes that vary"); ``"static"`` builds a kernel per
    shape.
    """
    global _current, _info
    if cpu_cache_mb is not None:
        memory.set_limit(cpu_cache_mb)
    with _lock:
        settings = dict(_current if _current is not None else _lib.settings_from_env())
        _apply(settings, cache_dir, cc, cflags, tune, idle_kernels, dump, dump_dir, fusion, bundle, deterministic)
        if dynamic is not None:
            settings["dynamic"] = _text_setting(dynamic, "dynamic").lower()
        if settings.get("dynamic", "") not in ("", *DYNAMIC_MODES):
            raise ValueError(
                f"NEOFLOW_DYNAMIC / dynamic={settings['dynamic']!r}: expected one of {', '.join(DYNAMIC_MODES)}"
            )
        request = pb.InitRequest(
            cache_dir=settings["cache_dir"],
            cc=settings["cc"],
            cflags=settings["cflags"],
            num_threads=torch.get_num_threads(),
            tune=settings.get("tune", ""),
            nvrtc_dirs=_lib.nvrtc_dirs(),
            idle_kernels=_idle(settings.get("idle_kernels")),
            dump=settings.get("dump", ""),
            dump_dir=settings.get("dump_dir", ""),
            fusion_off=not settings.get("fusion", True),
            bundle=os.path.expanduser(settings.get("bundle", "")),
            deterministic=bool(settings.get("deterministic", False)),
        )
        _info = _lib.call("nf_init", request, pb.InitResponse)
        changed = _current is not None and any(
            _current.get(k, d) != settings.get(k, d) for k, d in (("fusion", True), ("deterministic", False))
        )
        _current = settings
        if changed:
            for hook in _on_rebuild:
                hook()
        return dict(settings, cache_dir=_info.cache_dir, version=_info.version)


def _apply(settings, cache_dir, cc, cflags, tune, idle_kernels, dump, dump_dir, fusion, bundle, deterministic):
    """Checks configure's arguments and writes those given into settings."""
    if cache_dir is not None:
        settings["cache_dir"] = _check_cache_dir(cache_dir, "cache_dir")
    elif settings["cache_dir"]:
        _check_cache_dir(settings["cache_dir"], "NEOFLOW_CACHE_DIR")
    if cc is not None:
        settings["cc"] = str(cc)
    if cflags is not None:
        if isinstance(cflags, str):
            cflags = cflags.split()
        settings["cflags"] = [str(f) for f in cflags]
    if tune is not None:
        settings["tune"] = str(tune).strip().lower()
    if idle_kernels is not None:
        if isinstance(idle_kernels, bool) or not isinstance(idle_kernels, int) or idle_kernels < 0:
            raise ValueError(f"idle_kernels must be an int of 0 or more, got {idle_kernels!r}")
        settings["idle_kernels"] = idle_kernels
    if dump is not None:
        settings["dump"] = _text_setting(dump, "dump")
    if dump_dir is not None:
        path = os.fspath(dump_dir) if isinstance(dump_dir, os.PathLike) else dump_dir
        settings["dump_dir"] = _text_setting(path, "dump_dir")
    if fusion is not None:
        if not isinstance(fusion, bool):
            raise TypeError(f"fusion must be True or False, got {fusion!r}")
        settings["fusion"] = fusion
    if bundle is not None:
        settings["bundle"] = _bundle_path(bundle)
    if deterministic is not None:
        if not isinstance(deterministic, bool):
            raise TypeError(f"deterministic must be True or False, got {deterministic!r}")
        settings["deterministic"] = deterministic
    if settings.get("tune", "") not in ("", *TUNE_MODES):
        raise ValueError(f"NEOFLOW_TUNE / tune={settings['tune']!r}: expected one of {', '.join(TUNE_MODES)}")


def _check_cache_dir(path, what: str) -> str:
    """A cache directory: a path that is a directory or does not exist yet."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"{what} must be a path, got {type(path).__name__}")
    text = os.fspath(path)
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"{what} must name a directory, got {path!r}")
    full = os.path.expanduser(text)
    if os.path.exists(full) and not os.path.isdir(full):
        raise ValueError(f"{what} {full} exists and is not a directory: give a directory for the kernel cache")
    return text


def _bundle_path(path) -> str:
    """A bundle file's path ("" for none)."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"bundle must be a path, got {type(path).__name__}")
    text = os.fspath(path)
    if text and not os.path.isfile(os.path.expanduser(text)):
        raise FileNotFoundError(f"kernel bundle {text}: no such file")
    return text


def bundle_info() -> tuple[int, int]:
    """The kernels of the bundle in use and the tuning records it brought (0, 0 without one)."""
    ensure()
    return (_info.bundle_kernels, _info.bundle_records) if _info is not None else (0, 0)


def _text_setting(value, what: str) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a str, got {type(value).__name__}")
    return value.strip()


def _idle(n: int | None) -> int:
    """InitRequest.idle_kernels: 0 asks for the default, a negative for none."""
    if n is None:
        return 0
    return -1 if n == 0 else n


# Set while neoflow.tune or neoflow.tune_session runs (tuning.py): a kernel
# built then is tuned first, from the caller's thread.
tuning_now = threading.Event()


def tune_mode() -> str:
    """The NEOFLOW_TUNE mode in force: off, default, full or background."""
    ensure()
    return (_current or {}).get("tune") or "default"


def dynamic_mode() -> str:
    """What an op does when a dimension varies (NEOFLOW_DYNAMIC, ``configure(dynamic=...)``): auto or static."""
    ensure()
    return (_current or {}).get("dynamic") or "auto"


def fusion_enabled() -> bool:
    """Whether the fusion passes run (NEOFLOW_FUSION, ``configure(fusion=...)``)."""
    ensure()
    return bool((_current or {}).get("fusion", True))


def cuda_enabled() -> bool:
    """Whether the loaded library has the CUDA backend."""
    ensure()
    return bool(_info is not None and _info.cuda)


def ensure() -> None:
    """Sends the environment's settings once, before the first real call
    (once, also when threads make their first calls together)."""
    if _current is None:
        with _lock:
            if _current is None:
                configure()


def ensure_info() -> dict:
    """What the library answered to the settings in use: ``cache_dir``,
    ``version`` and ``cuda`` (whether it has the CUDA backend)."""
    ensure()
    return {"cache_dir": _info.cache_dir, "version": _info.version, "cuda": bool(_info.cuda)}


def reset() -> None:
    """Forgets explicit settings: the next call re-reads the environment."""
    global _current
    with _lock:
        _current = None
