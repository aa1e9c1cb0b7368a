"""Dense layouts other than row-major under backend="neoflow" (backend/layout.py): channels-last and
transposed tensors read in place as the tensors of their dimensions in memory order, and outputs stored
in the layout eager gives them (no copy in or out), with eager's values, gradients and strides."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import neoflow  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from backend_models import TOL, fresh_dynamo, record_subgraphs  # noqa: E402, F401 - fresh_dynamo: a fixture
from neoflow.backend import layout  # noqa: E402

pytestmark = pytest.mark.usefixtures("fresh_dynamo")

CL = torch.channels_last


def test_physical_order():
    assert layout.physical_order((2, 3, 4, 5), (60, 20, 5, 1)) is None  # row-major
    assert layout.physical_order((2, 3, 4, 5), (60, 1, 15, 3)) == [0, 2, 3, 1]  # channels-last
    assert layout.physical_order((3, 4), (1, 3)) == [1, 0]  # transposed
    assert layout.physical_order((2, 3, 1, 1), (3, 1, 3, 3)) is None  # one row-major order fits
    assert layout.physical_order((2, 3, 4, 1), (12, 1, 3, 3)) == [0, 2, 1, 3]  # one-element dims last
    assert layout.physical_order((3, 4), (0, 1)) is None  # expanded: not dense
    assert layout.physical_order((3, 4), (2, 1)) is None  # overlapping
    assert layout.physical_order((5,), (1,)) is None
    assert layout.physical_order((0, 4), (1, 0)) is None


def _check(f, *xs):
    """f under the backend against eager: values, strides and the gradients of every input."""
    xs = [x.requires_grad_() for x in xs]
    x0 = [x.detach().clone().requires_grad_() for x in xs]  # clone keeps the layout
    y, y0 = neoflow.compile(f, measure=False)(*xs), f(*x0)
    torch.testing.assert_close(y, y0, **TOL)
    assert y.stride() == y0.stride(), (y.stride(), y0.stride())
    for g, g0 in zip(torch.autograd.grad(y.sum(), xs), torch.autograd.grad(y0.sum(), x0)):
        torch.testing.assert_close(g, g0, **TOL)
    return y


def test_channels_last_in_and_out(monkeypatch):
    """Channels-last inputs are read in place and the channels-last output is stored so, in the
    subgraph's op; the tensors of the subgraph's rank are lowered in that order."""
    made = record_subgraphs(monkeypatch)
    x = torch.randn(2, 5, 4, 3).to(memory_format=CL)
    y = torch.randn(2, 5, 4, 3).to(memory_format=CL)
    out = _check(lambda a, b: (torch.relu(a) * 2.0 + b).sigmoid() * a, x, y)
    assert out.is_contiguous(memory_format=CL) and not out.is_contiguous()
    laid = [s for s in made if s.physical]
    assert laid, [s.source for s in made]
    assert any(sig for s in laid for sig in s.variants if sig and s.variants[sig] is not None)


def test_channels_last_reductions_per_channel(monkeypatch):
    """A batch norm's statistics over a channels-last input (sums over N, H and W per channel)."""
    torch.manual_seed(0)
    bn = torch.nn.BatchNorm2d(5)
    x = torch.randn(2, 5, 4, 3).to(memory_format=CL)
    _check(lambda a: torch.relu(bn(a)) + a, x)


def test_transposed_output_stays_transposed():
    """An elementwise result of a transposed view keeps the view's layout, as in eager."""
    x = torch.randn(6, 4)
    out = _check(lambda a: (a.t() * 3.0).tanh() + 1.0, x)
    assert out.stride() == (1, 4)


def test_channels_last_input_row_major_output():
    x = torch.randn(2, 5, 4, 3).to(memory_format=CL)
    out = _check(lambda a: (a * 2.0).contiguous() + 1.0, x)
    assert out.is_contiguous()


def test_channels_last_comparison():
    """A bool output of a channels-last comparison, in eager's layout."""
    x = torch.randn(2, 5, 4, 3).to(memory_format=CL)
    f = neoflow.compile(lambda a: (a * 2.0) > 0.5, measure=False)
    got, want = f(x), (x * 2.0) > 0.5
    assert got.dtype == torch.bool and torch.equal(got, want) and got.stride() == want.stride()
