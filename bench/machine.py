"""The machine a benchmark runs on, for its report (standard library only,
so that a script may read it before importing torch)."""

from __future__ import annotations

import atexit
import ctypes
import platform
import shutil
import sys
import tempfile
from pathlib import Path


def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo, else what platform reports."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def scratch_dir(prefix: str) -> str:
    """A fresh temporary directory (a benchmark's cold kernel and Inductor
    caches), removed when the process exits."""
    path = tempfile.mkdtemp(prefix=prefix)
    atexit.register(remove_at_exit, path)
    return path


def remove_at_exit(path: str) -> None:
    """Removes path, once neoflow (if loaded) has stopped the compilers of
    its background builds, which would write into it meanwhile."""
    lib = sys.modules.get("neoflow._lib")
    if lib is not None:
        lib._shutdown()
    shutil.rmtree(path, ignore_errors=True)


def steady_heap() -> None:
    """Makes glibc malloc keep freed memory: no mmap for blocks up to 32 MiB
    (its ceiling) and no trimming of the heap's top. Under the default
    policy a training step's large tensors come back as fresh pages that
    fault on first touch, in some runs and not others, depending on the
    heap's history: ShuffleNet's eager step ran 27 or 36 ms, neoflow's 25 or
    36 ms, in runs minutes apart (bench/models.py, 2-core Xeon). Call it
    before the first large allocation."""
    libc = ctypes.CDLL("libc.so.6")
    libc.mallopt.argtypes = (ctypes.c_int, ctypes.c_int)  # mallopt's value is a C int: 1 << 40 passed as 0
    m_trim_threshold, m_mmap_threshold = -1, -3
    if not (libc.mallopt(m_mmap_threshold, 32 << 20) and libc.mallopt(m_trim_threshold, 2**31 - 1)):
        raise SystemExit("mallopt refused the steady heap settings")
