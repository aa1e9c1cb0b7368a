"""Graphs with symbolic shapes under backend="neoflow" (backend/shapes.py): Dynamo's automatic dynamic
shapes and dynamic=True graphs stay lowered, compiled once for every shape, with eager's values and
gradients; a node whose statement would hold a size as a value runs in eager; a shape that breaks a fact
the lowering assumed runs its subgraph in eager."""

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
    def __init__(self, hidden=24, out=5):
        super().__init__()
        self.l1, self.ln = torch.nn.Linear(12, hidden), torch.nn.LayerNorm(hidden)
        self.l2 = torch.nn.Linear(hidden, out)

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
    and dynamic=True: every batch size runs lowered graphs, the symbolic graph compiled once."""
    torch.manual_seed(0)
    m = Net()
    f = neoflow.compile(m, dynamic=dynamic)
    for b in (16, 12, 9, 20, 33, 12):
        _check(m, f, torch.randn(b, 12))
    reps = neoflow.compile_report()
    # automatic: the first shape's static graph, then the symbolic one; dynamic=True: the symbolic one
    assert len(reps) == (4 if dynamic is None else 2), reps
    assert [r["graph"] for r in reps] == ["forward", "backward"] * (len(reps) // 2)
    fw, bw = reps[-2:]
    assert fw["lowered"] > 0 and bw["lowered"] > 0, (fw, bw)
    assert (fw["lowered"], bw["lowered"]) == (reps[0]["lowered"], reps[1]["lowered"]), reps
    assert not any("size" in why for r in (fw, bw) for why in r["fallback"].values()), (fw, bw)


def _kernels(reps) -> list[tuple]:
    """(built, every_size, reused) of each report."""
    return [(r["kernels"]["built"], r["kernels"]["every_size"], r["kernels"]["reused"]) for r in reps]


def test_one_kernel_for_every_batch_size():
    """The symbolic graph's subgraphs build one kernel for every size each at their first shape (the ops
    of the first shape's static graph, which they share, have seen another), later shapes build none and
    compile nothing (the compile report says so)."""
    torch.manual_seed(0)
    m = Net(hidden=20, out=7)  # ops of their own: no other test's graphs built their kernels
    f = neoflow.compile(m, measure=False)
    counts = []
    for b in (16, 12, 9, 20, 33):
        _check(m, f, torch.randn(b, 12))
        counts.append(_kernels(neoflow.compile_report()))
    reps = neoflow.compile_report()
    assert len(reps) == 4 and (reps[0]["lowered"], reps[1]["lowered"]) == (reps[2]["lowered"], reps[3]["lowered"])
    subgraphs = [r["subgraphs"] for r in reps]
    # the first shape: a kernel per subgraph (the same op at two shapes within it gets one for every size)
    assert [built for built, _, _ in counts[0]] == subgraphs[:2], counts
    assert all(built == every for built, every, _ in counts[1][2:]), counts  # the second: for every size only
    assert counts[-1][2:] == [(b, e, n * 3) for (b, e, _), n in zip(counts[1][2:], subgraphs[2:])], counts
    assert "0 built" not in neoflow.backend.explain_text(reps[-1])


class Centered(torch.nn.Module):
    def __init__(self, mod: int = 0):
        super().__init__()
        self.l, self.mod = torch.nn.Linear(6, 6), mod

    def forward(self, x):
        h = torch.tanh(self.l(x))
        out = h - h.mean(dim=0)  # 1 / N for a batch of N
        return out * (x.shape[0] % self.mod) if self.mod else out


def test_sizes_as_values_are_counted():
    """A mean over the batch (1 / N for a batch size N that varies) is lowered: the op counts N by a
    statement of its own, so its text names no size; values and gradients are eager's at every size."""
    torch.manual_seed(0)
    m = Centered()
    f = neoflow.compile(m, dynamic=True, measure=False)
    for b in (5, 8, 3):
        _check(m, f, torch.randn(b, 6))
    fw, bw = neoflow.compile_report()
    assert fw["lowered"] > 0 and list(fw["fallback"]) == ["aten.addmm.default"], fw
    assert bw["lowered"] > 0 and not any("size" in why for why in bw["fallback"].values()), bw


def test_sizes_not_counted_run_in_eager():
    """A size that a count cannot give (N % 3, which may be 0) leaves its node in eager, and the rest of the
    graph is lowered again without it."""
    torch.manual_seed(0)
    m = Centered(mod=3)
    f = neoflow.compile(m, dynamic=True, measure=False)
    for b in (5, 7, 4):
        _check(m, f, torch.randn(b, 6))
    fw = neoflow.compile_report()[0]
    assert fw["lowered"] > 0, fw
    assert any("symbolic size as a value" in why for why in fw["fallback"].values()), fw


class ConvBlock(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv, self.bn = torch.nn.Conv2d(3, 4, 3, padding=1), torch.nn.BatchNorm2d(4)

    def forward(self, x):
        return torch.relu(self.bn(self.conv(x))).mean(dim=(2, 3))


def test_batch_norm_over_a_varying_batch():
    """Batch norm in training mode over batches and images of symbolic size: its decomposition's count
    (sym_numel) is counted, so it is lowered as in a static graph; values and gradients are eager's."""
    torch.manual_seed(0)
    m = ConvBlock()
    f = neoflow.compile(m, dynamic=True, measure=False)
    for b, n in ((2, 8), (3, 8), (5, 6)):
        ref = ConvBlock()
        ref.load_state_dict(m.state_dict())
        _check(m, f, torch.randn(b, 3, n, n))
    fw, bw = neoflow.compile_report()
    assert not any("batch_norm" in k for k in (*fw["fallback"], *bw["fallback"])), (fw, bw)
    assert fw["lowered"] > 0 and bw["lowered"] > 0, (fw, bw)


def test_facts_the_lowering_assumed_are_checked():
    """What a comparison of symbolic sizes decides while a graph is lowered is not added to the shape
    environment's guards (Dynamo would install them) but collected, and checked at each new shape: a shape
    that breaks a fact runs the graph in eager."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.symbolic_shapes import DimDynamic, ShapeEnv, StatelessSymbolicContext

    env = ShapeEnv()
    mode = FakeTensorMode(shape_env=env)
    ctx = StatelessSymbolicContext(dynamic_sizes=[DimDynamic.DYNAMIC] * 2)
    fake = mode.from_tensor(torch.ones(5, 3), symbolic_context=ctx)
    before = len(env.guards)
    with shapes.assuming(env) as facts:
        assert fake.shape[0] > fake.shape[1]
    assert len(env.guards) == before and len(facts) == 1, (env.guards, facts)
    gm = torch.fx.symbolic_trace(lambda x: x + 1)
    next(iter(gm.graph.nodes)).meta["val"] = fake
    symbols = shapes.Symbols(gm)
    assert symbols.readable(facts)
    run = shapes.Guarded(lambda x: "lowered", lambda x: "eager", symbols, facts)
    assert run(torch.ones(5, 3)) == "lowered" and run(torch.ones(7, 2)) == "lowered"
    assert run(torch.ones(2, 4)) == "eager" and run(torch.ones(3, 3)) == "eager"


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
    ops name no length, and after the symbolic graph's first length no kernel is built."""
    torch.manual_seed(0)
    m = Attention().double()  # float64: softmax's gradient in float32 differs from eager's by rounding
    f = neoflow.compile(m, measure=False)
    for n in (16, 24, 9, 31, 5):
        (y, gs), (y0, g0s) = _step(m, f, torch.randn(2, n, 8, dtype=torch.float64))
        for got, want in zip([y, *gs], [y0, *g0s]):
            torch.testing.assert_close(got, want, rtol=1e-9, atol=1e-10)
        if n == 24:
            after = _kernels(neoflow.compile_report())
    counts = _kernels(neoflow.compile_report())
    assert len(counts) == 4 and counts[:2] == after[:2], counts  # the static graph, then the symbolic one
    assert [c[:2] for c in counts[2:]] == [c[:2] for c in after[2:]], (after, counts)  # nothing built after 24
    assert sum(every for _, every, _ in counts[2:]) > 0, counts


def test_symbolic_graphs():
    """shapes.shape_env tells a graph with symbolic sizes (a SymInt input) from one of static shapes."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.symbolic_shapes import ShapeEnv

    gm = torch.fx.symbolic_trace(lambda x, n: x * n)
    x, n = [node for node in gm.graph.nodes if node.op == "placeholder"]
    x.meta["val"], n.meta["val"] = torch.ones(2, 3), 4
    assert shapes.shape_env(gm) is None
    mode = FakeTensorMode(shape_env=ShapeEnv())
    with mode:
        x.meta["val"] = mode.from_tensor(torch.ones(4, 3))
    assert shapes.shape_env(gm) is None
    n.meta["val"] = mode.shape_env.create_unbacked_symint()
    assert shapes.shape_env(gm) is mode.shape_env
