"""NEOFLOW_TUNE=background: kernels start with their default schedules, are
tuned behind the calls, and the faster kernel is swapped in between calls;
results stay right throughout."""

import os
import subprocess
import sys
import textwrap
import threading

import neoflow
import pytest

CHILD = textwrap.dedent(
    """
    import time, torch, neoflow
    neoflow.configure(tune="background")
    mm = neoflow.op("C[i,j] += A[i,k] * B[k,j]", name="bg_mm")
    a, b = torch.randn(96, 80, requires_grad=True), torch.randn(80, 72, requires_grad=True)
    mm(a, b).sum().backward()  # builds the forward and both gradient kernels at once
    first = neoflow.background_status()
    assert first and not all(k.done for k in first), first  # nothing was tuned before the call returned
    errors = []

    def train():
        try:
            for _ in range(40):
                x, y = a.detach().clone().requires_grad_(), b.detach().clone().requires_grad_()
                out = mm(x, y)
                out.backward(torch.ones_like(out))
                torch.testing.assert_close(out, x @ y, rtol=1e-4, atol=1e-4)
                torch.testing.assert_close(x.grad, torch.ones_like(out) @ y.T, rtol=1e-4, atol=1e-4)
                time.sleep(0.01)
        except Exception as e:
            errors.append(e)

    import threading
    threads = [threading.Thread(target=train) for _ in range(2)]
    for t in threads: t.start()
    status = neoflow.wait_background(timeout=240)
    for t in threads: t.join()
    assert not errors, errors
    assert all(k.done and not k.error for k in status), status
    assert {k.kernel for k in status} == {"bg_mm", "bg_mm_grad"}, status
    assert all(0 < k.trials <= k.budget and k.default_ms > 0 and k.best_ms <= k.default_ms for k in status), status
    # after the swap, still right
    torch.testing.assert_close(mm(a, b), a @ b, rtol=1e-4, atol=1e-4)
    print("swapped", sum(k.swapped for k in status), "records", len(status))
    """
)


def test_background_tuning_swaps_kernels_in_and_stays_correct(tmp_path):
    env = dict(os.environ, NEOFLOW_CACHE_DIR=str(tmp_path / "cache"))
    out = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "records" in out.stdout
    # Its records are in the database: a later process in the default mode builds them tuned, at once.
    code = "import neoflow; print(neoflow.tunedb.run('list'))"
    listed = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert listed.stdout.count("bg_mm") >= 2, listed.stdout + listed.stderr


def test_background_mode_is_a_valid_setting():
    before = neoflow.configure()
    try:
        assert neoflow.configure(tune="background")["tune"] == "background"
        with pytest.raises(ValueError, match="background"):
            neoflow.configure(tune="behind")
    finally:
        neoflow.configure(tune=before.get("tune") or "default")


def test_background_status_without_background_tuning():
    assert isinstance(neoflow.background_status(), list)
    assert threading.active_count() >= 1


PICK_CHILD = textwrap.dedent(
    """
    import torch, neoflow
    mm = neoflow.op("C[i,j] += A[i,k] * B[k,j]", name="pick_mm")
    a, b = torch.randn(256, 256), torch.randn(256, 256)
    torch.testing.assert_close(mm(a, b), a @ b, rtol=1e-4, atol=1e-3)
    status = neoflow.wait_background(timeout=240, progress=True)
    print("kernels", [(k.kernel, k.done, k.trials == k.budget >= 2, bool(k.error)) for k in status])
    torch.testing.assert_close(mm(a, b), a @ b, rtol=1e-4, atol=1e-3)  # picked or not, still right
    """
)


def test_default_mode_picks_schedules_in_the_background(tmp_path):
    # The default mode: a kernel with enough work is picked behind the calls
    # (autotune.PickDefaults), the bar on stderr shows it, and the pick is a
    # record a later process builds with at once, queueing nothing.
    env = dict(os.environ, NEOFLOW_CACHE_DIR=str(tmp_path / "cache"), NEOFLOW_PROGRESS="1")  # bars on a pipe too
    env.pop("NEOFLOW_TUNE", None)
    out = subprocess.run([sys.executable, "-c", PICK_CHILD], env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "kernels [('pick_mm', True, True, False)]" in out.stdout, out.stdout
    assert "background tuning: 100%" in out.stderr and "pick_mm" in out.stderr, out.stderr
    again = subprocess.run([sys.executable, "-c", PICK_CHILD], env=env, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr[-3000:]
    assert "kernels []" in again.stdout, again.stdout


THREADS_CHILD = textwrap.dedent(
    """
    import time, torch, neoflow
    from neoflow import _lib
    torch.set_num_threads(2)
    neoflow.configure(tune="background")
    mm = neoflow.op("C[i,j] += A[i,k] * B[k,j]", name="bg_threads_mm")
    a, b = torch.randn(64, 48), torch.randn(48, 40)

    def until(cond, what):
        deadline = time.monotonic() + 240
        while not cond():
            assert time.monotonic() < deadline, what
            torch.testing.assert_close(mm(a, b), a @ b, rtol=1e-4, atol=1e-4)  # a launch follows the worker
            time.sleep(0.002)

    mm(a, b)  # builds the default kernel and queues it
    until(lambda: _lib.worker_job() & 1 and torch.get_num_threads() == 1, "never lowered while the worker was busy")
    job = _lib.worker_job()
    torch.set_num_threads(2)  # the caller's own choice during the job: kept for that job
    mm(a, b)
    assert torch.get_num_threads() == 2 or _lib.worker_job() != job
    status = neoflow.wait_background(timeout=240)
    assert all(k.done for k in status), status
    until(lambda: not _lib.worker_job() & 1, "the worker never went idle")
    mm(a, b)
    assert torch.get_num_threads() == 2, torch.get_num_threads()  # back once the worker is done
    print("ok")
    """
)


def test_background_worker_takes_a_pytorch_thread_while_busy(tmp_path):
    """While the worker runs a job, a thread launching neoflow kernels runs PyTorch on one thread fewer, keeps a
    count it sets itself, and gets its count back once the worker is done."""
    env = dict(os.environ, NEOFLOW_CACHE_DIR=str(tmp_path / "cache"))
    out = subprocess.run([sys.executable, "-c", THREADS_CHILD], env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "ok" in out.stdout
