"""The RNN workloads (MI-LSTM, SC-RNN, subLSTM, LLTM) at SMALL sizes: the neoflow
model trains in lockstep with its plain-PyTorch baseline (outputs and every
parameter gradient match for 3 optimizer steps)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import math  # noqa: E402

import pytest  # noqa: E402
import torch  # noqa: E402

from workloads import config, rnn  # noqa: E402

D = torch.float64


@pytest.mark.parametrize("opt_name", ["sgd", "adam"])
@pytest.mark.parametrize("name", config.RNN_WORKLOADS)
def test_rnn_workload_lockstep(name, opt_name):
    cfg = config.SMALL[name]
    base, nf = rnn.make_models(name, cfg, dtype=D)
    assert [n for n, _ in base.named_parameters()] == [n for n, _ in nf.named_parameters()]
    xs, targets = rnn.make_data(cfg, seed=3, dtype=D)
    make = {"sgd": torch.optim.SGD, "adam": torch.optim.Adam}[opt_name]
    opts = [make(m.parameters(), lr=cfg.lr) for m in (base, nf)]
    for step in range(3):
        outs, losses, grads = [], [], []
        for model, opt in zip((base, nf), opts):
            opt.zero_grad()
            out = model(xs)
            loss = torch.nn.functional.mse_loss(out, targets)
            loss.backward()
            outs.append(out.detach())
            losses.append(loss.item())
            grads.append({n: p.grad.clone() for n, p in model.named_parameters()})
            opt.step()
        assert outs[0].shape == (cfg.batch,)
        assert all(math.isfinite(v) for v in losses), losses
        torch.testing.assert_close(outs[1], outs[0], msg=f"{name}: outputs differ at step {step}")
        for n, g in grads[0].items():
            assert g.abs().sum() > 0, f"{name}: zero gradient for {n}"
            torch.testing.assert_close(grads[1][n], g, msg=f"{name}: gradient of {n} differs at step {step}")


def test_configs_cover_rnn_workloads():
    for name in config.RNN_WORKLOADS:
        small, bench = config.SMALL[name], config.BENCH[name]
        assert small.batch * small.hidden < bench.batch * bench.hidden
        assert 256 <= bench.hidden <= 1024 and bench.batch in config.BENCH_BATCHES
