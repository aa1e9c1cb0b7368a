"""Infinite and NaN constants: the literals inf, -inf and nan in statements,
the DSL and the backend's lowering, with their gradients; a masked-softmax
attention block lowers whole, fully masked rows included (NaN there, as in
PyTorch)."""

import math

import neoflow
import pytest
import torch
from backend_models import fresh_dynamo  # noqa: F401 - a fixture

TOL = dict(rtol=1e-5, atol=1e-6, equal_nan=True)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_literals_compute_and_print(dtype):
    op = neoflow.op(
        "Y[i] = where(M[i] > 0.5, -inf, X[i])\nZ[i] = X[i] * 0.0 + inf\nN[i] = X[i] + nan", inputs=["X", "M"]
    )
    x, m = torch.randn(6, dtype=dtype), torch.tensor([0.0, 1.0, 0.0, 1.0, 1.0, 0.0], dtype=dtype)
    y, z, n = op(x, m)
    torch.testing.assert_close(y, torch.where(m > 0.5, -math.inf, x))
    assert (z == math.inf).all() and n.isnan().all()
    text = str(op)
    assert "-inf" in text and "nan" in text, text
    torch.testing.assert_close(neoflow.op(text, inputs=["X", "M"])(x, m)[0], y)  # the printed form parses back


def test_max_reduction_from_minus_inf_and_its_gradient():
    """A masked max: rows with every element masked give -inf; the gradient flows only to the unmasked maxima."""
    op = neoflow.op("R[i] max= where(M[i, j] > 0.5, -inf, X[i, j])", inputs=["X", "M"])
    x = torch.randn(4, 5, dtype=torch.float64, requires_grad=True)
    m = (torch.rand(4, 5) > 0.5).double()
    m[2] = 1.0  # a fully masked row
    r = op(x, m)
    ref = torch.where(m > 0.5, -math.inf, x).amax(1)
    torch.testing.assert_close(r, ref)
    (g,) = torch.autograd.grad(r.clamp(min=-10).sum(), x)
    x0 = x.detach().requires_grad_()
    (g0,) = torch.autograd.grad(torch.where(m > 0.5, -math.inf, x0).amax(1).clamp(min=-10).sum(), x0)
    torch.testing.assert_close(g, g0)


def test_masked_softmax_op_against_pytorch_with_a_fully_masked_row():
    op = neoflow.op(
        "S[i, j] = where(M[i, j] > 0.5, -inf, X[i, j])\n"
        "A[i] max= S[i, j]\n"
        "E[i, j] = exp(S[i, j] - A[i])\n"
        "Z[i] += E[i, j]\n"
        "P[i, j] = E[i, j] / Z[i]",
        inputs=["X", "M"],
        outputs=["P"],
    )
    x = torch.randn(4, 6, dtype=torch.float64, requires_grad=True)
    m = (torch.rand(4, 6) > 0.6).double()
    m[1] = 1.0
    p = op(x, m)
    ref = torch.where(m > 0.5, -math.inf, x).softmax(-1)
    torch.testing.assert_close(p, ref, **TOL)
    assert p[1].isnan().all()  # PyTorch's softmax of a row of -inf is NaN too
    g = torch.randn(4, 6, dtype=torch.float64)
    g[1] = 0.0
    keep = torch.ones(4, 1, dtype=torch.float64)
    keep[1] = 0.0
    (gx,) = torch.autograd.grad(p.nan_to_num() * keep, x, g)
    x0 = x.detach().requires_grad_()
    (gx0,) = torch.autograd.grad(torch.where(m > 0.5, -math.inf, x0).softmax(-1).nan_to_num() * keep, x0, g)
    torch.testing.assert_close(gx, gx0, **TOL)


def test_dsl_writes_infinities():
    @neoflow.op
    def masked(X, M):
        i = neoflow.indices("i")
        Y = neoflow.tensor("Y")
        Y[i] = neoflow.where(M[i] > 0.5, -math.inf, X[i]) + math.nan * 0.0

    x, m = torch.randn(5), torch.tensor([1.0, 0.0, 1.0, 0.0, 0.0])
    assert masked(x, m).isnan().all()  # -inf + nan * 0 is NaN
    assert "-inf" in str(masked) and "nan" in str(masked), str(masked)


class MaskedAttention(torch.nn.Module):
    """Causal self-attention written with masked_fill(-inf), the way GPT-2 and BERT write theirs."""

    def __init__(self, d=16, heads=2):
        super().__init__()
        self.qkv, self.out, self.heads = torch.nn.Linear(d, 3 * d), torch.nn.Linear(d, d), heads

    def forward(self, x, pad):
        b, t, d = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        s = (q @ k.transpose(-1, -2)) / math.sqrt(d // self.heads)
        causal = torch.ones(t, t, dtype=torch.bool).triu(1)
        s = s.masked_fill(causal | pad[:, None, None, :], float("-inf"))
        a = s.softmax(-1).nan_to_num()
        return self.out((a @ v).transpose(1, 2).reshape(b, t, d))


@pytest.mark.usefixtures("fresh_dynamo")
def test_masked_attention_lowers_with_no_subgraph_refused():
    torch.manual_seed(0)
    model = MaskedAttention()
    x = torch.randn(2, 5, 16)
    pad = torch.tensor([[False] * 5, [False, False, True, True, True]])
    pad[1, 0] = True  # row 0 of example 1 has every key masked: NaN in softmax, 0 after nan_to_num
    ref = model(x, pad)
    x0 = x.clone().requires_grad_()
    ref = model(x0, pad)
    (g0,) = torch.autograd.grad(ref.sum(), x0)
    x1 = x.clone().requires_grad_()
    got = neoflow.compile(model)(x1, pad)
    (g1,) = torch.autograd.grad(got.sum(), x1)
    torch.testing.assert_close(got, ref, **TOL)
    torch.testing.assert_close(g1, g0, **TOL)
    for rep in neoflow.compile_report():
        refused = {k: v for k, v in rep["fallback"].items() if "subgraph" in k or "inf" in str(v)}
        assert not refused, rep
        assert "aten.masked_fill.Scalar" not in rep["fallback"] and "aten.where.self" not in rep["fallback"], rep
