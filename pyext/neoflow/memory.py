"""Output memory for CPU kernels: large blocks are kept and handed out again.

A kernel's outputs and temporaries are new tensors on every call. For a
large one (``MIN_BYTES`` and up: glibc's own threshold for taking memory
straight from the system) glibc maps fresh pages on allocation and returns
them on free, so every call pays a page fault per 4 KiB touched; inside a
virtual machine that returns freed pages to its host, a fault costs
microseconds, and a training step can spend more time faulting than
computing: depthwise conv's forward+backward at the bench sizes took 8.7 ms
with 2,994 faults per call, against 1.3 ms without, on the machine of
bench/results. A training step allocates the same sizes every step, so
neoflow keeps the blocks of its large outputs when their tensors die and
hands them out again, as PyTorch's caching allocator does for CUDA memory.

A block is a bytearray; a tensor is made on it with ``torch.frombuffer``,
which holds a memoryview of the block until the tensor's storage is freed
(views, saved tensors and ``.grad`` included), and the callback of a weak
reference to that memoryview puts the block back. Blocks are reused only for
the exact byte size freed. The freed blocks kept are bounded:
``NEOFLOW_CPU_CACHE_MB`` (default 1024; 0 turns the cache off) or
``neoflow.configure(cpu_cache_mb=...)``; a block freed beyond the bound goes
back to the system. ``empty_cache()`` releases the kept blocks,
``memory_stats()`` reports them.

Tensors made here are not resizable (``resize_`` to a larger size raises,
as for ``torch.from_numpy``); everything else about them is ordinary.
"""

from __future__ import annotations

import ctypes
import math
import os
import threading
import weakref

import torch

MIN_BYTES = 128 << 10
_ALIGN = 64  # torch.empty's alignment on CPU; bytearrays are only 16-aligned
_DEFAULT_MB = 1024

_lock = threading.RLock()
_free: dict[int, list[tuple[bytearray, int]]] = {}  # byte size -> free (block, aligned offset)
_taken: dict = {}  # id of a weak reference to a tensor's memoryview -> (it, byte size, the block)
_state = {"limit": None, "cached": 0, "hits": 0, "misses": 0, "released": 0}


def _limit_bytes() -> int:
    limit = _state["limit"]
    if limit is None:
        text = os.environ.get("NEOFLOW_CPU_CACHE_MB", "").strip()
        try:
            mb = float(text) if text else _DEFAULT_MB
        except ValueError:
            raise ValueError(
                f"NEOFLOW_CPU_CACHE_MB={text!r}: expected a number of MiB (0 turns the cache off)"
            ) from None
        limit = set_limit(mb)
    return limit


def set_limit(mb: float) -> int:
    """Sets how many MiB of freed blocks are kept (0: none); returns it in bytes."""
    if not isinstance(mb, (int, float)) or isinstance(mb, bool) or not math.isfinite(mb) or mb < 0:
        raise ValueError(f"cpu_cache_mb={mb!r}: expected a number of MiB >= 0")
    limit = int(mb * (1 << 20))
    with _lock:
        _state["limit"] = limit
        _trim(limit)
    return limit


def empty(shape, dtype: torch.dtype) -> torch.Tensor:
    """An uninitialized contiguous CPU tensor, on a kept block when one fits."""
    numel = math.prod(shape)
    nbytes = numel * dtype.itemsize
    if nbytes < MIN_BYTES or _limit_bytes() == 0:
        return torch.empty(shape, dtype=dtype)
    with _lock:
        blocks = _free.get(nbytes)
        entry = blocks.pop() if blocks else None
        if entry is not None:
            _state["cached"] -= nbytes
            _state["hits"] += 1
        else:
            _state["misses"] += 1
    if entry is None:
        block = bytearray(nbytes + _ALIGN)
        address = ctypes.addressof(ctypes.c_char.from_buffer(block))
        entry = (block, -address % _ALIGN)
    view = memoryview(entry[0])
    tensor = torch.frombuffer(view, dtype=dtype, count=numel, offset=entry[1]).view(shape)
    ref = weakref.ref(view, _give_back)
    _taken[id(ref)] = (ref, nbytes, entry)
    return tensor


def _give_back(ref) -> None:
    _, nbytes, entry = _taken.pop(id(ref))
    with _lock:
        if _state["cached"] + nbytes > _limit_bytes():
            _state["released"] += 1
            return
        _free.setdefault(nbytes, []).append(entry)
        _state["cached"] += nbytes


def _trim(limit: int) -> None:
    while _state["cached"] > limit and _free:
        size = max(_free)
        blocks = _free[size]
        blocks.pop()
        if not blocks:
            del _free[size]
        _state["cached"] -= size
        _state["released"] += 1


def empty_cache() -> None:
    """Releases the kept blocks to the system. Tensors in use are untouched."""
    with _lock:
        _trim(0)


def memory_stats() -> dict:
    """The cache's state: bytes and blocks kept, reuses (hits), new blocks
    (misses), blocks released, and the bound in bytes."""
    with _lock:
        return {
            "cached_bytes": _state["cached"],
            "cached_blocks": sum(len(b) for b in _free.values()),
            "hits": _state["hits"],
            "misses": _state["misses"],
            "released": _state["released"],
            "limit_bytes": _limit_bytes(),
        }
