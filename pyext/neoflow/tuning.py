"""Schedule tuning: ``neoflow.tune`` and the NEOFLOW_TUNE first-use hook.

A kernel is tuned by a genetic search over its schedule space, timing real
runs: for CPU tensors the C kernel's (tiling, loop order, parallel loops,
vector lanes, unrolling, local accumulation), timed on this machine's
cores; for CUDA tensors the CUDA kernel's (thread blocks, register tiles,
shared-memory staging, block reductions), timed with CUDA events on the
tensors' GPU. The best schedule goes into the tuning database under
NEOFLOW_CACHE_DIR and is applied whenever that kernel (same structure,
shapes, dtype, CPU or GPU model, and neoflow version) is built again, in
any process. ``python -m neoflow.tunedb`` lists and manages the records.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import threading
import time
import warnings

import torch

from . import _lib, config, progress, threadshare
from ._proto import neoflow_pb2 as pb


@dataclasses.dataclass
class KernelResult:
    """The outcome of tuning one kernel."""

    kernel: str
    default_ms: float
    best_ms: float
    trials: int
    failed: int = 0
    already: bool = False  # the database had a record; nothing was measured
    interrupted: bool = False
    # A gradient kernel tuned on the CPU right after its forward kernel is then timed with it in
    # pairs, as training runs them (the forward's outputs are the gradient's inputs): what that did.
    joint: str = ""
    joint_before_ms: float = 0.0  # that pass: the pair of the choices made apart, median ms
    joint_after_ms: float = 0.0  # the pair kept

    @property
    def speedup(self) -> float:
        return self.default_ms / self.best_ms if self.best_ms > 0 else 0.0


class TuneReport(list):
    """One KernelResult per kernel tuned (forward, then gradients)."""

    interrupted = False

    def __str__(self) -> str:
        lines = [f"{'kernel':<28} {'default ms':>10} {'tuned ms':>10} {'speedup':>8} {'trials':>7}"]
        for r in self:
            note = " (from the database)" if r.already else " (interrupted)" if r.interrupted else ""
            lines.append(
                f"{r.kernel[:28]:<28} {r.default_ms:>10.3f} {r.best_ms:>10.3f} {r.speedup:>7.2f}x {r.trials:>7}{note}"
            )
        return "\n".join(lines)


@dataclasses.dataclass
class _State:
    trials: int
    seconds: float
    seed: int
    force: bool
    progress: bool
    report: TuneReport
    stopped: bool = False
    session: bool = False  # tune_session: Ctrl-C also stops the block


_lock = threading.Lock()
_active: _State | None = None


def _check_budget(trials, seconds, seed, who: str) -> None:
    for name, value in (("trials", trials), ("seed", seed)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            raise TypeError(f"{who}: {name} must be an int, got {type(value).__name__}")
    if seconds is not None and (isinstance(seconds, bool) or not isinstance(seconds, (int, float))):
        raise TypeError(f"{who}: seconds must be a number, got {type(seconds).__name__}")
    if config.tune_mode() == "off":
        warnings.warn(
            f"{who}: NEOFLOW_TUNE=off, so kernels ignore the tuning database; "
            "the results are stored but used only in another mode",
            RuntimeWarning,
            stacklevel=3,
        )
    if trials is not None and trials < 1:
        raise ValueError(f"{who}: trials must be at least 1, got {trials}")
    if seconds is not None and seconds <= 0:
        raise ValueError(f"{who}: seconds must be positive, got {seconds}")


@contextlib.contextmanager
def _activate(state: _State, who: str):
    global _active
    with _lock:
        if _active is not None:
            raise RuntimeError(f"{who}: neoflow is already tuning")
        _active = state
        config.tuning_now.set()
    try:
        yield state.report
    finally:
        with _lock:
            _active = None
            config.tuning_now.clear()
        state.report.interrupted = state.stopped


def tune_session(
    *,
    trials: int | None = None,
    seconds: float | None = None,
    seed: int = 0,
    force: bool = False,
    progress: bool = True,
):
    """A block in which every kernel neoflow builds is tuned first.

    ``with neoflow.tune_session(trials=32) as report: train_step()`` tunes
    each kernel that the step builds (forward and gradient kernels of every
    op, for the shapes the step uses), with the budgets and options of
    ``neoflow.tune``, and fills ``report`` with one KernelResult per
    kernel. Kernels an op has already built in this process are not built
    again, so run the block before the model's first step (or with new
    shapes). Ctrl-C stops tuning, keeps the best found, and stops the
    block's code too.
    """
    _check_budget(trials, seconds, seed, "neoflow.tune_session")
    state = _State(trials or 0, float(seconds or 0), int(seed), bool(force), bool(progress), TuneReport(), session=True)
    return _activate(state, "neoflow.tune_session")


def tune(
    op,
    *example_inputs,
    sizes=None,
    trials: int | None = None,
    seconds: float | None = None,
    seed: int = 0,
    backward: bool = True,
    force: bool = False,
    progress: bool = True,
) -> TuneReport:
    """Tunes the kernels ``op`` runs for inputs shaped like ``example_inputs``.

    Runs the op once on the examples (and its backward when ``backward`` and
    the inputs are floating point), tuning each kernel built on the way:
    the forward kernel and the gradient kernels, on the examples' device
    (CUDA kernels are timed with CUDA events on a private stream of that
    GPU, in buffers of their own). Budgets apply per kernel:
    ``trials`` measured configurations (default 64) and ``seconds`` of wall
    time (default: none). Kernels that already have a database record are
    skipped unless ``force``. The search is seeded by ``seed`` and
    reproducible up to timing noise. A progress bar goes to stderr when it
    is a terminal (``neoflow.progress``; never with ``progress=False``),
    and each kernel's result to the ``neoflow.tune`` logger; Ctrl-C stops
    tuning, keeps the best schedules found and returns. Later calls with
    these shapes use the tuned kernels.
    """
    if not callable(getattr(op, "forget_kernels", None)):  # a neoflow.Op (duck-typed: op imports this module)
        raise TypeError(f"neoflow.tune: expected a neoflow op, got {type(op).__name__}")
    for i, t in enumerate(example_inputs):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"neoflow.tune: example input {i} is a {type(t).__name__}, not a tensor")
    _check_budget(trials, seconds, seed, "neoflow.tune")
    state = _State(trials or 0, float(seconds or 0), int(seed), bool(force), bool(progress), TuneReport())
    with _activate(state, "neoflow.tune"):
        try:
            op.forget_kernels()
            # Route the op's custom op to this Op object (another object of
            # the same expression may have registered it), so the kernels
            # forgotten are the ones rebuilt.
            op.claim_custom_op()
            grad = backward and any(t.is_floating_point() for t in example_inputs)
            ins = [t.detach().clone().requires_grad_(grad and t.is_floating_point()) for t in example_inputs]
            with torch.enable_grad() if grad else torch.no_grad():
                outs = op(*ins, sizes=sizes)
                outs = outs if isinstance(outs, tuple) else (outs,)
                if grad and not state.stopped:
                    torch.autograd.backward(outs, [torch.ones_like(o) for o in outs])
        finally:
            op.forget_kernels()
    return state.report


def before_build(request: pb.SpecializeRequest) -> None:
    """Called before a kernel is built: tunes it first when tuning is on."""
    state = _active
    if state is None:
        if config.tune_mode() != "full":
            return
        state = _State(0, 0.0, 0, False, True, TuneReport())
    if state.stopped:
        return
    if request.cuda_device and torch.cuda.is_current_stream_capturing():
        return  # timing would synchronize the stream being captured
    begin = pb.TuneRequest(
        op_id=request.op_id,
        inputs=request.inputs,
        sizes=request.sizes,
        trials=state.trials,
        seconds=state.seconds,
        seed=state.seed,
        force=state.force,
        num_threads=torch.get_num_threads(),
        cuda_device=request.cuda_device,
    )
    resp = _lib.call("nf_tune_begin", begin, pb.TuneResponse)
    if resp.already:
        p = resp.progress
        state.report.append(
            KernelResult(resp.kernel, p.default_seconds * 1e3, p.best_seconds * 1e3, p.trials, already=True)
        )
        return
    bar = _Bar(resp.kernel, resp.budget, state.progress)
    step = pb.TuneStepRequest(session_id=resp.session_id)
    interrupted = False
    try:
        while True:
            p = _lib.call("nf_tune_step", step, pb.TuneProgress)
            if bar:
                bar.update(p)
            if p.done:
                break
    except KeyboardInterrupt:
        interrupted = True
    finally:
        end = _lib.call("nf_tune_end", pb.TuneStepRequest(session_id=resp.session_id, save=True), pb.TuneProgress)
        if bar:
            bar.close(end, interrupted)
    state.report.append(
        KernelResult(
            resp.kernel,
            end.default_seconds * 1e3,
            end.best_seconds * 1e3,
            end.trials,
            failed=end.failed,
            interrupted=interrupted,
            joint=end.joint,
            joint_before_ms=end.joint_before_seconds * 1e3,
            joint_after_ms=end.joint_after_seconds * 1e3,
        )
    )
    if interrupted:
        state.stopped = True
        if state is not _active or state.session:  # the program was interrupted
            raise KeyboardInterrupt


class _Bar:
    """A tuning run's progress bar (neoflow.progress): trials of the budget,
    best time and speedup so far; its end goes to the neoflow.tune logger."""

    def __init__(self, kernel: str, budget: int, asked: bool):
        self.kernel = kernel
        self.tqdm = progress.bar(asked, desc=f"tuning {kernel[:24]}", total=max(budget, 1), unit="trial", leave=True)

    @staticmethod
    def _summary(p: pb.TuneProgress) -> str:
        best = f"best {p.best_seconds * 1e3:.3f} ms" if p.best_seconds else "measuring default"
        speed = f" ({p.default_seconds / p.best_seconds:.2f}x)" if p.best_seconds else ""
        failed = f", {p.failed} failed" if p.failed else ""
        return f"{best}{speed}{failed}"

    def update(self, p: pb.TuneProgress) -> None:
        self.tqdm.n = min(p.trials, self.tqdm.total)
        self.tqdm.set_postfix_str(self._summary(p), refresh=False)
        self.tqdm.refresh()

    def close(self, p: pb.TuneProgress, interrupted: bool) -> None:
        self.update(p)
        self.tqdm.close()
        summary = f"tuned {self.kernel}: {p.trials} trials in {p.elapsed_seconds:.1f} s, {self._summary(p)}"
        if interrupted:
            _log.warning("%s (interrupted: kept the best so far)", summary)
        else:
            _log.info("%s", summary)
        if p.joint:
            _log.info("%s: %s", self.kernel, p.joint)


_log = logging.getLogger("neoflow.tune")


@dataclasses.dataclass
class BackgroundKernel:
    """A kernel tuned in the background (NEOFLOW_TUNE=background), or whose
    first schedules are picked there (the default mode: ``trials`` and
    ``budget`` are the candidate schedules measured)."""

    kernel: str
    record_id: str
    trials: int
    budget: int
    default_ms: float
    best_ms: float
    done: bool
    swapped: bool  # the tuned kernel replaced the default one in the calls
    error: str = ""

    @property
    def speedup(self) -> float:
        return self.default_ms / self.best_ms if self.best_ms > 0 else 0.0


def background_status() -> list[BackgroundKernel]:
    """The kernels the background tuner has taken (NEOFLOW_TUNE=background,
    ``configure(tune="background")``; in the default mode, the kernels whose
    schedules it picks among the default, register-tiled and seed ones), in
    the order they were first built:
    trials measured of the budget, default and best times so far, whether
    the faster kernel is in use. Each change is also logged on the
    ``neoflow.tune`` logger (INFO) when this is called."""
    config.ensure()
    resp = _lib.call("nf_tune_status", pb.Empty(), pb.TuneStatusResponse)
    out = []
    for k in resp.kernels:
        p = k.progress
        out.append(
            BackgroundKernel(
                kernel=k.kernel,
                record_id=k.record_id,
                trials=p.trials,
                budget=p.budget,
                default_ms=p.default_seconds * 1e3,
                best_ms=p.best_seconds * 1e3,
                done=p.done,
                swapped=k.swapped,
                error=k.error,
            )
        )
    _log_changes(out)
    return out


def tuner_busy(kernels) -> bool:
    """Whether the background tuner still works on a kernel of these names (op names): it has taken one
    and not finished it."""
    names = set(kernels)
    return any(k.kernel in names and not k.done and not k.error for k in background_status())


_logged: dict = {}


def _log_changes(kernels: list[BackgroundKernel]) -> None:
    for k in kernels:
        state = (k.trials, k.done, k.swapped, k.error)
        if _logged.get(k.record_id) == state:
            continue
        _logged[k.record_id] = state
        if k.error:
            _log.warning("background tuning of %s stopped: %s", k.kernel, k.error)
        elif k.done:
            what = "swapped in" if k.swapped else "kept the default schedule"
            _log.info("background tuning of %s done after %d trials: %.2fx, %s", k.kernel, k.trials, k.speedup, what)
        else:
            _log.info("background tuning of %s: %d/%d trials, best %.2fx", k.kernel, k.trials, k.budget, k.speedup)


def wait_background(timeout: float | None = None, poll: float = 0.2, progress: bool = False) -> list[BackgroundKernel]:
    """Waits until the background tuner has finished every kernel it took
    (or ``timeout`` seconds passed) and returns ``background_status()``.
    With ``progress=True`` a bar on stderr follows it (``neoflow.progress``):
    trials measured of the kernels' budgets, the kernel being tuned and the
    best speedup so far."""
    deadline = None if timeout is None else time.monotonic() + timeout
    bar = _BackgroundBar() if progress else None
    try:
        while True:
            status = background_status()
            if bar:
                bar.update(status)
            if all(k.done for k in status) or (deadline is not None and time.monotonic() >= deadline):
                return status
            time.sleep(poll)
    finally:
        if bar:
            bar.close()
        threadshare.follow_worker()  # this thread's PyTorch thread count back, if the worker is done


class _BackgroundBar:
    """wait_background's progress bar (neoflow.progress): trials of the
    kernels' budgets, the kernel being tuned, the best speedup so far."""

    def __init__(self):
        self.tqdm = progress.bar(True, desc="background tuning", unit="trial")

    def update(self, status: list[BackgroundKernel]) -> None:
        total = sum(max(k.budget, 1) for k in status)
        done = sum(min(k.trials, max(k.budget, 1)) if not k.done else max(k.budget, 1) for k in status)
        running = next((k for k in status if not k.done), status[-1] if status else None)
        best = max((k.speedup for k in status), default=0.0)
        self.tqdm.total, self.tqdm.n = total, done
        self.tqdm.set_postfix_str(
            f"{running.kernel[:24]}, best {best:.2f}x" if running else "nothing queued", refresh=False
        )
        self.tqdm.refresh()

    def close(self) -> None:
        self.tqdm.close()
