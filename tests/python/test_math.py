"""The math library on edge values: every one-argument intrinsic, atan2 and clamp against the matching torch
function on 0, -0, ±inf, NaN, the branch points and the rounding ties, in float64 and float32, forward and
(where PyTorch's gradient is finite) backward, on the CPU and on CUDA."""

import neoflow
import pytest
import torch
import torch.nn.functional as F

EDGES = [0.0, -0.0, float("inf"), float("-inf"), float("nan"), 1.0, -1.0, 0.5, -0.5, 1.5, 2.5, -2.5, 20.0, 20.5]
EDGES += [-20.0, 1e-8, -1e-8, 0.99, -0.99, 3.0, 100.0, -100.0]

UNARY = {
    "sin": torch.sin,
    "cos": torch.cos,
    "tan": torch.tan,
    "asin": torch.asin,
    "acos": torch.acos,
    "atan": torch.atan,
    "sinh": torch.sinh,
    "cosh": torch.cosh,
    "log1p": torch.log1p,
    "expm1": torch.expm1,
    "log2": torch.log2,
    "exp2": torch.exp2,
    "softplus": F.softplus,
    "floor": torch.floor,
    "ceil": torch.ceil,
    "round": torch.round,
    "trunc": torch.trunc,
    "sign": torch.sign,
}


def close(dtype):
    return {"rtol": 1e-12, "atol": 1e-12} if dtype == torch.float64 else {"rtol": 2e-6, "atol": 1e-6}


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32], ids=["f64", "f32"])
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_on_edge_values(name, dtype, device):
    op = neoflow.op(f"Y[i] = {name}(X[i])", name=f"edge_{name}")
    x = torch.tensor(EDGES, dtype=dtype, device=device)
    torch.testing.assert_close(op(x), UNARY[name](x), equal_nan=True, **close(dtype))
    # Backward where torch's derivative is finite: step functions give 0, the others their rule.
    xg = x.clone().requires_grad_(True)
    (want,) = torch.autograd.grad(UNARY[name](xg).sum(), xg)
    xn = x.clone().requires_grad_(True)
    (got,) = torch.autograd.grad(op(xn).sum(), xn)
    finite = torch.isfinite(want) & torch.isfinite(x)
    torch.testing.assert_close(got[finite], want[finite], **close(dtype))


# where exp's vector variant leaves its fast path (about 87.3 in float32, 708 in float64), and past overflow
SATURATED = [
    s * v for v in (86.9, 87.0, 87.4, 88.0, 88.7, 88.8, 90.0, 104.0, 120.0, 700.0, 709.0, 710.0, 1e4) for s in (1, -1)
]


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32], ids=["f64", "f32"])
def test_saturated_sigmoid(dtype, device):
    """sigmoid keeps exp on its fast path (kernels/cgen's nf_sigmoid) with PyTorch's values and gradients."""
    op = neoflow.op("Y[i] = sigmoid(X[i])", name="saturated_sigmoid")
    x = torch.tensor(EDGES + SATURATED, dtype=dtype, device=device)
    torch.testing.assert_close(op(x), torch.sigmoid(x), equal_nan=True, **close(dtype))
    xn, xg = x.clone().requires_grad_(True), x.clone().requires_grad_(True)
    (got,) = torch.autograd.grad(op(xn).sum(), xn)
    (want,) = torch.autograd.grad(torch.sigmoid(xg).sum(), xg)
    finite = torch.isfinite(x)
    torch.testing.assert_close(got[finite], want[finite], **close(dtype))
    # a whole vector of saturated lanes, of both signs, as a saturated RNN gate gives
    big = (torch.randn(4096, generator=torch.Generator().manual_seed(1), dtype=dtype) * 120).to(device)
    torch.testing.assert_close(op(big), torch.sigmoid(big), **close(dtype))


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32], ids=["f64", "f32"])
def test_atan2_and_clamp_on_edge_values(dtype, device):
    y = torch.tensor(EDGES, dtype=dtype, device=device)
    x = torch.tensor(EDGES[::-1], dtype=dtype, device=device)
    atan2 = neoflow.op("Z[i] = atan2(Y[i], X[i])", name="edge_atan2")
    torch.testing.assert_close(atan2(y, x), torch.atan2(y, x), equal_nan=True, **close(dtype))
    clamp = neoflow.op("Z[i] = clamp(X[i], -0.5, 2.0)", name="edge_clamp")
    torch.testing.assert_close(clamp(y), y.clamp(-0.5, 2.0), equal_nan=True, **close(dtype))


def test_math_gradcheck(device):
    """gradcheck in float64 away from the branch points, every intrinsic at once; atan2 in both arguments."""
    src = (
        "Y[i] = sin(X[i]) * cos(X[i]) + tan(X[i] * 0.5) + asin(X[i] * 0.5) + acos(X[i] * 0.4) + atan(X[i]) "
        "+ sinh(X[i]) * cosh(X[i]) + log1p(X[i] * X[i]) + expm1(X[i]) + log2(X[i] * X[i] + 1.0) + exp2(X[i]) "
        "+ softplus(X[i] * 3.0) + atan2(X[i], W[i] + 3.0) + floor(X[i]) + sign(X[i]) + clamp(X[i], -0.7, 0.7)"
    )
    op = neoflow.op(src, name="math_gradcheck")
    gen = torch.Generator().manual_seed(3)
    x = (torch.rand(33, generator=gen, dtype=torch.float64) * 1.8 - 0.9).to(device).requires_grad_(True)
    w = torch.rand(33, generator=gen, dtype=torch.float64).to(device).requires_grad_(True)
    assert torch.autograd.gradcheck(op, (x, w))
    assert torch.autograd.gradgradcheck(op, (x, w))


def test_dsl_spells_the_math_library():
    X = neoflow.tensor("X")
    i = neoflow.indices("i")
    e = neoflow.clamp(neoflow.atan2(neoflow.sin(X[i]), neoflow.softplus(X[i])), -1.0, neoflow.round(X[i]))
    assert "clamp(atan2(sin(X[i]), softplus(X[i])), (-1.0), round(X[i]))" in e.text


def test_unknown_and_misused_functions_are_clear_errors():
    with pytest.raises(neoflow.Error, match="unknown function cosine"):
        neoflow.op("Y[i] = cosine(X[i])")
    with pytest.raises(neoflow.Error, match="atan2 takes 2 arguments, got 1"):
        neoflow.op("Y[i] = atan2(X[i])")
    with pytest.raises(neoflow.Error, match="clamp takes 3 arguments"):
        neoflow.op("Y[i] = clamp(X[i], 0.0)")
