"""PyTorch's threads while the background tuner works (NEOFLOW_TUNE=background).

While the Go core's worker runs a job (a pick or a search: its compilers
and the kernels it times), neoflow's C kernel launches take one thread fewer
than ``torch.get_num_threads()`` (the Go core decides that). PyTorch's own
operators of the same training step used to keep every thread: on a
machine the training fills, the worker's threads then took cores from
their OpenMP teams, whose barriers wait for the slowest thread, and single
steps ran 4-11 times the final median (LLTM on 2 cores, bench/dynamic.py).
So while the worker is busy, each Python thread that launches a neoflow
kernel lowers its own PyTorch thread count by one (``torch.set_num_threads``
is per thread where PyTorch uses OpenMP) and puts it back at its first
launch after the worker is done, or in ``neoflow.wait_background``. A count
the caller changed meanwhile is left as the caller set it. (PyTorch starts
a new thread with the count last set in any thread: one started while a
count is lowered starts lowered.)

The worker's state is a C int the Go core writes (``nf_worker_busy``),
read here without a call (odd while it is busy): a launch pays a read of it
and of this module's count of lowered threads.
"""

from __future__ import annotations

import threading

import torch

from . import _lib

_local = threading.local()  # per thread: state (count before, count set, job) while lowered; declined (job)
_lowered = 0  # threads lowered now: the usual launch reads this and the flag, nothing else
_lock = threading.Lock()


def launch_threads() -> int:
    """The thread count a C kernel launch passes to the Go core: PyTorch's,
    as it was before this module lowered it (the Go core takes one off
    itself while the worker is busy)."""
    if not _lowered and not _lib.worker_job() & 1:
        return torch.get_num_threads()
    return follow_worker()


def follow_worker() -> int:
    """Lowers this thread's PyTorch thread count while the worker is busy,
    puts it back once it is not; returns launch_threads' count."""
    job = _lib.worker_job()  # odd while the worker is busy, one more at each change
    busy = job & 1
    current = torch.get_num_threads()
    state = getattr(_local, "state", None)
    if state is not None:
        before, lowered_to, _ = state
        if current != lowered_to:  # the caller set a count of its own: kept for the rest of this job
            _forget()
            _local.declined = job
            return current
        if busy:
            return before
        torch.set_num_threads(before)
        _forget()
        return before
    if busy and current > 1 and getattr(_local, "declined", None) != job:
        torch.set_num_threads(current - 1)
        _local.state = (current, current - 1, job)
        _count(1)
    return current


def _forget() -> None:
    _local.state = None
    _count(-1)


def _count(d: int) -> None:
    global _lowered
    with _lock:
        _lowered += d
