"""A lowered subgraph's call from its graph's code (neoflow._launch.subgraph): the kernel launched in C
where the arguments fit the one kernel of static shapes, forward's way otherwise."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import neoflow  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from backend_models import TOL, fresh_dynamo, record_subgraphs  # noqa: E402, F401 - fresh_dynamo: a fixture

pytestmark = pytest.mark.usefixtures("fresh_dynamo")


def test_a_subgraph_call_launches_its_kernel_in_c(monkeypatch):
    """After its first call, a lowered subgraph of static shapes holds its kernel for the C call (fast):
    calls that fit it launch there, with forward's results; strided inputs and missing arguments go to
    forward, which builds what they need or names the problem."""
    from neoflow._lib import launcher

    made = record_subgraphs(monkeypatch)
    torch.manual_seed(0)
    x, w = torch.randn(4, 6), torch.randn(6, 6)
    f = neoflow.compile(lambda a, b: ((a @ b).tanh() * 2.0 + a).relu(), measure=False)
    with torch.no_grad():
        y = f(x, w)
    torch.testing.assert_close(y, ((x @ w).tanh() * 2.0 + x).relu(), **TOL)
    (sub,) = made
    assert sub.fast is not None
    args = [(x @ w), x]
    fast = launcher.subgraph(sub, *args)
    torch.testing.assert_close(fast, sub.forward(*args), **TOL)
    wide = [torch.randn(6, 4).t(), torch.randn(4, 6)]  # strided: forward's way, a variant reading it in place
    torch.testing.assert_close(launcher.subgraph(sub, *wide), (wide[0].tanh() * 2.0 + wide[1]).relu(), **TOL)
    assert sub.fast is None  # two kernels now: every call goes to forward, which picks
    torch.testing.assert_close(launcher.subgraph(sub, *args), fast, rtol=0, atol=0)
    with pytest.raises(IndexError):
        launcher.subgraph(sub, args[0])
    with pytest.raises(TypeError, match="subgraph"):
        launcher.subgraph()
