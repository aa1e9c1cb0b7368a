"""Per-call overhead: a tiny op (8 elements) through neoflow and through PyTorch.

Times, per call, in one process:

- ``forward``: ``Y[i] = X[i] + Z[i]`` without autograd (``torch.no_grad``)
  against ``x + z``;
- ``forward+backward``: the same with both inputs requiring grad, the output
  given a gradient (``y.backward(g)``), against ``(x + z).backward(g)``;
- each again with ``nn.Parameter`` inputs (a model's weights);
- ``multiply forward+backward``: ``Y[i] = X[i] * Z[i]`` against ``x * z``: an
  add's backward passes the output's gradient on (in both), a product's
  runs a gradient kernel;
- ``empty autograd.Function forward+backward``: the floor of any op made a
  Python ``torch.autograd.Function`` (as neoflow's eager calls are): one that
  allocates its output, saves its inputs and passes the gradient on, with no
  kernel, against the add.

Each round times ``--calls`` calls of every variant in turn (the order
rotating between rounds) and keeps the mean per call; the report gives the
median over ``--rounds`` rounds with its min-max, and neoflow's time over
PyTorch's. The kernel is built before timing. Writes
``overhead-DATE-cpu.json``, ``.md`` and ``.png`` into ``--out``. Not a test:
speed is reported, not asserted.

    python bench/overhead.py [--rounds 15] [--calls 2000] [--out bench/results]
"""

from __future__ import annotations

import argparse
import datetime
import statistics
import sys
import time
from pathlib import Path

import workloads_module

ROOT = Path(__file__).resolve().parent.parent


wl = workloads_module.load()


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--calls", type=int, default=2000, help="calls per variant and round")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results"))
    return ap.parse_args(argv)


def variants(torch, neoflow) -> dict:
    """name -> (neoflow call, PyTorch call), each a function of no arguments doing one call."""
    op = neoflow.op("Y[i] = X[i] + Z[i]", name="overhead_add")
    mul = neoflow.op("Y[i] = X[i] * Z[i]", name="overhead_mul")
    x, z, g = torch.randn(8), torch.randn(8), torch.randn(8)
    xg, zg = x.clone().requires_grad_(), z.clone().requires_grad_()
    px, pz = torch.nn.Parameter(x.clone()), torch.nn.Parameter(z.clone())

    def no_grad(fn, a, b):
        def call():
            with torch.no_grad():
                fn(a, b)

        return call

    def fwd_bwd(fn, a, b):
        def call():
            fn(a, b).backward(g)

        return call

    class Floor(torch.autograd.Function):
        """What any op written as a Python autograd.Function pays: a forward that allocates its output and
        saves its inputs, a backward that passes the gradient on; no kernel, no checks."""

        @staticmethod
        def forward(ctx, a, b):
            ctx.save_for_backward(a, b)
            return torch.empty(8)

        @staticmethod
        def backward(ctx, grad):
            return grad, grad

    add = torch.add
    return {
        # the floor, against the add it would implement
        "empty autograd.Function forward+backward": (fwd_bwd(Floor.apply, xg, zg), fwd_bwd(add, xg, zg)),
        "forward": (no_grad(op, x, z), no_grad(add, x, z)),
        "forward (Parameter)": (no_grad(op, px, pz), no_grad(add, px, pz)),
        "forward+backward": (fwd_bwd(op, xg, zg), fwd_bwd(add, xg, zg)),
        "forward+backward (Parameter)": (fwd_bwd(op, px, pz), fwd_bwd(add, px, pz)),
        # an add passes its gradient on (no gradient kernel, as in PyTorch); a product's backward launches one
        "multiply forward+backward": (fwd_bwd(mul, xg, zg), fwd_bwd(torch.mul, xg, zg)),
    }


def per_call(fn, calls: int) -> float:
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - t0) / calls


def rotating_times(timed, rounds: int, calls: int, warmup: int, settle: int = 0) -> dict:
    """Times (name, impl, fn) triples after ``warmup`` untimed calls each: per round, ``calls`` calls of every
    one in turn (each after ``settle`` untimed calls, so that none inherits the caches its predecessor in the
    rotation warmed or cooled), the order rotating by one between rounds; the mean seconds per call of each
    round, by (name, impl)."""
    for _, _, fn in timed:  # build, compile, warm up
        for _ in range(warmup):
            fn()
    times = {(name, impl): [] for name, impl, _ in timed}
    for r in range(rounds):
        k = r % len(timed)
        for name, impl, fn in timed[k:] + timed[:k]:
            for _ in range(settle):
                fn()
            times[(name, impl)].append(per_call(fn, calls))
    return times


def summary(seconds: list[float]) -> dict:
    """Median, min and max of per-call times, in ms."""
    t = [s * 1e3 for s in seconds]
    return {"median_ms": statistics.median(t), "min_ms": min(t), "max_ms": max(t)}


def paired_rows(cases: dict, rounds: int, calls: int, warmup: int) -> list[dict]:
    """Times cases, name -> (neoflow call, PyTorch call), in turns (rotating_times): one row per case with each
    side's summary and neoflow's median over PyTorch's (bench/hessian.py times its calls so too)."""
    timed = [(name, impl, fn) for name, pair in cases.items() for impl, fn in zip(("neoflow", "torch"), pair)]
    times = rotating_times(timed, rounds, calls, warmup=warmup)
    rows = []
    for name in cases:
        row = {"call": name}
        for impl in ("neoflow", "torch"):
            row[impl] = summary(times[(name, impl)])
        row["ratio"] = row["neoflow"]["median_ms"] / row["torch"]["median_ms"]
        rows.append(row)
    return rows


def run(torch, neoflow, args) -> list[dict]:
    return paired_rows(variants(torch, neoflow), args.rounds, args.calls, warmup=50)


def us(d: dict) -> str:
    return f"{d['median_ms'] * 1e3:.1f} ({d['min_ms'] * 1e3:.1f}–{d['max_ms'] * 1e3:.1f})"


def table(rows: list[dict]) -> list[str]:
    """paired_rows' rows as a markdown table, µs per call."""
    lines = ["| call | neoflow µs | PyTorch µs | ratio |", "|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['call']} | {us(r['neoflow'])} | {us(r['torch'])} | {r['ratio']:.2f}x |")
    return lines


def finish(args, info: dict, rows: list[dict], render, bench: str, title: str) -> dict:
    """The run's result (date, machine, settings, rows) rendered by render, charted, written as
    ``<bench>-DATE-cpu`` into args.out and printed."""
    result = {"date": datetime.date.today().isoformat(), "machine": info, "settings": vars(args), "rows": rows}
    md = render(result)
    labels = [r["call"] for r in rows]

    def chart(path):
        wl.bar_chart(rows, ("torch", "neoflow"), labels, "ms per call (log scale)", f"{title}, {info['cpu']}", path)

    stem = wl.write_results(args.out, f"{bench}-{result['date']}-cpu", result, md, chart)
    print(md)
    print(f"wrote {stem}.json, .md, .png", file=sys.stderr)
    return result


def render_markdown(result: dict) -> str:
    m, s = result["machine"], result["settings"]
    lines = [
        f"# Per-call overhead of a tiny op ({result['date']})",
        "",
        f"Machine: {m['cpu']}, {m['threads']} threads, torch {m['torch']}, neoflow {m['neoflow']}.",
        f"`Y[i] = X[i] + Z[i]` on 8 float32 elements against `torch.add` (and `Y[i] = X[i] * Z[i]` against "
        "`torch.mul`, whose backward runs a gradient kernel where an add's passes its gradient on); "
        f"µs per call: median over {s['rounds']} "
        f"rounds of the mean of {s['calls']} calls (min-max of the rounds). Ratio: neoflow / PyTorch. The "
        "first row's neoflow column is an empty Python autograd.Function (allocates, saves, passes the gradient "
        "on): the floor of any op made one.",
        "",
        *table(result["rows"]),
    ]
    return "\n".join(lines) + "\n"


def main(argv=None) -> dict:
    args = parse_args(argv)
    import neoflow
    import torch

    info = wl.machine_info(torch, neoflow)
    rows = run(torch, neoflow, args)
    return finish(args, info, rows, render_markdown, "overhead", "per-call overhead, tiny op")


if __name__ == "__main__":
    main()
