"""IR dumps (NEOFLOW_DUMP, NEOFLOW_DUMP_DIR): the IR after the pipeline's
passes, each under a header line naming the pass, for forward and gradient
ops alike."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap

import neoflow
import pytest

_TWO_STATEMENTS = textwrap.dedent(
    """
    import torch, neoflow
    op = neoflow.op("T[i, j] += A[i, k] * B[k, j]\\nY[i, j] = tanh(T[i, j])", outputs=["Y"], name="mmtanh")
    a = torch.rand(4, 3, dtype=torch.float64, requires_grad=True)
    b = torch.rand(3, 5, dtype=torch.float64, requires_grad=True)
    op(a, b).sum().backward()
    torch.testing.assert_close(a.grad, (1 - torch.tanh(a @ b) ** 2) @ b.detach().t())
    print("ok")
    """
)


def _run(env_extra: dict, cache_dir) -> subprocess.CompletedProcess:
    env = dict(os.environ, NEOFLOW_CACHE_DIR=str(cache_dir), **env_extra)
    return subprocess.run([sys.executable, "-c", _TWO_STATEMENTS], capture_output=True, text=True, timeout=600, env=env)


def _headers(text: str) -> list[str]:
    return re.findall(r"^// after ([a-z-]+): op (\S+)", text, re.MULTILINE)


def test_dump_all_shows_every_pass_forward_and_backward(tmp_path):
    proc = _run({"NEOFLOW_DUMP": "all"}, tmp_path / "cache")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "ok"
    headers = _headers(proc.stderr)
    passes = {p for p, _ in headers}
    assert len(passes) >= 6, headers
    loop_passes = {"lower", "hoist-guards", "version-lanes", "fuse-nests", "parallel-rows", "hoist-invariants"}
    loop_passes.add("check-bounds")
    assert {"specialize", "autodiff", "schedule"} | loop_passes <= passes
    ops = {op for _, op in headers}
    assert "mmtanh" in ops and any(op != "mmtanh" for op in ops), ops  # the gradient op too
    # Each level prints as itself: the gradient op's statements, loop nests.
    assert "d_A[i, k] += " in proc.stderr and "vector for " in proc.stderr


def test_dump_selected_passes_to_a_directory(tmp_path):
    out = tmp_path / "dumps"
    proc = _run({"NEOFLOW_DUMP": "autodiff,lower", "NEOFLOW_DUMP_DIR": str(out)}, tmp_path / "cache")
    assert proc.returncode == 0, proc.stderr
    assert "// after" not in proc.stderr
    files = sorted(os.listdir(out))
    assert files and all(re.fullmatch(r"\d{4}-[\w.-]+-\d{2}-(autodiff|lower)\.txt", f) for f in files), files
    assert any(f.endswith("-autodiff.txt") for f in files)
    first = (out / files[0]).read_text()
    assert first.startswith("// after ")


def test_unknown_pass_is_a_clear_error():
    try:
        with pytest.raises(neoflow.Error, match=r"no pass named \"nope\".*check-bounds"):
            neoflow.configure(dump="lower,nope")
        with pytest.raises(TypeError, match="dump must be a str"):
            neoflow.configure(dump=3)
    finally:
        neoflow.configure(dump="")


_BROKEN_DIR = textwrap.dedent(
    """
    import os, shutil, sys, warnings, torch, neoflow
    d = sys.argv[1]
    neoflow.configure(dump="lower", dump_dir=d)  # creates the directory
    shutil.rmtree(d)
    open(d, "w").write("not a directory")  # now no dump can be written there
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        y = neoflow.op("Y[i] = X[i] * 2.0", name="twice")(torch.ones(3))
    assert y.tolist() == [2.0, 2.0, 2.0]
    print([str(w.message) for w in caught])
    """
)


def test_dump_write_failure_is_a_warning(tmp_path):
    env = dict(os.environ, NEOFLOW_CACHE_DIR=str(tmp_path / "cache"))
    proc = subprocess.run(
        [sys.executable, "-c", _BROKEN_DIR, str(tmp_path / "dumps")],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    assert "writing an IR dump (NEOFLOW_DUMP, NEOFLOW_DUMP_DIR) failed" in proc.stdout, proc.stdout
