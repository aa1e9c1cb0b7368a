"""Every intrinsic's gradient at its special points against PyTorch's: zeros
of both signs, the ends of a domain, ties of min and max, overflow, the
infinities and NaN. A NaN where PyTorch has a number (atan2 at the origin
once) poisons everything it flows into."""

import math

import neoflow
import pytest
import torch

INF, NAN = math.inf, math.nan
COMMON = [0.0, -0.0, 1.0, -1.0, 1e-30, -1e-30, 0.5, 100.0, -100.0, INF, -INF, NAN]

# name in the expression language -> (PyTorch function, points)
UNARY = {
    "exp": (torch.exp, COMMON),
    "log": (torch.log, [0.0, 1e-30, 1.0, 100.0, INF, -1.0, NAN]),
    "sqrt": (torch.sqrt, [0.0, 1e-30, 1.0, 100.0, INF, -1.0, NAN]),
    "rsqrt": (torch.rsqrt, [0.0, 1e-30, 1.0, 100.0, INF, NAN]),
    "tanh": (torch.tanh, COMMON),
    "sigmoid": (torch.sigmoid, COMMON),
    "relu": (torch.relu, COMMON),
    "abs": (torch.abs, COMMON),
    "erf": (torch.erf, COMMON),
    "sin": (torch.sin, [0.0, -0.0, 1.0, -1.0, 100.0, NAN]),
    "cos": (torch.cos, [0.0, -0.0, 1.0, -1.0, 100.0, NAN]),
    "tan": (torch.tan, [0.0, -0.0, 1.0, -1.0, NAN]),
    "asin": (torch.asin, [0.0, -0.0, 0.5, 1.0, -1.0, NAN]),
    "acos": (torch.acos, [0.0, -0.0, 0.5, 1.0, -1.0, NAN]),
    "atan": (torch.atan, COMMON),
    "sinh": (torch.sinh, [0.0, -0.0, 1.0, -1.0, 100.0, -100.0, NAN]),
    "cosh": (torch.cosh, [0.0, -0.0, 1.0, -1.0, 100.0, -100.0, NAN]),
    "log1p": (torch.log1p, [0.0, -0.0, 1e-30, 1.0, -1.0, 100.0, INF, NAN]),
    "expm1": (torch.expm1, COMMON),
    "log2": (torch.log2, [0.0, 1e-30, 1.0, 100.0, INF, NAN]),
    "exp2": (torch.exp2, COMMON),
    "softplus": (torch.nn.functional.softplus, [0.0, 1.0, -1.0, 19.5, 20.0, 20.5, 100.0, -100.0, INF, -INF, NAN]),
    "floor": (torch.floor, COMMON),
    "ceil": (torch.ceil, COMMON),
    "round": (torch.round, COMMON),
    "trunc": (torch.trunc, COMMON),
    "sign": (torch.sign, COMMON),
}

PAIRS = [(a, b) for a in (0.0, -0.0, 1.0, -1.0, 2.0, INF, NAN) for b in (0.0, -0.0, 1.0, -1.0, 2.0, INF, NAN)]
BINARY = {
    "atan2": torch.atan2,
    "max": torch.maximum,
    "min": torch.minimum,
    "pow": torch.pow,
}


def grads(f, *xs):
    xs = [x.clone().requires_grad_(True) for x in xs]
    f(*xs).sum().backward()
    return [x.grad for x in xs]


def same(got, want, what):
    # atol: expm1's gradient is exp(x), 4e-44 at -100, where PyTorch's expm1(x) + 1 rounds to 0
    torch.testing.assert_close(got, want, equal_nan=True, rtol=1e-12, atol=1e-30, msg=lambda m: f"{what}: {m}")


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_gradient_at_special_points(name):
    fn, points = UNARY[name]
    x = torch.tensor(points, dtype=torch.float64)
    op = neoflow.op(f"Y[i] = {name}(X[i])")
    (got,) = grads(op, x)
    (want,) = grads(fn, x)
    same(got, want, f"d {name}(x)/dx at x = {points}")


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_gradient_at_special_points(name):
    a = torch.tensor([p[0] for p in PAIRS], dtype=torch.float64)
    b = torch.tensor([p[1] for p in PAIRS], dtype=torch.float64)
    if name == "pow":  # pow's base below 0 with a fractional exponent is NaN in both; keep to what PyTorch defines
        b = torch.where(a < 0, b.round(), b)
    op = neoflow.op(f"Y[i] = {name}(A[i], B[i])")
    got = grads(op, a, b)
    want = grads(BINARY[name], a, b)
    for k, (g, w) in enumerate(zip(got, want)):
        same(g, w, f"d {name}(a, b)/d{'ab'[k]} at (a, b) = {list(zip(a.tolist(), b.tolist()))}")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_atan2_gradient_is_zero_at_the_origin(dtype):
    """atan2 of two ReLU outputs meets (0, 0) often: the gradient is 0 there, as in PyTorch, never NaN."""
    y = torch.tensor([0.0, -0.0, 0.0, -0.0], dtype=dtype)
    x = torch.tensor([0.0, 0.0, -0.0, -0.0], dtype=dtype)
    gy, gx = grads(neoflow.op("Y[i] = atan2(A[i], B[i])"), y, x)
    assert not gy.isnan().any() and not gx.isnan().any()
    assert (gy == 0).all() and (gx == 0).all()
