"""DistributedDataParallel with neoflow ops (gloo, two processes started with spawn): the replicas end
with equal weights, those of one process training on the whole batch (examples/ddp.py)."""

import pathlib
import sys

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "examples"))
import ddp  # noqa: E402


def test_ddp_replicas_agree_with_each_other_and_one_process(tmp_path):
    states = ddp.run(procs=2, steps=3, batch_size=16, out_dir=str(tmp_path))
    single = ddp.run_single(steps=3, batch_size=16)
    assert set(states[0]) == set(single) == {"w1", "b1", "w2"}
    for name, want in single.items():
        assert torch.equal(states[1][name], states[0][name]), name  # the all-reduced gradients are the same
        torch.testing.assert_close(states[0][name], want, rtol=1e-9, atol=1e-10)
    # The weights moved: the check compares trained models, not three copies of the start.
    torch.manual_seed(0)
    start = ddp.Net().state_dict()
    assert not torch.equal(start["w1"], single["w1"])
