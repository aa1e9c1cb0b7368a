"""Data-parallel training with neoflow ops: DistributedDataParallel over gloo,
processes started with spawn (a process forked after neoflow was loaded
cannot use it). Each process builds the same model, trains on its shard of
the batch, and DDP averages the gradients, so every replica ends with the
same weights, those of one process training on the whole batch.

    python examples/ddp.py [--procs 2] [--steps 20]
"""

from __future__ import annotations

import argparse
import os
import socket
import tempfile

import neoflow
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel


class Net(torch.nn.Module):
    """A two-layer network whose layers are neoflow ops: a linear layer with a fused tanh, then a linear head."""

    def __init__(self, n_in: int = 12, hidden: int = 16, n_out: int = 3):
        super().__init__()
        self.w1 = torch.nn.Parameter(torch.randn(hidden, n_in, dtype=torch.float64) * 0.3)
        self.b1 = torch.nn.Parameter(torch.zeros(hidden, dtype=torch.float64))
        self.w2 = torch.nn.Parameter(torch.randn(n_out, hidden, dtype=torch.float64) * 0.3)
        self.layer = neoflow.op("Z[b,h] += X[b,k] * W[h,k]\nH[b,h] = tanh(Z[b,h] + B[h])", name="ddp_layer")
        self.head = neoflow.op("Y[b,o] += H[b,h] * W[o,h]", name="ddp_head")

    def forward(self, x):
        return self.head(self.layer(x, self.w1, self.b1), self.w2)


def batch(step: int, size: int):
    """The step's whole batch: the same on every process."""
    g = torch.Generator().manual_seed(1000 + step)
    x = torch.randn(size, 12, generator=g, dtype=torch.float64)
    y = torch.randn(size, 3, generator=g, dtype=torch.float64)
    return x, y


def train(model, steps: int, batch_size: int, rank: int = 0, procs: int = 1):
    """SGD on the mean squared error of this process's shard of each batch; returns the last loss."""
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    shard = batch_size // procs
    loss = torch.tensor(0.0)
    for step in range(steps):
        x, y = batch(step, batch_size)
        x, y = x[rank * shard : (rank + 1) * shard], y[rank * shard : (rank + 1) * shard]
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
    return loss.item()


def worker(rank: int, procs: int, port: int, steps: int, batch_size: int, out_dir: str) -> None:
    os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = "127.0.0.1", str(port)
    dist.init_process_group("gloo", rank=rank, world_size=procs)
    try:
        torch.manual_seed(0)  # every replica starts from the same weights (DDP also broadcasts rank 0's)
        model = DistributedDataParallel(Net())
        loss = train(model, steps, batch_size, rank, procs)
        torch.save(model.module.state_dict(), os.path.join(out_dir, f"rank{rank}.pt"))
        if rank == 0:
            print(f"ddp: {procs} processes, {steps} steps, last loss on rank 0's shard {loss:.4f}")
    finally:
        dist.destroy_process_group()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(procs: int = 2, steps: int = 20, batch_size: int = 32, out_dir: str | None = None) -> list[dict]:
    """Trains with DDP in procs spawned processes; returns each replica's final state_dict."""
    out_dir = out_dir or tempfile.mkdtemp(prefix="neoflow-ddp-")
    mp.spawn(worker, args=(procs, free_port(), steps, batch_size, out_dir), nprocs=procs, join=True)
    return [torch.load(os.path.join(out_dir, f"rank{r}.pt")) for r in range(procs)]


def run_single(steps: int = 20, batch_size: int = 32) -> dict:
    """The same training in this process on the whole batch."""
    torch.manual_seed(0)
    model = Net()
    train(model, steps, batch_size)
    return model.state_dict()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--procs", type=int, default=2)
    ap.add_argument("--steps", type=int, default=20)
    args = ap.parse_args()
    states = run(args.procs, args.steps)
    single = run_single(args.steps)
    for name in single:
        for r, s in enumerate(states):
            assert torch.equal(s[name], states[0][name]), f"replica {r} differs from replica 0 in {name}"
        torch.testing.assert_close(states[0][name], single[name], rtol=1e-9, atol=1e-10)
    print("OK: the replicas agree with each other and with one process on the whole batch")


if __name__ == "__main__":
    main()
