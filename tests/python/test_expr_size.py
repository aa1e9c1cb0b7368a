"""Long expressions (issue 30, item 6): a product or a sum of 2,000 reads of
one input (14 KB of text) defines, runs forward and backward in seconds and
matches PyTorch; an op or gradient past the size limit is refused at once
with an "expression too large" error naming the limit.

The timed parts run in a child process with a timeout, so that a regression
to the old behaviour (minutes in differentiation) fails the test instead of
hanging the session."""

import os
import subprocess
import sys
import textwrap
import time

import neoflow
import pytest
import torch

N = 2000
# Seconds for define + forward + backward of one 2,000-term op, compiles
# included, in a fresh process (torch import included). It takes a few
# seconds; before the fix, differentiating the product took minutes.
LIMIT_S = 60

_CHILD = textwrap.dedent(
    """
    import sys, time
    import neoflow, torch

    n, kind = int(sys.argv[1]), sys.argv[2]

    @neoflow.op(name=f"long_{kind}")
    def long_op(X):
        i = neoflow.indices("i")
        Y = neoflow.tensor("Y")
        e = X[i]
        for _ in range(n - 1):
            e = e * X[i] if kind == "product" else e + X[i]
        Y[i] = e
        return Y

    g = torch.Generator().manual_seed(0)
    x = (0.999 + 0.002 * torch.rand(64, generator=g, dtype=torch.float64)).requires_grad_(True)
    dy = torch.rand(64, generator=g, dtype=torch.float64)
    start = time.perf_counter()
    y = long_op(x)
    (dx,) = torch.autograd.grad(y, x, dy)
    took = time.perf_counter() - start

    # PyTorch eager, the same chain of n - 1 operations.
    xr = x.detach().clone().requires_grad_(True)
    ref = xr
    for _ in range(n - 1):
        ref = ref * xr if kind == "product" else ref + xr
    (dref,) = torch.autograd.grad(ref, xr, dy)
    torch.testing.assert_close(y, ref, rtol=1e-10, atol=0)
    torch.testing.assert_close(dx, dref, rtol=1e-10, atol=0)
    print(f"OK {took:.3f}")
    """
)


@pytest.mark.parametrize("kind", ["product", "sum"])
def test_2000_terms_forward_backward_match_pytorch(kind):
    start = time.perf_counter()
    try:
        done = subprocess.run(
            [sys.executable, "-c", _CHILD, str(N), kind],
            capture_output=True,
            text=True,
            timeout=LIMIT_S,
            env=os.environ.copy(),
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"a {N}-term {kind} did not define, run and differentiate within {LIMIT_S} s")
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("OK"), done.stdout + done.stderr
    took = done.stdout.split()[1]
    print(f"{N}-term {kind}: {took} s in the child, {time.perf_counter() - start:.1f} s with start-up")


def test_long_product_here_matches_pytorch_float32():
    # The same op in this process, float32, shorter: the derivative is
    # n * pow(X, n - 1), which PyTorch computes as a chain of products.
    n = 300
    op = neoflow.op("Y[i] = " + " * ".join(["X[i]"] * n))
    x = (0.999 + 0.002 * torch.rand(33)).requires_grad_(True)
    (dx,) = torch.autograd.grad(op(x), x, torch.ones(33))
    xr = x.detach().clone().requires_grad_(True)
    ref = xr
    for _ in range(n - 1):
        ref = ref * xr
    (dref,) = torch.autograd.grad(ref, xr, torch.ones(33))
    torch.testing.assert_close(dx, dref, rtol=1e-4, atol=0)


def test_too_large_op_is_refused_at_once():
    src = "Y[i] = " + " + ".join(["X[i]"] * 30_000)  # 90,000 nodes
    with pytest.raises(neoflow.Error) as info:
        neoflow.op(src)
    msg = str(info.value)
    assert msg.startswith("expression too large: the op has at least 50001 nodes, the limit is 50000"), msg


def test_too_large_gradient_is_refused_at_once():
    # The partials of a product of 1,000 distinct reads are 1,000 products
    # of 999 factors: too large to differentiate, refused before any work
    # on them (when the call needs the gradient); the forward op runs.
    op = neoflow.op("Y[i] = " + " * ".join(f"X[i + {k}]" for k in range(1000)), name="shifted_product")
    x = 0.999 + 0.002 * torch.rand(1010, dtype=torch.float64)
    assert op(x).shape == (11,)
    x.requires_grad_(True)
    with pytest.raises(neoflow.Error) as info:
        op(x).sum().backward()
    msg = str(info.value)
    assert "expression too large: the gradient of op shifted_product" in msg, msg
    assert "the limit is 50000 (ir.MaxNodes)" in msg, msg
    assert "internal error" not in msg
