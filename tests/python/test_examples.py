"""The training examples run end to end as scripts (few steps, small shapes)."""

import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def run_example(name, *flags, cwd=ROOT):
    # One thread: tiny shapes, and no OpenMP contention on a busy machine.
    cmd = [sys.executable, str(ROOT / "examples" / f"{name}.py"), "--steps", "3", "--size", "small", "--threads", "1"]
    # NEOFLOW_CACHE_DIR (set by conftest.py) is inherited, so kernels go to this session's cache.
    return subprocess.run([*cmd, *flags], cwd=cwd, env=dict(os.environ), capture_output=True, text=True, timeout=120)


def check(proc, name, impl):
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert f"{name} ({impl}): size small" in out, out
    for line in ("first step:", "median step:", "final loss:"):
        assert line in out, out
    assert " ms (forward + backward + Adam, steps 2..3)" in out, out
    assert "3/3" in proc.stderr, proc.stderr  # the progress bar reached the last step


@pytest.mark.parametrize("name", ["lltm", "capsnet"])
def test_example_trains_with_neoflow(name):
    check(run_example(name), name, "neoflow")


def test_example_trains_pytorch_baseline_from_examples_dir():
    check(run_example("shufflenet", "--torch", cwd=ROOT / "examples"), "shufflenet", "pytorch")


def test_example_rejects_bad_flags():
    proc = run_example("milstm", "--size", "huge")
    assert proc.returncode == 2 and "invalid choice" in proc.stderr


@pytest.mark.parametrize("name", ["demo", "rotary", "embedding_bag", "label_gather", "fake_quant", "gcn"])
def test_one_op_example_checks_itself_against_pytorch(name):
    """The one-op examples run as scripts and assert their own agreement with PyTorch."""
    proc = subprocess.run(
        [sys.executable, str(ROOT / "examples" / f"{name}.py")],
        cwd=ROOT,
        env=dict(os.environ),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "OK:" in proc.stdout, proc.stdout
