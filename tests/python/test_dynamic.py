"""Ops called with dimensions that vary (neoflow.dynamic): a kernel for the first shape, then one kernel for
every value of the dimensions that varied, whose values and gradients match PyTorch's at every size."""

import dataclasses
import os
import re
import subprocess
import sys
import textwrap
import threading

import neoflow
import pytest
import torch
from conftest import LAYER, tol, train_layer_over_sizes
from fuzz_programs import programs
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st


@pytest.fixture
def auto():
    neoflow.configure(dynamic="auto")
    yield
    neoflow.configure(dynamic="auto")


SIZES = [16, 12, 9, 20, 33, 1, 64, 2, 5, 7, 3, 40, 11, 17, 24, 8, 31, 6, 13, 4]


def test_twenty_batch_sizes_build_two_kernels(auto, dtype):
    op = neoflow.Op("Y[n, j] += X[n, k] * W[j, k]", name="dyn_linear")
    w = torch.randn(3, 5, dtype=dtype)
    for n in SIZES:
        x = torch.randn(n, 5, dtype=dtype)
        torch.testing.assert_close(op(x, w), x @ w.T, **tol(dtype))
    assert op.kernel_shapes() == [((16, 5), (3, 5)), (("s0", 5), (3, 5))]


def test_training_over_batch_sizes(auto):
    """Forward and gradient ops each build one kernel per shape until a size varies, then one for every
    size; gradients match PyTorch's (float64, gradcheck at a size no kernel was built for)."""
    op = neoflow.Op(LAYER, name="dyn_layer")
    w, b = train_layer_over_sizes(op, SIZES[:8])
    assert len(op.kernel_shapes()) == 2
    gop, _ = op.grad_op(torch.randn(5, 5, dtype=torch.float64), w, b, saved=True)
    assert [s[0] for s in gop.kernel_shapes()] == [(16, 5), ("s0", 5)]
    x = torch.randn(10, 5, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda x, w, b: op(x, w, b), (x, w, b))


def test_two_dimensions_vary(auto, dtype):
    """Batch and sequence length vary independently: one kernel serves every pair."""
    op = neoflow.Op("M[b, t] max= X[b, t, h]\nY[b, t, h] = exp(X[b, t, h] - M[b, t]) * G[h]", name="dyn_seq")
    g = torch.randn(4, dtype=dtype)
    for b, t in [(2, 8), (3, 5), (4, 7), (1, 1), (6, 2), (2, 9)]:
        x = torch.randn(b, t, 4, dtype=dtype)
        ref = torch.exp(x - x.amax(-1, keepdim=True)) * g
        torch.testing.assert_close(op(x, g), ref, **tol(dtype))
    assert op.kernel_shapes() == [((2, 8, 4), (4,)), (("s0", "s1", 4), (4,))]


def test_index_tensors(auto):
    """An embedding lookup over a varying batch: one kernel; an index out of range is still refused."""
    op = neoflow.Op("Y[b, d] = E[I[b], d]", name="dyn_embed")
    e = torch.randn(10, 3)
    for n in (4, 6, 2, 9):
        i = torch.randint(0, 10, (n,))
        torch.testing.assert_close(op(e, i), e[i])
    assert len(op.kernel_shapes()) == 2
    with pytest.raises(IndexError, match="outside \\[0, 10\\)"):
        op(e, torch.tensor([1, 10, 2]))


def test_refused_op_builds_per_shape(auto):
    """An op whose kernel would depend on the size another way (Y's extent is half X's) gets no kernel for
    every size, and builds one per shape, with the right values."""
    op = neoflow.Op("Y[i] = X[2 * i]", name="dyn_stride")
    for n in (8, 12, 10):
        x = torch.randn(n)
        torch.testing.assert_close(op(x), x[::2])
    assert op.kernel_shapes() == [((8,),), ((12,),), ((10,),)]


def test_guarded_window(auto):
    """A read that is in bounds only for some sizes (Z[i + 2], Z of its own length) gets a kernel for every
    size with a launch guard: it serves the shapes that meet the guard; a shape that breaks it is not run
    by that kernel but gets the op's own clear error."""
    op = neoflow.Op("Y[i] = X[i] + Z[i + 2]", name="dyn_window")
    for n, m in [(8, 13), (12, 15), (5, 9), (1, 3), (30, 32)]:
        x, z = torch.randn(n), torch.randn(m)
        torch.testing.assert_close(op(x, z), x + z[2 : n + 2])
    assert op.kernel_shapes() == [((8,), (13,)), (("s0",), ("s1",))]
    with pytest.raises(neoflow.Error, match="out of bounds"):
        op(torch.randn(9), torch.randn(10))


def test_batch_of_one_first(auto):
    """A first call with a batch of 1 is no anchor for a kernel for every size (a size takes two values of at
    least 2): the next shape becomes the anchor, and the one after builds that kernel."""
    op = neoflow.Op("Y[n, j] = tanh(X[n, j]) * 3.0", name="dyn_one_first")
    for n in (1, 4, 6, 9, 1):
        x = torch.randn(n, 3)
        torch.testing.assert_close(op(x), torch.tanh(x) * 3.0)
    assert op.kernel_shapes() == [((1, 3),), ((4, 3),), (("s0", 3),)]


BUCKETS = textwrap.dedent(
    """
    import sys, torch, neoflow
    op = neoflow.op("Y[n, j] += X[n, k] * W[j, k]", name="rows")
    w = torch.randn(256, 512, dtype=torch.float64)

    def check(n):
        x = torch.randn(n, 512, dtype=torch.float64)
        torch.testing.assert_close(op(x, w), x @ w.T)

    for n in (20, 24, 40, 33, 17, 3):
        check(n)
    status = [k for k in neoflow.wait_background(timeout=240) if "[" in k.kernel]
    if sys.argv[1] == "first":
        assert sorted(k.kernel for k in status) == ["rows [s0=32]", "rows [s0=64]"], status
        assert all(k.done and not k.error and k.trials >= 2 and k.best_ms <= k.default_ms for k in status), status
    else:
        assert status == [], status  # built from the records
    for n in (20, 24, 40, 33, 17, 50, 3):
        check(n)
    assert len(op.kernel_shapes()) == 2, op.kernel_shapes()
    print("picked", sum(k.swapped for k in status))
    """
)


def test_size_buckets_are_picked_and_kept(tmp_path):
    """A kernel with symbolic extents gets its schedules picked per size bucket in the background where it has
    enough work (20, 24 and 17 rows share bucket 32; 33 and 40 bucket 64; 3 rows, bucket 4, too little work),
    its values right before and after; a later process runs each bucket's picked kernel from the tuning
    database at once."""
    env = dict(os.environ, NEOFLOW_CACHE_DIR=str(tmp_path / "cache"))
    for run in ("first", "later"):
        out = subprocess.run([sys.executable, "-c", BUCKETS, run], env=env, capture_output=True, text=True, timeout=600)
        assert out.returncode == 0, out.stderr[-3000:]
        assert "picked" in out.stdout


def test_static_setting(auto):
    neoflow.configure(dynamic="static")
    op = neoflow.Op("Y[n] = X[n] * 2.0", name="dyn_static")
    for n in (4, 5, 6):
        torch.testing.assert_close(op(torch.ones(n)), torch.full((n,), 2.0))
    assert op.kernel_shapes() == [((4,),), ((5,),), ((6,),)]


def test_bad_setting():
    with pytest.raises(ValueError, match="expected one of auto, static"):
        neoflow.configure(dynamic="sometimes")
    neoflow.configure(dynamic="auto")


def test_fixed_dimension_mismatch_is_an_error(auto):
    """A shape that differs in a dimension the op ties to another input still gets its clear error."""
    op = neoflow.Op("Y[n, j] += X[n, k] * W[j, k]", name="dyn_mismatch")
    op(torch.randn(4, 5), torch.randn(3, 5))
    op(torch.randn(6, 5), torch.randn(3, 5))
    with pytest.raises(neoflow.Error, match="inconsistent ranges for index k"):
        op(torch.randn(6, 7), torch.randn(3, 5))


def test_threads(auto):
    """Threads calling one op at many sizes at once all get the right values."""
    op = neoflow.Op("Y[n, j] = X[n, j] * S[j] + 1.0", name="dyn_threads")
    s = torch.randn(6)
    op(torch.randn(3, 6), s)
    errors = []

    def run(k):
        try:
            for n in range(2 + k, 40, 4):
                x = torch.randn(n, 6)
                torch.testing.assert_close(op(x, s), x * s + 1.0)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=run, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert op.kernel_shapes() == [((3, 6), (6,)), (("s0", 6), (6,))]


@settings(max_examples=25, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck))
@given(prog=programs(), seed=st.integers(0, 2**16))
def test_generated_programs_over_sizes(auto, prog, seed):
    """Generated programs (tests/python/fuzz_programs.py) that do not name M or N, called at four values
    of M: the kernel for every size (where one is built) against PyTorch at each, and gradcheck at the last."""
    assume(prog.inputs and not re.search(r"\b[MN]\b", prog.source))
    op = neoflow.op(prog.source, inputs=prog.inputs, outputs=prog.outputs, M=prog.shapes["M"], N=prog.shapes["N"])
    gen = torch.Generator().manual_seed(seed)
    for m in (prog.shapes["M"], prog.shapes["M"] + 3, prog.shapes["M"] + 7, prog.shapes["M"] + 12):
        p = dataclasses.replace(prog, shapes={**prog.shapes, "M": m})
        xs = p.tensors(gen)
        got, want = op(*xs), p.reference(*xs)
        for g, w in zip(got if isinstance(got, tuple) else (got,), want):
            torch.testing.assert_close(g, w, rtol=1e-9, atol=1e-9, msg=lambda msg, m=m: f"M={m}: {msg}\n{prog.source}")
    assert len(op.kernel_shapes()) <= 4
    leaves = [x.clone().requires_grad_(True) for x in xs]
    assert torch.autograd.gradcheck(lambda *t: op(*t), leaves, atol=1e-6, rtol=1e-5), prog.source
