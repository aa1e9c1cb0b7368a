"""The views a compiled graph leaves in eager, made from their input's memory (backend/views.py): eager's
values, strides and gradients whether the input comes in the traced layout or another one, and the nodes
that keep their operators (a view that changes the dtype, symbolic shapes)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import neoflow  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from backend_models import TOL, fresh_dynamo  # noqa: E402, F401 - fresh_dynamo: a fixture
from neoflow.backend import views  # noqa: E402
from torch.fx.experimental.proxy_tensor import make_fx  # noqa: E402

pytestmark = pytest.mark.usefixtures("fresh_dynamo")

aten = torch.ops.aten


def test_view_takes_the_operator_for_another_layout():
    """Traced strides: the result is made directly; other strides: the operator makes it. Both equal
    the operator's own result, storage offset included."""
    base = torch.arange(40.0)
    x = base[4:].view(6, 6)  # offset 4
    plan = ((6, 1), (6, 6), (1, 6), 0, aten.t.default)
    y = views.view(*plan, x)
    assert y.data_ptr() == x.data_ptr() and y.stride() == (1, 6) and torch.equal(y, x.t())
    z = base[4:].view(6, 6).t()  # strides (1, 6): not the traced ones
    w = views.view(*plan, z)
    assert torch.equal(w, z.t()) and w.stride() == z.t().stride()
    s = base.view(8, 5)[1:, 1:4]  # a slice's offset moves with its input's
    plan = ((5, 1), (3, 3), (5, 1), 5, aten.slice.Tensor)
    assert torch.equal(views.view(*plan, s, 0, 1, 4), s[1:4])


def _graph(f, *xs):
    return make_fx(f)(*xs)


def test_plans_only_views_of_static_layouts_and_one_dtype():
    x = torch.randn(4, 6)
    gm = _graph(lambda a: (a.t().unsqueeze(0), a.view(torch.int32), a.relu()), x)
    made = views.reinterpret(gm)
    kinds = [n.args[4] if n.target is views.view else n.target for n in gm.graph.nodes if n.op == "call_function"]
    planned = (aten.t.default, aten.unsqueeze.default, aten.alias.default)
    assert made == sum(1 for k in kinds if k in planned) == 3, kinds
    assert aten.view.dtype in kinds and aten.relu.default in kinds  # a dtype's view keeps its operator
    out = gm(x)
    assert torch.equal(out[0], x.t().unsqueeze(0)) and out[0].stride() == x.t().unsqueeze(0).stride()
    assert torch.equal(out[1], x.view(torch.int32)) and torch.equal(out[2], x.relu())


def test_an_unsafe_view_is_reinterpreted():
    """A reshape's _unsafe_view (not a view by its schema) shares its input's memory: it is made so too."""
    x = torch.randn(4, 6)
    gm = _graph(lambda a: aten._unsafe_view.default(a * 2.0, [3, 8]), x)
    assert views.reinterpret(gm) == 1
    y = gm(x)
    assert torch.equal(y, (x * 2.0).view(3, 8)) and y.stride() == (8, 1)


def test_symbolic_shapes_keep_their_operators():
    gm = make_fx(lambda a: a.t().unsqueeze(0), tracing_mode="symbolic")(torch.randn(4, 6))
    assert views.reinterpret(gm) == 0
    assert torch.equal(gm(torch.ones(3, 5)), torch.ones(5, 3).unsqueeze(0))


def _check(f, *xs):
    xs = [x.requires_grad_() for x in xs]
    x0 = [x.detach().clone().requires_grad_() for x in xs]
    y, y0 = neoflow.compile(f, measure=False)(*xs), f(*x0)
    torch.testing.assert_close(y, y0, **TOL)
    assert y.stride() == y0.stride()
    for g, g0 in zip(torch.autograd.grad(y.sum(), xs), torch.autograd.grad(y0.sum(), x0)):
        torch.testing.assert_close(g, g0, **TOL)


def test_views_around_products_match_eager():
    """An attention-like block: the views between the products and the lowered parts are reinterpreted
    (the report counts them), with eager's values and gradients."""
    torch.manual_seed(0)
    neoflow.compile_report(clear=True)

    def f(x, w):
        q = (x @ w).view(2, 8, 2, 4).transpose(1, 2)
        s = torch.softmax(q @ q.transpose(-1, -2), dim=-1)
        return (s @ q).transpose(1, 2).reshape(2, 8, 8).tanh()

    _check(f, torch.randn(2, 8, 8), torch.randn(8, 8))
    reps = neoflow.compile_report()
    assert sum(r["reinterpreted_views"] for r in reps) >= 4, [r["reinterpreted_views"] for r in reps]


def test_every_reinterpreted_view_equals_its_operators(monkeypatch):
    """In a compiled training graph, each view made from memory equals the operator's own result (values,
    strides, storage offset), whichever way it was made."""
    made = []
    real = views.view

    def both(strides, size, stride, delta, op, x, *args, **kwargs):
        y, y0 = real(strides, size, stride, delta, op, x, *args, **kwargs), op(x, *args, **kwargs)
        assert torch.equal(y, y0) and y.stride() == y0.stride() and y.storage_offset() == y0.storage_offset()
        made.append(op)
        return y

    monkeypatch.setattr(views, "view", both)
    torch.manual_seed(0)
    _check(lambda a, b: ((a @ b).t() * 2.0).relu().t().reshape(6, 4) @ b.t(), torch.randn(6, 5), torch.randn(5, 4))
    assert made
