"""Every spine operator matches plain PyTorch on CPU, in float32 and float64,
with the fusion passes on and off."""

import neoflow
import pytest
import torch
from conftest import tol
from ops_table import CASES, as_tuple


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_matches_pytorch(case, dtype, fusion):
    tensors = case.inputs("test", dtype)
    op = case.op(tensors)
    sizes = case.sizes(*tensors) if case.sizes else None
    got = as_tuple(op(*tensors, sizes=sizes))
    want = as_tuple(case.reference(*tensors))
    assert len(got) == len(want), f"{len(got)} outputs, the reference has {len(want)}"
    for g, w in zip(got, want):
        assert g.dtype == dtype
        assert g.shape == w.shape, f"shape: got {tuple(g.shape)} want {tuple(w.shape)}"
        torch.testing.assert_close(g, w, **tol(dtype))


def test_elementwise_functions_each(dtype):
    x = torch.rand(4, 33, dtype=dtype) + 0.1  # positive, for log/sqrt/rsqrt/pow
    y = torch.randn(4, 33, dtype=dtype)
    funcs = {
        "exp(X[i,j])": torch.exp(x),
        "log(X[i,j])": torch.log(x),
        "sqrt(X[i,j])": torch.sqrt(x),
        "rsqrt(X[i,j])": torch.rsqrt(x),
        "tanh(Z[i,j])": torch.tanh(y),
        "sigmoid(Z[i,j])": torch.sigmoid(y),
        "relu(Z[i,j])": torch.relu(y),
        "abs(Z[i,j])": torch.abs(y),
        "pow(X[i,j], 1.5)": torch.pow(x, 1.5),
        "min(X[i,j], Z[i,j])": torch.minimum(x, y),
        "max(X[i,j], Z[i,j])": torch.maximum(x, y),
        "erf(Z[i,j])": torch.erf(y),
        "X[i,j] % 0.3": torch.remainder(x, 0.3),
        "Z[i,j] % 0.7": torch.remainder(y, 0.7),
        "where(Z[i,j] > 0.0, X[i,j], -Z[i,j])": torch.where(y > 0, x, -y),
    }
    for expr, want in funcs.items():
        op = neoflow.op(f"Y[i,j] = {expr} + 0.0 * X[i,j] + 0.0 * Z[i,j]", inputs=["X", "Z"])
        torch.testing.assert_close(op(x, y), want, **tol(dtype), msg=lambda m, e=expr: f"{e}: {m}")


def test_non_contiguous_inputs(dtype):
    matmul = neoflow.op("C[i,j] += A[i,k] * B[k,j]")
    a = torch.randn(9, 7, dtype=dtype).T  # transposed view
    b = torch.randn(18, 11, dtype=dtype)[::2]  # strided rows
    assert not a.is_contiguous() and not b.is_contiguous()
    torch.testing.assert_close(matmul(a, b), a @ b, **tol(dtype))


def test_index_arithmetic_floor_semantics():
    # (i - 3) / 2 and (i - 3) % 2 on negative values follow floor semantics.
    op = neoflow.op("Y[i] = X[i] * 0.0 + (i - 3) / 2 * 10 + (i - 3) % 2")
    x = torch.zeros(7, dtype=torch.float64)
    i = torch.arange(7, dtype=torch.float64)
    want = torch.div(i - 3, 2, rounding_mode="floor") * 10 + torch.remainder(i - 3, 2)
    torch.testing.assert_close(op(x), want)


def test_named_constants_int_and_float():
    op = neoflow.op("Y[i] = X[i*S] * Alpha", S=2, Alpha=0.5)
    x = torch.arange(10, dtype=torch.float64)
    torch.testing.assert_close(op(x), x[::2] * 0.5)


def test_multiple_outputs_in_statement_order():
    op = neoflow.op("S[i] += X[i,j]\nM[i] max= X[i,j]")
    x = torch.randn(4, 6, dtype=torch.float64)
    s, m = op(x)
    torch.testing.assert_close(s, x.sum(1))
    torch.testing.assert_close(m, x.amax(1))
    assert op.outputs == ("S", "M")


def test_scalar_output():
    op = neoflow.op("S[] += X[i,j] * X[i,j]")
    x = torch.randn(5, 6, dtype=torch.float64)
    got = op(x)
    assert got.shape == ()
    torch.testing.assert_close(got, (x * x).sum())


def test_product_and_min_reductions(dtype):
    x = torch.rand(4, 5, dtype=dtype) + 0.5
    torch.testing.assert_close(neoflow.op("P[i] *= X[i,j]")(x), x.prod(1), **tol(dtype))
    torch.testing.assert_close(neoflow.op("M[i] min= X[i,j]")(x), x.amin(1), **tol(dtype))


def test_sizes_at_definition_and_call():
    pool = neoflow.op("Y[p] max= X[p*2+r]", sizes={"r": 2})
    x = torch.randn(10, dtype=torch.float64)
    torch.testing.assert_close(pool(x), x.view(5, 2).amax(1))
    pool3 = pool(x, sizes={"r": 3})  # call-time sizes override
    torch.testing.assert_close(pool3, x[:9].unfold(0, 3, 2).amax(1))


def test_lazily_negated_views():
    op = neoflow.op("Y[i] = X[i] * 1.0")
    x = torch.arange(4.0)
    neg = torch._neg_view(x)
    assert neg.is_neg()
    torch.testing.assert_close(op(neg), -x)
    torch.testing.assert_close(op(neg), -x)  # again, on the direct path (the kernel is built)


def test_calls_on_the_direct_path(monkeypatch):
    """Once a kernel is built, a call without autograd goes straight to it (Kernel.call), with the results
    of the checked path for views, lazily negated views, several outputs and Parameters; calls under
    autograd, with sizes, or with other dtypes take the checked paths."""
    from neoflow.kernel import Kernel

    two = neoflow.op("Y[i] = X[i] + Z[i]; W[i] = X[i] * Z[i]")
    x, z = torch.randn(6), torch.randn(12)[::2]  # a strided view
    want = (x + z, x * z)
    direct = []
    call = Kernel.call
    monkeypatch.setattr(Kernel, "call", lambda self, ts: direct.append(1) or call(self, ts))
    for args in [(x, z), (x, z), (torch._neg_view(x), z), (torch.nn.Parameter(x, requires_grad=False), z)]:
        got = two(*args)
        sign = -1.0 if args[0].is_neg() else 1.0
        torch.testing.assert_close(got[0], sign * x + z)
        torch.testing.assert_close(got[1], sign * want[1])
    assert len(direct) == 3  # the first call built the kernel
    xg = x.clone().requires_grad_()
    y, w = two(xg, z)
    assert y.requires_grad and len(direct) == 3  # autograd: the op's autograd.Function
    with torch.no_grad():
        assert not two(xg, z)[0].requires_grad and len(direct) == 4
    two(x.double(), z.double())
    assert len(direct) == 4  # a new dtype: built on the checked path
