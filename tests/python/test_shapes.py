"""Graphs with symbolic shapes under backend="neoflow" (backend/shapes.py): Dynamo's automatic dynamic
shapes and dynamic=True graphs stay lowered, compiled once per concrete shape, with eager's values and
gradients; past MAX_SHAPES shapes a graph runs in eager."""

import logging
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import neoflow  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from backend_models import TOL, fresh_dynamo  # noqa: E402, F401 - a fixture, used through pytestmark
from neoflow.backend import shapes  # noqa: E402

pytestmark = pytest.mark.usefixtures("fresh_dynamo")


class Net(torch.nn.Module):
    def __init__(self, hidden=24):
        super().__init__()
        self.l1, self.ln = torch.nn.Linear(12, hidden), torch.nn.LayerNorm(hidden)
        self.l2 = torch.nn.Linear(hidden, 5)

    def forward(self, x):
        return self.l2(self.ln(torch.nn.functional.gelu(self.l1(x))))


def _step(m, f, x):
    """f(x) and the gradients of m's parameters, then eager's."""
    out = []
    for g in (f, m):
        y = g(x)
        y.square().sum().backward()
        out.append((y.detach(), [p.grad.clone() for p in m.parameters()]))
        m.zero_grad()
    return out


def _check(m, f, x):
    (y, gs), (y0, g0s) = _step(m, f, x)
    torch.testing.assert_close(y, y0, **TOL)
    for g, g0 in zip(gs, g0s):
        torch.testing.assert_close(g, g0, **TOL)


@pytest.mark.parametrize("dynamic", [None, True])
def test_varying_batch_sizes_stay_lowered(dynamic):
    """Automatic dynamic shapes (Dynamo recompiles the graph with symbolic sizes at the second batch size)
    and dynamic=True: every batch size runs lowered graphs, each shape compiled once."""
    torch.manual_seed(0)
    m = Net()
    f = neoflow.compile(m, dynamic=dynamic)
    seen = 0
    for b in (16, 12, 9, 20, 33, 12):
        _check(m, f, torch.randn(b, 12))
        reps = neoflow.compile_report()
        if b == 12 and seen == 10:  # a shape seen before: nothing compiled again
            assert len(reps) == seen
            continue
        assert len(reps) == seen + 2, reps  # this shape's forward and backward graphs
        seen = len(reps)
        fw, bw = reps[-2:]
        assert (fw["graph"], bw["graph"]) == ("forward", "backward")
        assert fw["lowered"] > 0 and bw["lowered"] > 0, (fw, bw)
        assert not any("dynamic shape" in why for r in (fw, bw) for why in r["fallback"].values())


def _kernels(reps) -> list[tuple]:
    """(built, every_size, reused) of each report."""
    return [(r["kernels"]["built"], r["kernels"]["every_size"], r["kernels"]["reused"]) for r in reps]


def test_one_kernel_for_every_batch_size():
    """The graphs compiled for each shape share their subgraphs' ops: the second shape builds one kernel
    for every size per subgraph, later shapes build none (the compile report says so)."""
    torch.manual_seed(0)
    m = Net(hidden=20)  # ops of their own: no other test's graphs built their kernels
    f = neoflow.compile(m, measure=False)
    for b in (16, 12, 9, 20, 33):
        _check(m, f, torch.randn(b, 12))
    reps = neoflow.compile_report()
    assert (
        len(reps) == 10 and len({r["lowered"] for r in reps[::2]}) == 1 and len({r["lowered"] for r in reps[1::2]}) == 1
    )
    subgraphs = [r["subgraphs"] for r in reps]
    counts = _kernels(reps)
    # the first shape: a kernel per subgraph (the same op at two shapes within it gets one for every size)
    assert [built for built, _, _ in counts[:2]] == subgraphs[:2], counts
    assert all(built == every for built, every, _ in counts[2:4]), counts  # the second: for every size only
    assert counts[4:] == [(0, 0, n) for n in subgraphs[4:]], counts  # then none
    assert "kernels: 0 built" in neoflow.backend.explain_text(reps[-1])


class Attention(torch.nn.Module):
    """Softmax attention over a sequence, with the (B*L, H) <-> (B, L, H) reshapes around its matmuls."""

    def __init__(self):
        super().__init__()
        self.q, self.k, self.o = torch.nn.Linear(8, 8), torch.nn.Linear(8, 8), torch.nn.Linear(8, 8)

    def forward(self, x):
        b, n, h = x.shape
        flat = x.reshape(b * n, h)
        q, k = self.q(flat).reshape(b, n, h), self.k(flat).reshape(b, n, h)
        a = torch.softmax(q @ k.transpose(1, 2) / 8**0.5, dim=-1)
        return torch.nn.functional.layer_norm(self.o((a @ x).reshape(b * n, h)), (h,)).reshape(b, n, h)


def test_sequence_lengths_share_kernels():
    """Sequence lengths that vary: the reshapes at the subgraphs' borders stay in eager, so the subgraphs'
    ops name no length, and after the second length no kernel is built."""
    torch.manual_seed(0)
    m = Attention().double()  # float64: softmax's gradient in float32 differs from eager's by rounding
    f = neoflow.compile(m, measure=False)
    for n in (16, 24, 9, 31, 5):
        (y, gs), (y0, g0s) = _step(m, f, torch.randn(2, n, 8, dtype=torch.float64))
        for got, want in zip([y, *gs], [y0, *g0s]):
            torch.testing.assert_close(got, want, rtol=1e-9, atol=1e-10)
    counts = _kernels(neoflow.compile_report())
    assert all(built == 0 for built, _, _ in counts[4:]), counts
    assert sum(every for _, every, _ in counts[2:4]) > 0, counts


def test_shapes_past_the_limit_run_in_eager(monkeypatch, caplog):
    monkeypatch.setattr(shapes, "MAX_SHAPES", 2)
    torch.manual_seed(0)
    m = Net()
    f = neoflow.compile(m, dynamic=True, measure=False)
    with caplog.at_level(logging.WARNING, logger="neoflow.compile"):
        for b in (4, 5, 6, 7):
            _check(m, f, torch.randn(b, 12))
    assert len(neoflow.compile_report()) == 4  # two shapes compiled, forward and backward each
    warned = [r.getMessage() for r in caplog.records if "dynamic shapes" in r.getMessage()]
    assert len(warned) == 1 and "2 shapes" in warned[0], warned


def test_symbolic_inputs():
    assert not shapes.symbolic([torch.ones(2, 3), 4])
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.symbolic_shapes import ShapeEnv

    mode = FakeTensorMode(shape_env=ShapeEnv())
    with mode:
        fake = mode.from_tensor(torch.ones(4, 3))
    assert not shapes.symbolic([fake])
    sym = mode.shape_env.create_unbacked_symint()
    assert shapes.symbolic([fake, sym])
