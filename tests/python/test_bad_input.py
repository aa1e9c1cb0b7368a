"""Bad input found by fuzzing gets an error that names the problem: op names,
text that is not UTF-8, malformed sizes, sizes too large to allocate, a
cache directory that is a file, and Ctrl-C during a kernel build."""

import os
import signal
import subprocess
import sys
import textwrap
import time

import neoflow
import pytest
import torch
from neoflow.op import parse_sizes_text


@pytest.mark.parametrize("name", ["a\x00b", "tab\there", "new\nline", "é", "sp ace", "", "n" * 129])
def test_bad_op_names(name):
    with pytest.raises(ValueError, match="a name is 1 to 128 characters from A-Z a-z 0-9 _ . -"):
        neoflow.op("Y[i] = X[i]", name=name)


def test_good_op_names_reach_c():
    op = neoflow.op("Y[i] = X[i] * 2.0", name="my.op-2_b")
    x = torch.randn(3)
    torch.testing.assert_close(op(x), 2 * x)
    assert "my.op-2_b" in op.c_source(x)


@pytest.mark.parametrize("name", ["0", "1.5-x", "_", ".", "-a"])
def test_names_that_are_not_identifiers_work_with_grad(name):
    # The custom op's name must be a Python identifier; "0" failed in
    # torch.library's schema parser ("expected ident but found 'number'").
    op = neoflow.op("Y[i] = X[i] * 2.0", name=name)
    x = torch.randn(3, requires_grad=True)
    op(x).sum().backward()
    torch.testing.assert_close(x.grad, torch.full((3,), 2.0))


@pytest.mark.parametrize("name", [123, b"bytes", ["x"]])
def test_op_name_of_wrong_type(name):
    with pytest.raises(TypeError, match="an op's name must be a str, got"):
        neoflow.op("Y[i] = X[i]", name=name)


def test_decorated_function_name_is_made_valid():
    def fn(X):
        i = neoflow.indices("i")
        Y = neoflow.tensor("Y")
        Y[i] = X[i] * 2.0
        return Y

    fn.__name__ = "<locals> scaled"  # as a lambda's or a nested function's name can be
    op = neoflow.op(fn)
    assert op.name == "_locals__scaled"
    with pytest.raises(ValueError, match="is not allowed"):
        neoflow.op(fn, name="<locals>")


def test_lone_surrogate_in_source():
    with pytest.raises(ValueError, match=r"source is not valid text: character '\\ud800' at position 12"):
        neoflow.op("Y[i] = X[i] \ud800")


def test_lone_surrogate_in_input_names():
    with pytest.raises(ValueError, match="a name in inputs is not valid text"):
        neoflow.op("Y[i] = X[i]", inputs=["X\udc80"])


def test_names_given_as_a_string():
    with pytest.raises(TypeError, match="inputs must be a list of tensor names, got the string 'XW'"):
        neoflow.op("Y[i] = X[i] * W[i]", inputs="XW")


@pytest.mark.parametrize("text", ["r=2,s", "r", "r=x", "r=2,,s=3", "=2", "r=-1", "2=3"])
def test_malformed_sizes_text(text):
    op = neoflow.op("Y[i, r] = X[i] * 2.0")
    with pytest.raises(ValueError, match="malformed sizes text|must be a positive int"):
        op.custom_op([torch.randn(3)], text)
    with pytest.raises(ValueError, match="malformed sizes text|must be a positive int"):
        parse_sizes_text(text)


def test_sizes_text_round_trip():
    assert parse_sizes_text("p=8, q=3") == {"p": 8, "q": 3}
    assert parse_sizes_text("") == {}


def test_sizes_too_large_name_the_tensor():
    op = neoflow.op("Y[i, j] = X[0] * 2.0", name="big")
    with pytest.raises(MemoryError, match=r"op big: .* the largest is Y of shape \[1048576, 1048576\], 4.0 TiB"):
        op(torch.randn(3), sizes={"i": 2**20, "j": 2**20})


def test_cache_dir_that_is_a_file(tmp_path):
    f = tmp_path / "file"
    f.write_text("x")
    before = neoflow.configure()
    try:
        with pytest.raises(ValueError, match="exists and is not a directory"):
            neoflow.configure(cache_dir=f)
        with pytest.raises(TypeError, match="cache_dir must be a path"):
            neoflow.configure(cache_dir=3)
    finally:
        neoflow.configure(cache_dir=before["cache_dir"])


@pytest.mark.parametrize("delay", [1.0, 0.0])
def test_ctrl_c_during_a_build_stops_it(tmp_path, delay):
    """A compiler that takes 10 minutes (with a child process holding its
    output, as gcc's cc1 does): SIGINT ends the build and raises
    KeyboardInterrupt, also when it comes as the call starts, before its first
    build; the compiler and its child are gone. (That the process ends at all
    within the test's 120 s shows the build was stopped, not waited for; how
    soon it ends depends on the machine's load, so it is not asserted.)"""
    slow = tmp_path / "slowcc"
    pids = tmp_path / "pids"
    slow.write_text(f"#!/bin/sh\necho $$ >> {pids}\nsleep 600 &\necho $! >> {pids}\nsleep 600\n")
    slow.chmod(0o755)
    code = textwrap.dedent(
        """
        import signal, sys, time, torch, neoflow
        # A process started in the background by a shell without job
        # control inherits SIGINT ignored; Ctrl-C is what is tested here.
        signal.signal(signal.SIGINT, signal.default_int_handler)
        op = neoflow.op("Y[i] = X[i] * 3.0")
        try:  # the signal may come while the line below is still printing
            print("building", flush=True)
            op(torch.randn(4))
        except KeyboardInterrupt:
            print("interrupted", flush=True)
            sys.exit(3)
        """
    )
    env = dict(os.environ, NEOFLOW_CC=str(slow), NEOFLOW_CACHE_DIR=str(tmp_path / "cache"))
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    try:
        assert proc.stdout.readline().strip() == b"building"
        time.sleep(delay)  # 1 s: the compiler is running now
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == 3, (out + err).decode()
    assert b"interrupted" in out
    # None when Ctrl-C came before the compiler started. A killed process may
    # take a moment to go: wait for it, up to a bound far above any load.
    for pid in pids.read_text().split() if pids.exists() else []:
        for _ in range(300):
            if not _running(int(pid)):
                break
            time.sleep(0.1)
        assert not _running(int(pid)), f"compiler process {pid} outlived the interrupt by 30 s"


def _running(pid: int) -> bool:
    """Whether process pid exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_sizes_not_a_dict_under_autograd():
    op = neoflow.op("Y[i] = X[i] * 2.0")
    x = torch.randn(3, requires_grad=True)
    with pytest.raises(TypeError, match="sizes must be a dict of index name to extent, got int"):
        op(x, sizes=5)
