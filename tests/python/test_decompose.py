"""Fused ATen operators under backend="neoflow": decomposed inside the subgraphs that lower their parts,
whole in eager otherwise (neoflow.backend.decompose)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import neoflow  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from backend_models import TOL, check_training, fresh_dynamo  # noqa: E402, F401
from neoflow.backend import decompose  # noqa: E402

pytestmark = pytest.mark.usefixtures("fresh_dynamo")

aten = torch.ops.aten


class Classifier(torch.nn.Module):
    """GELU, a layer norm, and cross entropy over integer targets."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(16, 10)
        self.ln = torch.nn.LayerNorm(10)

    def forward(self, x, target):
        return torch.nn.functional.cross_entropy(self.ln(torch.nn.functional.gelu(self.lin(x))), target)


def test_losses_lower_whole_and_backward_kernels_lower():
    torch.manual_seed(0)
    x, target = torch.randn(6, 16), torch.randint(0, 10, (6,))
    model = Classifier()
    twin = Classifier()
    twin.load_state_dict(model.state_dict())
    loss = neoflow.compile(twin, measure=False)(x, target)
    loss.backward()
    ref = model(x, target)
    ref.backward()
    torch.testing.assert_close(loss, ref, **TOL)
    for p, q in zip(model.parameters(), twin.parameters()):
        torch.testing.assert_close(q.grad, p.grad, **TOL)
    fw, bw = neoflow.compile_report()
    # the loss lowers whole (a gather of each sample's target; backend/indexlowering.py), not as its
    # decomposition's string of gathers, scatters and integer masks
    assert not any("nll" in k or "gather" in k or "scatter" in k for r in (fw, bw) for k in r["fallback"])
    # the layer norm's and GELU's backward kernels lower, decomposed inside their subgraph
    assert not any("layer_norm" in k or "gelu" in k for k in bw["fallback"]), bw
    assert bw["lowered"] > 0


def _node(fn, *args):
    """The one operator's node of fn traced on args (fake), the getitems of its outputs aside."""
    import operator

    from torch.fx.experimental.proxy_tensor import make_fx

    g = make_fx(fn, tracing_mode="fake")(*args)
    (node,) = [n for n in g.graph.nodes if n.op == "call_function" and n.target is not operator.getitem]
    return node


def test_what_lowers_whole():
    x, g = torch.randn(4, 8), torch.randn(4, 8)
    gelu_bw = _node(lambda g, x: aten.gelu_backward(g, x), g, x)
    assert decompose.decomposable(gelu_bw) and decompose.unsupported(gelu_bw, "eager") is None
    images, targets = torch.randn(2, 4, 3, 3), torch.zeros(2, 3, 3, dtype=torch.long)
    nll = _node(lambda x, t: aten.nll_loss2d_forward(x, t, None, 1, -100)[0], images, targets)
    why = decompose.unsupported(nll, "eager")
    assert why.startswith("its decomposition holds") and "int64" in why
    unbind = _node(lambda x: aten.unbind(x, 0)[1], x)
    assert decompose.unsupported(unbind, "eager") is decompose.VIEW
    # lowered directly: never decomposed
    assert not decompose.decomposable(_node(lambda x: aten.gelu(x), x))


def test_batch_norm_in_eval_mode_under_grad_makes_its_empty_statistics():
    """Eval-mode batch norm returns empty saved statistics: its decomposition lowers, the empty tensors are
    made by the subgraph's call."""
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4), torch.nn.Tanh()).eval()
    check_training(net, torch.randn(2, 3, 6, 6), measure=False)
    fw = neoflow.compile_report()[0]
    assert not any("batch_norm" in k for k in fw["fallback"]), fw
