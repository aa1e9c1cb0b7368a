"""The one module that talks to libneoflow.so through ctypes.

Control-plane calls send a protobuf request and get a protobuf response;
`launch` passes only integers and pointers.
"""

from __future__ import annotations

import atexit
import ctypes
import os
import threading
import time
from pathlib import Path

from .errors import Error, ForkError


class _MissingExtension:
    """Stands in for neoflow._launch where it was not built (the package imported from a source tree, as the
    docs' API pages do): importing works, and a call or launch raises naming the fix."""

    def __init__(self, error: ImportError):
        self.error = error

    def configure(self, *args) -> None:  # at import: nothing to run yet
        pass

    def __getattr__(self, name):
        raise Error(
            f"neoflow's extension module _launch is missing ({self.error}): neoflow was imported from a source "
            "tree that was not built; install it (pip install .) or use the wheel"
        )


try:  # the C launcher: Kernel.run's launch and Op.__call__'s usual calls (pyext/neoflow/_launch*.c)
    from . import _launch as launcher
except ImportError as e:
    launcher = _MissingExtension(e)

_LIB_NAME = "libneoflow.so"
_CUDA_LIB_NAME = "libneoflow_cuda.so"
# Reentrant: garbage collection may run a finalizer (an Op's release)
# while lib() holds it, e.g. while it builds the ForkError in a forked
# child, and that finalizer calls lib() again on the same thread.
_lock = threading.RLock()
_lib: ctypes.CDLL | None = None
_loaded_pid: int | None = None


def _path() -> Path:
    """The library to load: NEOFLOW_LIBRARY, else the CUDA build where
    torch.cuda.is_available() and it was built, else the CPU-only build.
    The CUDA build initializes the CUDA driver when loaded and exits the
    process if that fails, so it is never loaded without a usable GPU."""
    override = os.environ.get("NEOFLOW_LIBRARY")
    if override:
        return Path(override)
    cuda = Path(__file__).with_name(_CUDA_LIB_NAME)
    if cuda.exists():
        import torch

        if torch.cuda.is_available():
            return cuda
    return Path(__file__).with_name(_LIB_NAME)


def library_path() -> Path:
    """The native library this process loads (or loaded)."""
    return _path()


def nvrtc_dirs() -> list[str]:
    """Where NVRTC may be, best first: PyTorch's CUDA libraries (the
    nvidia-*-cu* wheels, or torch/lib), then CUDA_HOME and /usr/local/cuda."""
    import glob
    import site

    import torch

    dirs = []
    for sp in [*site.getsitepackages(), site.getusersitepackages(), str(Path(torch.__file__).parent.parent)]:
        dirs += sorted(glob.glob(os.path.join(sp, "nvidia", "cu[0-9]*", "lib")), reverse=True)
        dirs += sorted(glob.glob(os.path.join(sp, "nvidia", "cuda_nvrtc", "lib")))
    dirs.append(str(Path(torch.__file__).parent / "lib"))
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(var):
            dirs.append(os.path.join(os.environ[var], "lib64"))
    dirs.append("/usr/local/cuda/lib64")
    return list(dict.fromkeys(d for d in dirs if os.path.isdir(d)))


def _bind(lib: ctypes.CDLL) -> None:
    control = (
        ctypes.c_void_p,
        ctypes.c_int64,
        ctypes.POINTER(ctypes.c_void_p),
        ctypes.POINTER(ctypes.c_int64),
    )
    names = ("nf_init", "nf_define", "nf_specialize", "nf_grad", "nf_transform", "nf_release")
    for name in names + (
        "nf_tune_begin",
        "nf_tune_step",
        "nf_tune_end",
        "nf_tunedb",
        "nf_bundle_save",
        "nf_tune_status",
    ):
        fn = getattr(lib, name)
        fn.argtypes = control
        fn.restype = ctypes.c_void_p
    # No argument types: ctypes then passes Python ints as C ints, as nf_launch takes them, and a ctypes
    # array by reference, about 1 us faster a call than converting through declared types.
    lib.nf_launch.restype = ctypes.c_void_p
    lib.nf_launch_cuda.argtypes = (ctypes.c_uint64, ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p)
    lib.nf_launch_cuda.restype = ctypes.c_void_p
    lib.nf_free.argtypes = (ctypes.c_void_p,)
    lib.nf_free.restype = None
    lib.nf_interrupt.argtypes = ()
    lib.nf_interrupt.restype = None
    lib.nf_shutdown.argtypes = ()
    lib.nf_shutdown.restype = None
    lib.nf_release_kernel.argtypes = (ctypes.c_uint64,)
    lib.nf_release_kernel.restype = ctypes.c_void_p
    i64p = ctypes.POINTER(ctypes.c_int64)
    lib.nf_index_range.argtypes = (ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64, i64p, i64p)
    lib.nf_index_range.restype = ctypes.c_int


def _after_fork_in_child() -> None:
    global _lib, _busy
    if _lib is not None:
        _lib = None  # the Go runtime's threads did not survive the fork
        launcher.init(0, 0, Error)  # launches go through lib() again, which says so
    _busy = None


os.register_at_fork(after_in_child=_after_fork_in_child)


def _shutdown() -> None:
    """At exit: kill the C compilers still running (background builds, which
    Ctrl-C leaves alone), in the process that loaded the library only."""
    handle = _lib
    if handle is not None and _loaded_pid == os.getpid():
        handle.nf_shutdown()


_busy: ctypes.c_int | None = None  # the Go core's nf_worker_busy, once loaded


def worker_job() -> int:
    """The background tuner's job count (neoflow.threadshare), read from the library's memory: odd while it
    runs a job, one more at each start and end; 0 before the library is loaded."""
    flag = _busy
    return 0 if flag is None else flag.value


def lib() -> ctypes.CDLL:
    """Loads the library once per process."""
    global _lib, _loaded_pid, _busy
    if _lib is not None:
        return _lib
    with _lock:
        if _lib is None:
            if _loaded_pid is not None and _loaded_pid != os.getpid():
                raise ForkError(
                    "neoflow was loaded before this process was forked, and the Go runtime "
                    "does not survive fork(); start worker processes with the 'spawn' "
                    "start method (multiprocessing.set_start_method('spawn')) or import "
                    "and use neoflow only in the children"
                )
            path = _path()
            if not path.exists():
                raise Error(f"neoflow's library is missing at {path}: reinstall neoflow")
            handle = ctypes.CDLL(str(path))
            _bind(handle)
            _busy = ctypes.c_int.in_dll(handle, "nf_worker_busy")
            launch, free = (ctypes.cast(f, ctypes.c_void_p).value for f in (handle.nf_launch, handle.nf_free))
            launcher.init(launch, free, Error)  # C kernels launch from C (Kernel.run)
            _loaded_pid = os.getpid()
            _lib = handle
            atexit.register(_shutdown)
    return _lib


def settings_from_env() -> dict:
    """NEOFLOW_* settings, read by Python: Go does not see later changes to os.environ."""
    cflags = os.environ.get("NEOFLOW_CFLAGS", "")
    return {
        "cache_dir": os.environ.get("NEOFLOW_CACHE_DIR", ""),
        "cc": os.environ.get("NEOFLOW_CC", ""),
        "cflags": cflags.split() if cflags.strip() else [],
        "tune": os.environ.get("NEOFLOW_TUNE", "").strip().lower(),
        "idle_kernels": _int_env("NEOFLOW_IDLE_KERNELS"),
        "dump": os.environ.get("NEOFLOW_DUMP", "").strip(),
        "dump_dir": os.environ.get("NEOFLOW_DUMP_DIR", ""),
        "fusion": _bool_env("NEOFLOW_FUSION", default=True),
        "bundle": os.environ.get("NEOFLOW_BUNDLE", ""),
        "deterministic": _bool_env("NEOFLOW_DETERMINISTIC", default=False),
        "dynamic": os.environ.get("NEOFLOW_DYNAMIC", "").strip().lower(),
    }


def _bool_env(name: str, default: bool) -> bool:
    text = os.environ.get(name, "").strip().lower()
    if not text:
        return default
    if text in ("1", "on", "true", "yes"):
        return True
    if text in ("0", "off", "false", "no"):
        return False
    raise ValueError(f"{name}={text!r}: expected 1 or 0 (on or off)")


def _int_env(name: str) -> int | None:
    text = os.environ.get(name, "").strip()
    if not text:
        return None
    try:
        value = int(text)
    except ValueError:
        raise ValueError(f"{name}={text!r}: expected a whole number") from None
    if value < 0:
        raise ValueError(f"{name}={text!r}: expected 0 or more")
    return value


def _take_error(ptr: int | None) -> str | None:
    if not ptr:
        return None
    try:
        return ctypes.string_at(ptr).decode("utf-8", "replace")
    finally:
        lib().nf_free(ptr)


def call(name: str, request, response_type):
    """Sends a control-plane request; raises neoflow.Error with the Go text."""
    fn = getattr(lib(), name)
    data = request.SerializeToString()
    out = ctypes.c_void_p()
    out_len = ctypes.c_int64()
    err = _take_error(fn(data, len(data), ctypes.byref(out), ctypes.byref(out_len)))
    if err is not None:
        raise Error(err)
    try:
        payload = ctypes.string_at(out.value, out_len.value) if out_len.value else b""
    finally:
        if out.value:
            lib().nf_free(out.value)
    return response_type.FromString(payload)


# Seconds a labelled call_interruptible waits before it shows a progress bar.
PROGRESS_AFTER = 1.0


def call_interruptible(name: str, request, response_type, label: str | None = None):
    """``call`` for requests that may compile (seconds): on the main thread
    it runs in a helper thread while the main thread waits, so that Ctrl-C
    is seen at once; it then stops the builds in flight (their compilers
    are killed) and raises KeyboardInterrupt once the call has returned.
    With a ``label``, a call still running after PROGRESS_AFTER seconds
    shows a progress bar (neoflow.progress) with the time it has taken."""
    if threading.current_thread() is not threading.main_thread():
        return call(name, request, response_type)
    result: list = []

    def run():
        try:
            result.append((True, call(name, request, response_type)))
        except BaseException as e:  # noqa: BLE001 - handed to the waiting thread
            result.append((False, e))

    worker = threading.Thread(target=run, name=f"neoflow-{name}", daemon=True)
    worker.start()
    start, shown = time.monotonic(), None
    try:
        while worker.is_alive():
            worker.join(0.05)
            if label and shown is None and time.monotonic() - start >= PROGRESS_AFTER:
                from . import progress

                shown = progress.bar(total=None, desc=label, bar_format="{desc}: {elapsed}", leave=False)
            if shown is not None:
                shown.refresh()
    except KeyboardInterrupt:
        # Interrupt until the call returns: a build it starts after the
        # first interrupt (the Ctrl-C came before its first build, or
        # between two) runs under a fresh context and must be stopped too.
        while worker.is_alive():
            lib().nf_interrupt()
            worker.join(0.05)
        raise
    finally:
        if shown is not None:
            shown.close()
    ok, value = result[0]
    if not ok:
        raise value
    return value


def release_kernel(kernel_id: int) -> None:
    """Drops this process's hold on a kernel a specialization handed out."""
    err = _take_error(lib().nf_release_kernel(kernel_id))
    if err is not None:
        raise Error(err)


def launch(kernel_id: int, pointers: bytes, nthreads: int) -> None:
    """Runs a kernel on its buffers' data pointers, packed as 64-bit integers (Kernel.pack)."""
    err = (_lib or lib()).nf_launch(kernel_id, pointers, len(pointers) >> 3, nthreads)
    if err:
        raise Error(_take_error(err))


def index_range(pointer: int, n: int, elem_bytes: int) -> tuple[int, int]:
    """The least and greatest of n int32 (elem_bytes 4) or int64 (8)
    elements in host memory at pointer, n >= 1: one pass in C, without the
    Go runtime or PyTorch's thread pool."""
    lo, hi = ctypes.c_int64(), ctypes.c_int64()
    if lib().nf_index_range(pointer, n, elem_bytes, ctypes.byref(lo), ctypes.byref(hi)) != 0:
        raise ValueError(f"index_range: {n} elements of {elem_bytes} bytes")
    return lo.value, hi.value


def launch_cuda(kernel_id: int, pointers, stream: int) -> None:
    """Runs a CUDA kernel on a ctypes array of device pointers, on a
    CUstream handle (PyTorch's current stream on the kernel's device)."""
    err = _take_error(lib().nf_launch_cuda(kernel_id, pointers, len(pointers), stream))
    if err is not None:
        raise Error(err)
