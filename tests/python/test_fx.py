"""torch.fx: a module calling a neoflow op traces with symbolic_trace, the op one call_function node of
its custom op; the traced module computes what the module does, forward and backward; torch.export
keeps working."""

import neoflow
import torch


class Cell(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(6, 5, dtype=torch.float64))
        self.mm = neoflow.op("C[i,j] += A[i,k] * B[k,j]", name="fx_mm")
        self.two = neoflow.op("P[i] = X[i] * 2.0\nQ[i] = X[i] + 1.0", name="fx_two")

    def forward(self, x):
        y = torch.tanh(self.mm(x, self.w))
        p, q = self.two(y.sum(1))
        return p * q


def test_symbolic_trace_makes_one_node_per_op():
    m = Cell()
    gm = torch.fx.symbolic_trace(m)
    calls = [n for n in gm.graph.nodes if n.op == "call_function" and "neoflow" in str(n.target)]
    names = [str(n.target) for n in calls]  # neoflow.<name>_<hash>.default
    assert len(names) == 2 and names[0].startswith("neoflow.fx_mm_") and names[1].startswith("neoflow.fx_two_"), names
    x = torch.randn(4, 6, dtype=torch.float64, requires_grad=True)
    want = m(x)
    got = gm(x)
    torch.testing.assert_close(got, want)
    g = torch.randn_like(want)
    torch.testing.assert_close(torch.autograd.grad(got, (x, m.w), g), torch.autograd.grad(want, (x, m.w), g))


def test_symbolic_trace_passes_sizes():
    op = neoflow.op("Y[i] = X[i * 2]", name="fx_sizes")

    class M(torch.nn.Module):
        def forward(self, x):
            return op(x, sizes={"i": 3})

    gm = torch.fx.symbolic_trace(M())
    x = torch.randn(8)
    torch.testing.assert_close(gm(x), x[0:6:2])


def test_export_keeps_working():
    m = Cell()
    x = torch.randn(4, 6, dtype=torch.float64)
    ep = torch.export.export(m, (x,))
    torch.testing.assert_close(ep.module()(x), m(x))
