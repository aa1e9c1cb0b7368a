"""CapsuleNet and a ShuffleNet unit written with neoflow ops train for a few
steps in lockstep with the same models in plain PyTorch (float64)."""

import math
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2]))

import pytest  # noqa: E402
import torch  # noqa: E402

from workloads import capsnet, shufflenet  # noqa: E402

D = torch.float64
STEPS = 3

WORKLOADS = {
    "capsnet": (capsnet, capsnet.CapsNetNeoflow, capsnet.CapsNetTorch),
    "shufflenet": (shufflenet, shufflenet.ShuffleUnitNeoflow, shufflenet.ShuffleUnitTorch),
}


@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_trains_in_lockstep_with_pytorch(name):
    mod, nf_cls, pt_cls = WORKLOADS[name]
    cfg = mod.CONFIG["small"]
    x, labels = mod.synthetic_data(cfg, dtype=D, seed=0)
    nf, pt = nf_cls(cfg, dtype=D, seed=1), pt_cls(cfg, dtype=D, seed=2)
    assert [(k, v.shape) for k, v in nf.state_dict().items()] == [(k, v.shape) for k, v in pt.state_dict().items()]
    pt.load_state_dict(nf.state_dict())
    nf.train()
    pt.train()
    opt_nf = torch.optim.Adam(nf.parameters(), lr=0.01)
    opt_pt = torch.optim.Adam(pt.parameters(), lr=0.01)
    for step in range(STEPS):
        outs, losses, grads = [], [], []
        for model, opt in ((nf, opt_nf), (pt, opt_pt)):
            opt.zero_grad()
            loss, out = model.loss(x, labels)
            loss.backward()
            outs.append(out.detach())
            losses.append(loss.item())
            grads.append({k: p.grad.clone() for k, p in model.named_parameters()})
            opt.step()
        assert all(math.isfinite(v) for v in losses), losses
        torch.testing.assert_close(outs[0], outs[1], msg=f"{name}: outputs differ at step {step}")
        assert losses[0] == pytest.approx(losses[1], rel=1e-9, abs=1e-12)
        assert grads[0].keys() == grads[1].keys()
        for k in grads[0]:
            assert grads[0][k].abs().sum() > 0, f"{name}: zero gradient for {k}"
            torch.testing.assert_close(grads[0][k], grads[1][k], msg=f"{name}: grad {k} differs at step {step}")
    for k, v in pt.state_dict().items():
        torch.testing.assert_close(nf.state_dict()[k], v, msg=f"{name}: {k} differs after training")
