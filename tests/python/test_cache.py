"""The on-disk kernel cache: reuse across processes, corruption, concurrency,
and compiler failures."""

import json
import multiprocessing
import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import neoflow
import pytest
import torch

# A child process that defines and runs one op, checking it against torch.
CHILD = textwrap.dedent(
    """
    import torch, neoflow
    op = neoflow.op("C[i,j] += A[i,k] * B[k,j] * 0.5", name="cache_probe")
    a, b = torch.randn(5, 6, dtype=torch.float64), torch.randn(6, 7, dtype=torch.float64)
    torch.testing.assert_close(op(a, b), a @ b * 0.5)
    print("hit" if op.specialize(a, b).cache_hit else "miss")
    """
)


def logging_compiler(tmp_path: Path) -> tuple[Path, Path]:
    log = tmp_path / "cc.log"
    script = tmp_path / "logcc"
    script.write_text(f'#!/bin/sh\necho "$@" >> {log}\nexec cc "$@"\n')
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return script, log


# These tests count the compiler's runs and the cache's libraries for one
# kernel; with fusion on, a fresh cache directory also gets the four small
# kernels that measure the fusion reward's rates (test_fusion_rates_...).
_ONE_KERNEL = {"NEOFLOW_FUSION": "0"}


def run_child(cache: Path, cc: Path, extra_env=None) -> subprocess.CompletedProcess:
    env = dict(os.environ, NEOFLOW_CACHE_DIR=str(cache), NEOFLOW_CC=str(cc), **_ONE_KERNEL)
    env.update(extra_env or {})
    return subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, timeout=300)


def compiles(log: Path) -> int:
    return len(log.read_text().splitlines()) if log.exists() else 0


def test_second_process_reuses_kernels_without_compiling(tmp_path):
    cc, log = logging_compiler(tmp_path)
    cache = tmp_path / "cache"
    first = run_child(cache, cc)
    assert first.returncode == 0, first.stderr
    assert first.stdout.strip() == "miss"
    assert compiles(log) == 1
    second = run_child(cache, cc)
    assert second.returncode == 0, second.stderr
    assert second.stdout.strip() == "hit"
    assert compiles(log) == 1, "the second process invoked the compiler"
    assert stat.S_IMODE(cache.stat().st_mode) == 0o700


@pytest.mark.parametrize("damage", ["truncate", "flip", "garbage_meta"])
def test_corrupted_entry_is_detected_and_rebuilt(tmp_path, damage):
    cc, log = logging_compiler(tmp_path)
    cache = tmp_path / "cache"
    assert run_child(cache, cc).returncode == 0
    libs = list(cache.rglob("*.so"))
    assert len(libs) == 1
    lib = libs[0]
    if damage == "truncate":
        lib.write_bytes(lib.read_bytes()[:100])
    elif damage == "flip":
        data = bytearray(lib.read_bytes())
        data[len(data) // 2] ^= 0xFF
        lib.write_bytes(bytes(data))
    else:
        for meta in cache.rglob("*.json"):
            meta.write_text("{not json")
    again = run_child(cache, cc)
    assert again.returncode == 0, again.stderr
    assert again.stdout.strip() == "miss"
    assert "is corrupt" in again.stderr and "rebuilding" in again.stderr, again.stderr
    assert compiles(log) == 2, "the damaged entry was not rebuilt"


def test_two_processes_compiling_the_same_kernel(tmp_path):
    cc, log = logging_compiler(tmp_path)
    cache = tmp_path / "cache"
    env = dict(os.environ, NEOFLOW_CACHE_DIR=str(cache), NEOFLOW_CC=str(cc), **_ONE_KERNEL)
    procs = [
        subprocess.Popen([sys.executable, "-c", CHILD], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        for _ in range(3)
    ]
    for p in procs:
        out, errtext = p.communicate(timeout=300)
        assert p.returncode == 0, errtext.decode()
    assert len(list(cache.rglob("*.so"))) == 1
    # no temporary files are left behind (.lock files hold the per-key build lock)
    assert not [p for p in cache.rglob("*") if p.is_file() and p.suffix not in (".so", ".json", ".lock")]
    assert run_child(cache, cc).stdout.strip() == "hit"


def test_fusion_rates_are_measured_once_per_cache(tmp_path):
    # The first process with fusion on compiles its kernel and the nine rate
    # kernels (torchbridge/rates.go), in a batch per CPU (one compiler run
    # each), and keeps the rates; the next compiles nothing.
    cc, log = logging_compiler(tmp_path)
    cache = tmp_path / "cache"
    fused = {"NEOFLOW_FUSION": "1"}
    first = run_child(cache, cc, fused)
    assert first.returncode == 0, first.stderr
    runs = 1 + min(len(os.sched_getaffinity(0)), 9)
    assert compiles(log) == runs
    rates = json.loads((cache / "fusion-rates.json").read_text())["rates"]
    assert rates["BytesPerSec"] > 0 and rates["OpsPerSec"] > 0 and rates["NestSec"] >= 0 and rates["CallOps"] >= 1
    assert rates["LLCBytesPerSec"] > 0 and rates["RereadBytesPerSec"] > 0 and rates["AccumulatorOps"] >= 1
    second = run_child(cache, cc, fused)
    assert second.returncode == 0, second.stderr
    assert second.stdout.strip() == "hit"
    assert compiles(log) == runs, "the second process measured the rates again"


def test_missing_compiler_is_named(tmp_path):
    neoflow.configure(cc="/nonexistent/neoflow-cc", cache_dir=tmp_path)
    try:
        op = neoflow.op("Y[i] = X[i] * 3.0")
        with pytest.raises(neoflow.Error, match="neoflow-cc"):
            op(torch.ones(4))
    finally:
        neoflow.configure(cc="", cache_dir=os.environ["NEOFLOW_CACHE_DIR"])


def test_failing_compiler_stderr_is_reported(tmp_path):
    bad = tmp_path / "badcc"
    bad.write_text('#!/bin/sh\necho "fatal: this compiler refuses everything" >&2\nexit 1\n')
    bad.chmod(0o755)
    neoflow.configure(cc=str(bad), cache_dir=tmp_path)
    try:
        op = neoflow.op("Y[i] = X[i] * 4.0")
        with pytest.raises(neoflow.Error, match="this compiler refuses everything"):
            op(torch.ones(4))
    finally:
        neoflow.configure(cc="", cache_dir=os.environ["NEOFLOW_CACHE_DIR"])


def test_default_cache_dir_is_the_users_cache(tmp_path):
    code = "import neoflow; print(neoflow.configure()['cache_dir'])"
    env = {k: v for k, v in os.environ.items() if k != "NEOFLOW_CACHE_DIR"}
    env["XDG_CACHE_HOME"] = str(tmp_path)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == str(tmp_path / "neoflow")


def _use_after_fork(queue):
    try:
        neoflow.op("Y[i] = X[i]")(torch.ones(2))
        queue.put("no error")
    except neoflow.ForkError as e:
        queue.put(str(e))


def test_fork_after_load_is_refused_with_the_fix():
    neoflow.op("Y[i] = X[i]")(torch.ones(2))  # the library is loaded
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    child = ctx.Process(target=_use_after_fork, args=(queue,))
    child.start()
    msg = queue.get(timeout=60)
    child.join(60)
    assert "spawn" in msg
