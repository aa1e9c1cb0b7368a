"""Sums of matrix products merged into one product (neoflow.backend.mmsum): the
graph pass on traced graphs against the graph before it, the cases it must
leave alone, and a recurrent cell's weight gradient through the backend."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import neoflow  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from backend_models import TOL, fresh_dynamo  # noqa: E402, F401 - fresh_dynamo: a fixture, used through pytestmark
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from neoflow.backend import mmsum  # noqa: E402
from torch.fx.experimental.proxy_tensor import make_fx  # noqa: E402

aten = torch.ops.aten


pytestmark = pytest.mark.usefixtures("fresh_dynamo")  # Dynamo's caches and the reports emptied around each test


def _traced(f, *args):
    """f as an ATen graph whose nodes carry fake values (node.meta["val"]), as AOT Autograd's do."""
    from neoflow.backend.decompose import table

    return make_fx(f, decomposition_table=table(), tracing_mode="fake")(*args)


def _count(gm, target) -> int:
    return sum(1 for n in gm.graph.nodes if n.target is target)


def _check_merge(f, args, merged: int):
    gm = _traced(f, *args)
    want = gm(*args)
    assert mmsum.merge(gm) == merged
    torch.testing.assert_close(gm(*args), want, **TOL)
    return gm


def test_products_of_one_orientation_become_one_product():
    a = [torch.randn(6, k) for k in (2, 3, 4)]
    b = [torch.randn(k, 5) for k in (2, 3, 4)]

    def f(a0, a1, a2, b0, b1, b2):
        return a0 @ b0 + a1 @ b1 + a2 @ b2

    gm = _check_merge(f, [*a, *b], 2)
    assert _count(gm, aten.mm.default) == 1 and _count(gm, aten.add.Tensor) == 0
    assert all(n.meta.get(mmsum.EAGER) for n in gm.graph.nodes if n.target is aten.cat.default)


def test_transposed_products_and_other_terms():
    """Each product under one or two transposes (a linear layer's weight gradient comes under two), plus a
    term that is no product: the product of the concatenations, transposed once, plus that term."""
    a = [torch.randn(4, 3) for _ in range(4)]
    b = [torch.randn(3, 6) for _ in range(4)]
    c = torch.randn(6, 4)

    def f(a0, a1, a2, a3, b0, b1, b2, b3, c):
        return (a0 @ b0).t() + (a1 @ b1).t() + c + (a2 @ b2).t().t().t() + (a3 @ b3).t()

    gm = _check_merge(f, [*a, *b, c], 3)
    assert _count(gm, aten.mm.default) == 1


def test_transposed_operands_are_concatenated_untransposed():
    """Operands that are transposes (dY_t^T of a weight gradient) are concatenated as they lie, then
    transposed: contiguous copies, and BLAS reads the transpose through its strides."""
    d = [torch.randn(2, 7) for _ in range(3)]
    x = [torch.randn(2, 6) for _ in range(3)]

    def f(d0, d1, d2, x0, x1, x2):
        return d0.t() @ x0 + d1.t() @ x1 + d2.t() @ x2

    gm = _check_merge(f, [*d, *x], 2)
    cats = [n for n in gm.graph.nodes if n.target is aten.cat.default]
    assert len(cats) == 2 and all(c.args[1] == 0 for c in cats), gm.graph
    assert all(p.op == "placeholder" for c in cats for p in c.args[0]), gm.graph


@pytest.mark.parametrize(
    "case",
    ["two_terms", "used_twice", "alpha", "broadcast", "mixed", "copies_more"],
)
def test_sums_left_alone(case):
    k = 20 if case == "copies_more" else 2  # a forward layer's x W1 + s W2 + h W3: each weight k x 8
    a = [torch.randn(8, k) for _ in range(4)]
    b = [torch.randn(k, 8) for _ in range(4)]

    def f(a0, a1, a2, a3, b0, b1, b2, b3):
        p = [a0 @ b0, a1 @ b1, a2 @ b2, a3 @ b3]
        if case == "two_terms":
            return p[0] + p[1]
        if case == "used_twice":  # a product something else reads too stays a product of its own
            return (p[0] + p[1] + p[2] + p[3]) * p[0]
        if case == "alpha":
            return torch.add(torch.add(p[0], p[1], alpha=2.0), p[2], alpha=3.0)
        if case == "broadcast":
            return (p[0][:1] + p[1]) + p[2][:, :1]
        if case == "copies_more":  # the concatenations would copy more than the merge saves
            return p[0] + p[1] + p[2] + p[3]
        return p[0] + p[1].t() + p[2].t()  # two of one orientation: under MIN_TERMS

    gm = _traced(f, *a, *b)
    want = gm(*a, *b)
    merged = mmsum.merge(gm)
    torch.testing.assert_close(gm(*a, *b), want, **TOL)
    assert merged == (2 if case == "used_twice" else 0)
    if case == "used_twice":  # p[1] to p[3] merged, p[0] kept for the product
        assert _count(gm, aten.mm.default) == 2


@settings(max_examples=20, deadline=None)
@given(
    ks=st.lists(st.integers(1, 5), min_size=1, max_size=7),
    flips=st.lists(st.integers(0, 2), min_size=7, max_size=7),
    extra=st.booleans(),
    m=st.integers(1, 4),
    n=st.integers(1, 4),
)
def test_generated_sums_match(ks, flips, extra, m, n):
    """Sums of 1-7 products of random inner sizes, each under 0-2 transposes, maybe with a term that is no
    product, in a random tree shape: the merged graph computes what the traced one did."""
    a = [torch.randn(m, k, dtype=torch.float64) for k in ks]
    b = [torch.randn(k, n, dtype=torch.float64) for k in ks]
    c = torch.randn(m, n, dtype=torch.float64)

    def f(c, *ab):
        terms = []
        for i in range(len(ks)):
            p = ab[i] @ ab[len(ks) + i]
            for _ in range(flips[i]):
                p = p.t()
            terms.append(p if flips[i] % 2 == 0 else p.t())  # every term m x n
        if extra:
            terms.append(c)
        total = terms[0]
        for j, t in enumerate(terms[1:]):
            total = total + t if j % 2 else t + total
        return total

    gm = _traced(f, c, *a, *b)
    want = gm(c, *a, *b)
    mmsum.merge(gm)
    torch.testing.assert_close(gm(c, *a, *b), want)


class _Cell(torch.nn.Module):
    """An unrolled recurrent cell: one weight at every step, so its gradient is a sum of products."""

    def __init__(self, d=8, h=6):
        super().__init__()
        self.lin = torch.nn.Linear(d + h, h)
        self.h = h

    def forward(self, xs):
        h = xs.new_zeros(xs.shape[1], self.h)
        for x in xs:
            h = torch.tanh(self.lin(torch.cat([x, h], 1)))
        return h


def test_recurrent_weight_gradient_through_the_backend():
    torch.manual_seed(0)
    cell, xs = _Cell(), torch.randn(5, 4, 8)
    twin = _Cell()
    twin.load_state_dict(cell.state_dict())
    y = neoflow.compile(twin)(xs)
    y.square().mean().backward()
    cell(xs).square().mean().backward()
    torch.testing.assert_close(y, cell(xs), **TOL)
    for p, q in zip(cell.parameters(), twin.parameters()):
        torch.testing.assert_close(q.grad, p.grad, **TOL)
    backward = [r for r in neoflow.compile_report() if r["graph"] == "backward"]
    assert backward and backward[0]["merged_products"] == 4  # five steps' weight gradients, one product


def test_recurrent_weight_gradcheck_in_float64():
    torch.manual_seed(0)
    cell = _Cell(3, 2).double()
    xs = torch.randn(4, 2, 3, dtype=torch.float64, requires_grad=True)
    compiled = neoflow.compile(lambda xs, w: torch.func.functional_call(cell, {"lin.weight": w}, (xs,)))
    w = cell.lin.weight.detach().clone().requires_grad_()
    assert torch.autograd.gradcheck(compiled, (xs, w))
    assert any(r["merged_products"] for r in neoflow.compile_report() if r["graph"] == "backward")
