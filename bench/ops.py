"""Forward and forward+backward time of the spine's operators: neoflow next
to PyTorch eager.

Runs every operator of tests/python/ops_table.py at its benchmark size, on
the same inputs, in one process; prints markdown tables of medians and
ratios. Not a test: speed is reported, not asserted.

    python bench/ops.py [--dtype float32] [--repeat 20] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "python"))

import neoflow  # noqa: E402
from machine import cpu_model  # noqa: E402
from ops_table import BENCH_CASES  # noqa: E402


def timeit(fn, repeat: int, warmup: int = 3) -> tuple[float, float, float]:
    """Median, min and max seconds per call, over `repeat` timed calls."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), min(times), max(times)


def fwd_bwd(fn, leaves, grad_out) -> None:
    """One forward and backward pass; clears the gradients it made."""
    torch.autograd.backward(fn(*leaves), grad_out)
    for t in leaves:
        t.grad = None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--json", help="also write the results here")
    ap.add_argument("--only", nargs="*", help="op names to run")
    args = ap.parse_args()
    dtype = getattr(torch, args.dtype)
    torch.manual_seed(0)

    print(f"machine: {cpu_model()}, torch {torch.__version__}, {torch.get_num_threads()} threads, {args.dtype}")
    rows = []
    for case in BENCH_CASES:
        if args.only and case.name not in args.only:
            continue
        tensors = case.inputs("bench", dtype)
        op = case.op(tensors)
        sizes = case.sizes(*tensors) if case.sizes else None
        t0 = time.perf_counter()
        got = op(*tensors, sizes=sizes)
        build = time.perf_counter() - t0
        want = case.reference(*tensors)
        ok = torch.allclose(got, want, rtol=1e-3, atol=1e-3)
        nf = timeit(lambda op=op, t=tensors, s=sizes: op(*t, sizes=s), args.repeat)
        pt = timeit(lambda c=case, t=tensors: c.reference(*t), args.repeat)

        # forward + backward: gradients w.r.t. every input, for a fixed output gradient
        leaves = [t.detach().clone().requires_grad_(True) for t in tensors]
        grad_out = torch.randn_like(got)

        def nf_fn(*t, op=op, s=sizes):
            return op(*t, sizes=s)

        t0 = time.perf_counter()
        fwd_bwd(nf_fn, leaves, grad_out)
        grad_build = time.perf_counter() - t0
        nf_fb = timeit(lambda f=nf_fn, t=leaves, g=grad_out: fwd_bwd(f, t, g), args.repeat)
        pt_fb = timeit(lambda f=case.reference, t=leaves, g=grad_out: fwd_bwd(f, t, g), args.repeat)
        rows.append(
            {
                "op": case.name,
                "neoflow_ms": nf[0] * 1e3,
                "neoflow_spread_ms": [nf[1] * 1e3, nf[2] * 1e3],
                "eager_ms": pt[0] * 1e3,
                "eager_spread_ms": [pt[1] * 1e3, pt[2] * 1e3],
                "slowdown": nf[0] / pt[0],
                "first_call_ms": build * 1e3,
                "matches": bool(ok),
                "fwd_bwd_neoflow_ms": nf_fb[0] * 1e3,
                "fwd_bwd_neoflow_spread_ms": [nf_fb[1] * 1e3, nf_fb[2] * 1e3],
                "fwd_bwd_eager_ms": pt_fb[0] * 1e3,
                "fwd_bwd_eager_spread_ms": [pt_fb[1] * 1e3, pt_fb[2] * 1e3],
                "fwd_bwd_slowdown": nf_fb[0] / pt_fb[0],
                "first_backward_ms": grad_build * 1e3,
            }
        )
        r = rows[-1]
        print(
            f"  {case.name}: forward {r['neoflow_ms']:.3f} vs {r['eager_ms']:.3f} ms, "
            f"fwd+bwd {r['fwd_bwd_neoflow_ms']:.3f} vs {r['fwd_bwd_eager_ms']:.3f} ms",
            flush=True,
        )

    print()
    print("| op | neoflow ms (min–max) | eager ms (min–max) | neoflow / eager | first call ms | matches |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        flag = " **>5x**" if r["slowdown"] > 5 else ""
        print(
            f"| {r['op']} | {r['neoflow_ms']:.3f} ({r['neoflow_spread_ms'][0]:.3f}–{r['neoflow_spread_ms'][1]:.3f}) "
            f"| {r['eager_ms']:.3f} ({r['eager_spread_ms'][0]:.3f}–{r['eager_spread_ms'][1]:.3f}) "
            f"| {r['slowdown']:.2f}x{flag} | {r['first_call_ms']:.0f} | {'yes' if r['matches'] else 'NO'} |"
        )
    print()
    print("| op | fwd+bwd neoflow ms (min–max) | fwd+bwd eager ms (min–max) | neoflow / eager | first backward ms |")
    print("|---|---|---|---|---|")
    for r in rows:
        flag = " **>5x**" if r["fwd_bwd_slowdown"] > 5 else ""
        lo, hi = r["fwd_bwd_neoflow_spread_ms"]
        elo, ehi = r["fwd_bwd_eager_spread_ms"]
        print(
            f"| {r['op']} | {r['fwd_bwd_neoflow_ms']:.3f} ({lo:.3f}–{hi:.3f}) "
            f"| {r['fwd_bwd_eager_ms']:.3f} ({elo:.3f}–{ehi:.3f}) "
            f"| {r['fwd_bwd_slowdown']:.2f}x{flag} | {r['first_backward_ms']:.0f} |"
        )
    print()
    for key, label in (("slowdown", "forward"), ("fwd_bwd_slowdown", "forward+backward")):
        slow = [r["op"] for r in rows if r[key] > 5]
        print(f"{label}: more than 5x slower than PyTorch eager: {', '.join(slow) if slow else 'none'}")
    if args.json:
        meta = {
            "cpu": cpu_model(),
            "threads": torch.get_num_threads(),
            "torch": torch.__version__,
            "neoflow": neoflow.__version__,
            "dtype": args.dtype,
            "repeat": args.repeat,
        }
        Path(args.json).write_text(json.dumps({"machine": meta, "rows": rows}, indent=2) + "\n")


if __name__ == "__main__":
    main()
