"""Train one workload on its synthetic data with Adam and report step times.

Shared by ``examples/<workload>.py``; each of those calls ``main(name)``::

    python examples/milstm.py --steps 20 --size small
    python examples/capsnet.py --torch          # the plain-PyTorch baseline

A step is zero_grad + forward + loss + backward + ``Adam.step()``. The first
step is reported on its own because with neoflow it includes generating and
compiling every forward and gradient kernel (or loading them from the kernel
cache); the median is over the remaining steps. The neoflow model and the
baseline start from the same parameters for the same ``--seed``, so their
losses can be compared.
"""

import argparse
import math
import statistics
import sys
import time

import torch

from . import capsnet, config, rnn, shufflenet

WORKLOADS = ("milstm", "scrnn", "sublstm", "lltm", "capsnet", "shufflenet")
CNN_MODELS = {
    "capsnet": (capsnet, capsnet.CapsNetTorch, capsnet.CapsNetNeoflow),
    "shufflenet": (shufflenet, shufflenet.ShuffleUnitTorch, shufflenet.ShuffleUnitNeoflow),
}
CNN_LR = 0.01
DTYPES = {"float32": torch.float32, "float64": torch.float64}


def build(name, size="small", batch=None, dtype=torch.float32, seed=0, use_torch=False):
    """(model, loss_fn, lr, batch): ``loss_fn()`` runs the forward pass on the fixed synthetic batch."""
    if name in config.RNN_WORKLOADS:
        cfg = (config.SMALL if size == "small" else config.BENCH)[name]
        if batch is not None:
            cfg = cfg.with_batch(batch)
        # Baseline and neoflow classes initialise identical parameters from the same seed.
        model = rnn.MODELS[name][0 if use_torch else 1](cfg, dtype=dtype, seed=seed)
        xs, targets = rnn.make_data(cfg, seed=seed, dtype=dtype)
        return model, lambda: torch.nn.functional.mse_loss(model(xs), targets), cfg.lr, cfg.batch
    if name in CNN_MODELS:
        mod, torch_cls, nf_cls = CNN_MODELS[name]
        cfg = dict(mod.CONFIG[size])
        if batch is not None:
            cfg["batch"] = batch
        model = (torch_cls if use_torch else nf_cls)(cfg, dtype=dtype, seed=seed)
        model.train()
        x, labels = mod.synthetic_data(cfg, dtype=dtype, seed=seed)
        return model, lambda: model.loss(x, labels)[0], CNN_LR, cfg["batch"]
    raise ValueError(f"unknown workload {name!r}; choose from {', '.join(WORKLOADS)}")


class Progress:
    """The training's progress bar (tqdm on stderr): steps, loss, step time."""

    def __init__(self, total, label=""):
        try:
            from tqdm import tqdm
        except ImportError:  # a bare install (the wheel's --no-deps on a GPU machine): no bar
            tqdm = None
        if tqdm is None:
            from neoflow.progress import _NoBar

            self.bar = _NoBar()
        else:
            self.bar = tqdm(total=total, desc=label.strip() or None, unit="step", file=sys.stderr)

    def update(self, i, loss, ms):
        self.bar.n = i
        self.bar.set_postfix_str(f"loss {loss:.4g}, {ms:.2f} ms/step", refresh=False)
        self.bar.refresh()

    def close(self):
        self.bar.close()


def train(model, loss_fn, lr, steps, progress=None):
    """Run ``steps`` Adam steps; returns (step times in seconds, losses)."""
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    times, losses = [], []
    for i in range(steps):
        t0 = time.perf_counter()
        opt.zero_grad()
        loss = loss_fn()
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t0)
        losses.append(loss.item())
        if progress is not None:
            progress.update(i + 1, losses[-1], times[-1] * 1e3)
    if progress is not None:
        progress.close()
    return times, losses


def parse_args(name, argv=None):
    p = argparse.ArgumentParser(
        prog=f"{name}.py",
        description=f"Train the {name} workload on synthetic data with Adam and report step times.",
    )
    p.add_argument("--steps", type=int, default=20, help="training steps (default 20)")
    p.add_argument("--size", choices=("small", "bench"), default="small", help="shapes from workloads/config.py")
    p.add_argument("--batch", type=int, default=None, help="override the batch size of --size")
    p.add_argument("--torch", action="store_true", help="train the plain-PyTorch baseline instead of neoflow")
    p.add_argument("--dtype", choices=tuple(DTYPES), default="float32")
    p.add_argument("--seed", type=int, default=0, help="seed for parameters and data")
    p.add_argument("--threads", type=int, default=None, help="CPU threads for PyTorch and neoflow (default: PyTorch's)")
    args = p.parse_args(argv)
    if args.steps < 1:
        p.error("--steps must be at least 1")
    for flag in ("batch", "threads"):
        if getattr(args, flag) is not None and getattr(args, flag) < 1:
            p.error(f"--{flag} must be at least 1")
    return args


def main(name, argv=None):
    """Entry point of ``examples/<name>.py``; returns the exit status."""
    args = parse_args(name, argv)
    if args.threads is not None:
        torch.set_num_threads(args.threads)  # before neoflow's first use: its kernels run on this many threads
    torch.manual_seed(args.seed)
    impl = "pytorch" if args.torch else "neoflow"
    model, loss_fn, lr, batch = build(name, args.size, args.batch, DTYPES[args.dtype], args.seed, args.torch)
    n_params = sum(p.numel() for p in model.parameters())
    print(
        f"{name} ({impl}): size {args.size}, batch {batch}, {args.dtype}, {n_params} parameters, "
        f"Adam lr {lr}, {args.steps} steps, {torch.get_num_threads()} threads",
        flush=True,
    )
    times, losses = train(model, loss_fn, lr, args.steps, Progress(args.steps, label=f"{name} "))
    first_note = "includes generating and compiling the kernels, or loading them from the cache"
    print(f"first step:  {times[0] * 1e3:10.2f} ms ({first_note if not args.torch else 'includes PyTorch warm-up'})")
    if len(times) > 1:
        med = statistics.median(times[1:]) * 1e3
        print(f"median step: {med:10.2f} ms (forward + backward + Adam, steps 2..{len(times)})")
    else:
        print("median step:        n/a (needs --steps 2 or more)")
    print(f"final loss:  {losses[-1]:.6g} (first {losses[0]:.6g})")
    if not all(math.isfinite(v) for v in losses):
        print("error: the loss is not finite", file=sys.stderr)
        return 1
    return 0
