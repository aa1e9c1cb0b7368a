"""Models and checks shared by the backend's tests on the CPU (test_backend.py) and on CUDA (test_cuda.py)."""

import copy

import neoflow
import pytest
import torch

TOL = {"rtol": 1e-4, "atol": 1e-5}


@pytest.fixture
def fresh_dynamo():
    """Dynamo's caches and neoflow's compile reports emptied before and after a test (test modules of the
    backend use it autouse)."""
    torch._dynamo.reset()
    neoflow.compile_report(clear=True)
    yield
    torch._dynamo.reset()


def check_training(model, *inputs, tol=TOL, **opts):
    """Forward and backward of model under backend="neoflow" against an eager twin; returns the reports."""
    twin = copy.deepcopy(model)
    compiled = neoflow.compile(twin, **opts)
    y = compiled(*inputs)
    y.square().mean().backward()
    ref = model(*inputs)
    ref.square().mean().backward()
    torch.testing.assert_close(y, ref, **tol)
    for (name, p), q in zip(model.named_parameters(), twin.parameters()):
        torch.testing.assert_close(q.grad, p.grad, **tol, msg=lambda m, name=name: f"{name}: {m}")
    return neoflow.compile_report()


def check_value_and_grad(f, x, *rest):
    """f(x, *rest) and its gradient in x under the backend against eager."""
    x = x.requires_grad_()
    y = neoflow.compile(f)(x, *rest)
    (g,) = torch.autograd.grad(y.sum(), x)
    x0 = x.detach().requires_grad_()
    y0 = f(x0, *rest)
    (g0,) = torch.autograd.grad(y0.sum(), x0)
    torch.testing.assert_close(y, y0, **TOL)
    torch.testing.assert_close(g, g0, **TOL)


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Sequential(
            torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.LayerNorm(32), torch.nn.Linear(32, 8)
        )

    def forward(self, x):
        return self.net(x)


class Block(torch.nn.Module):
    """A transformer block: attention, layer norms, an MLP."""

    def __init__(self, d=32, heads=4):
        super().__init__()
        self.ln1, self.ln2 = torch.nn.LayerNorm(d), torch.nn.LayerNorm(d)
        self.att = torch.nn.MultiheadAttention(d, heads, batch_first=True)
        self.mlp = torch.nn.Sequential(
            torch.nn.Linear(d, 4 * d), torch.nn.GELU(approximate="tanh"), torch.nn.Linear(4 * d, d)
        )

    def forward(self, x):
        h = self.ln1(x)
        x = x + self.att(h, h, h, need_weights=False)[0]
        return x + self.mlp(self.ln2(x))


class ConvNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(8)
        self.fc = torch.nn.Linear(8 * 4 * 4, 10)

    def forward(self, x):
        x = torch.relu(self.bn(self.conv(x)))
        return self.fc(torch.nn.functional.max_pool2d(x, 2).flatten(1))


def record_subgraphs(monkeypatch) -> list:
    """The lowered subgraphs (backend.subgraph.Subgraph) made from now on, in a list that fills as they are."""
    from neoflow.backend import subgraph

    made = []
    init = subgraph.Subgraph.__init__

    def record(self, *a, **k):
        init(self, *a, **k)
        made.append(self)

    monkeypatch.setattr(subgraph.Subgraph, "__init__", record)
    return made
