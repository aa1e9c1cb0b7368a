"""Second derivatives through forward mode: torch.func.hessian of a small MLP written as neoflow ops, against the
same MLP in plain PyTorch.

The MLP is two layers, ``tanh(x W1^T + b1) W2^T + b2``, each layer one op (``Y[b, j] = tanh(H[b, j])`` with
``H[b, j] += X[b, k] * W[j, k]``, plus its bias, for the first). Timed, per call, each against PyTorch:

- ``hessian (input)``: ``torch.func.hessian`` of the summed output with respect to the input batch (what a
  physics-informed network takes), forward over reverse: jacfwd of jacrev, so the tangent op of each gradient op
  runs, batched by vmap over the basis tangents;
- ``hvp (first layer's weight)``: a Hessian-vector product with respect to W1 (what a second-order optimizer
  takes), ``jvp(grad(loss), (W1,), (v,))``;
- ``jacfwd (input)``: the Jacobian of the output by forward mode alone.

Values are checked against PyTorch first (float64). Each round times ``--calls`` calls of every variant in turn
(the order rotating between rounds); the report gives the median over ``--rounds`` rounds with its min-max, and
neoflow's time over PyTorch's. Writes ``hessian-DATE-cpu.json``, ``.md`` and ``.png`` into ``--out``. Not a
test: speed is reported, not asserted.

    python bench/hessian.py [--rounds 10] [--calls 20] [--batch 8] [--width 32] [--out bench/results]
"""

from __future__ import annotations

import argparse
import warnings
from pathlib import Path

import workloads_module
from overhead import finish, paired_rows, table

ROOT = Path(__file__).resolve().parent.parent

wl = workloads_module.load()


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--calls", type=int, default=20, help="calls per variant and round")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--inputs", type=int, default=8, help="input features")
    ap.add_argument("--width", type=int, default=32, help="hidden units")
    ap.add_argument("--dtype", choices=("float32", "float64"), default="float64")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results"))
    return ap.parse_args(argv)


def mlps(torch, neoflow, args):
    """(neoflow MLP, PyTorch MLP, parameters): functions of (x, w1, b1, w2, b2)."""
    layer1 = neoflow.op("H[b, j] += X[b, k] * W[j, k]\nY[b, j] = tanh(H[b, j] + B[j])", name="hessian_layer1")
    layer2 = neoflow.op("Y[b, o] += X[b, j] * W[o, j]\nZ[b, o] = Y[b, o] + B[o]", name="hessian_layer2")

    def ours(x, w1, b1, w2, b2):
        return layer2(layer1(x, w1, b1), w2, b2)

    def plain(x, w1, b1, w2, b2):
        return torch.tanh(x @ w1.T + b1) @ w2.T + b2

    dt = getattr(torch, args.dtype)
    g = torch.Generator().manual_seed(0)
    params = [
        torch.randn(args.batch, args.inputs, generator=g, dtype=dt),
        torch.randn(args.width, args.inputs, generator=g, dtype=dt) / args.inputs**0.5,
        torch.randn(args.width, generator=g, dtype=dt),
        torch.randn(1, args.width, generator=g, dtype=dt) / args.width**0.5,
        torch.randn(1, generator=g, dtype=dt),
    ]
    return ours, plain, params


def variants(torch, neoflow, args) -> dict:
    """name -> (neoflow call, PyTorch call), each a function of no arguments returning the result."""
    ours, plain, (x, w1, b1, w2, b2) = mlps(torch, neoflow, args)
    v = torch.randn_like(w1)
    func = torch.func

    def hessian(f):
        return lambda: func.hessian(lambda x: f(x, w1, b1, w2, b2).sum())(x)

    def hvp(f):
        loss = lambda w: f(x, w, b1, w2, b2).square().sum()  # noqa: E731
        return lambda: func.jvp(func.grad(loss), (w1,), (v,))[1]

    def jacfwd(f):
        return lambda: func.jacfwd(lambda x: f(x, w1, b1, w2, b2))(x)

    return {
        "hessian (input)": (hessian(ours), hessian(plain)),
        "hvp (first layer's weight)": (hvp(ours), hvp(plain)),
        "jacfwd (input)": (jacfwd(ours), jacfwd(plain)),
    }


def run(torch, neoflow, args) -> list[dict]:
    cases = variants(torch, neoflow, args)
    tol = {"rtol": 1e-9, "atol": 1e-9} if args.dtype == "float64" else {"rtol": 1e-4, "atol": 1e-4}
    for name, (ours, plain) in cases.items():
        torch.testing.assert_close(ours(), plain(), **tol, msg=lambda m, n=name: f"{n}: {m}")
    rows = paired_rows(cases, args.rounds, args.calls, warmup=3)
    for row in rows:
        row["matches"] = True  # checked above
    return rows


def render_markdown(result: dict) -> str:
    m, s = result["machine"], result["settings"]
    lines = [
        f"# Forward mode: Hessians of a small MLP ({result['date']})",
        "",
        f"Machine: {m['cpu']}, {m['threads']} threads, torch {m['torch']}, neoflow {m['neoflow']}.",
        f"Two-layer tanh MLP, {s['inputs']} inputs, {s['width']} hidden units, batch {s['batch']}, {s['dtype']}; "
        "each layer one neoflow op, against the same MLP in plain PyTorch, both under torch.func (values equal "
        f"before timing). µs per call: median over {s['rounds']} rounds of the mean of {s['calls']} calls "
        "(min-max of the rounds). Ratio: neoflow / PyTorch.",
        "",
        *table(result["rows"]),
    ]
    return "\n".join(lines) + "\n"


def main(argv=None) -> dict:
    args = parse_args(argv)
    import neoflow
    import torch

    warnings.filterwarnings("ignore", message="`torch.jit.script` is deprecated")  # inside torch.func.jacfwd
    info = wl.machine_info(torch, neoflow)
    return finish(args, info, run(torch, neoflow, args), render_markdown, "hessian", "forward mode, small MLP")


if __name__ == "__main__":
    main()
