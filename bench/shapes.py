"""Training on varying shapes: BERT (bench/zoo.py's config) on sequence lengths drawn from a range.

For each variant (eager; ``torch.compile`` with Inductor; with neoflow's backend), one fresh model is
trained on the same seeded sequence of lengths (``--steps`` steps, lengths drawn from ``--lengths LO HI``,
batch 2; a training step = zero_grad, forward, loss, backward, Adam), each step timed: the whole run's
seconds (compiles included), the median step of lengths met before (a length's first step compiles), and
what was compiled: Dynamo's graphs, and the graphs neoflow lowered (pairs of the compile report's forward
and backward graphs: the first length's static graph, then the graph with symbolic sizes, lowered once).
Then the same model's steps at ``--length`` against a fresh
model's that only ever saw that length (static shapes), the two timed in turns: the cost of having
varied. With ``--settle S`` neoflow's background tuning (NEOFLOW_TUNE) is waited for, at most S
seconds, before those steps. Variants run one after another (each run is one sequence of steps), and
with the compile caches (Inductor's, neoflow's kernels) as the machine has them: a warm cache shortens
the run.

    python bench/shapes.py [--steps 60] [--lengths 8 64] [--length 32] [--repeat 10] [--warm 25]
                           [--settle 0] [--variants eager inductor neoflow]
                           [--out bench/results]
"""

from __future__ import annotations

import argparse
import datetime
import gc
import os
import random
import statistics
import sys
import time
from pathlib import Path

import workloads_module
import zoo

ROOT = Path(__file__).resolve().parent.parent
wl = workloads_module.load()
VARIANTS = ("eager", "inductor", "neoflow")


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=60, help="steps of varying length")
    ap.add_argument("--lengths", type=int, nargs=2, default=(8, 64), metavar=("LO", "HI"))
    ap.add_argument("--length", type=int, default=32, help="the length timed against a static-shape model")
    ap.add_argument("--repeat", type=int, default=10, help="timed steps at --length")
    ap.add_argument("--warm", type=int, default=25, help="untimed steps at --length before those timed")
    ap.add_argument(
        "--settle", type=float, default=0, help="seconds of background tuning at most, before timing at --length"
    )
    ap.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=VARIANTS)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=str(ROOT / "bench" / "results"))
    return ap.parse_args(argv)


def _model(torch, neoflow, variant: str, seed: int):
    model, _ = zoo.make("bert", seed=seed)
    opt = torch.optim.Adam(model.parameters(), lr=1e-4)
    fn = {"eager": model, "inductor": None, "neoflow": None}[variant]
    if variant == "inductor":
        fn = torch.compile(model)
    elif variant == "neoflow":
        fn = neoflow.compile(model)

    def step(length: int):
        tokens = torch.randint(0, zoo.VOCAB, (zoo.BATCH, length))
        labels = torch.randint(0, 2, (zoo.BATCH,))
        opt.zero_grad()
        zoo.loss("bert", fn, {"tokens": tokens, "labels": labels}).backward()
        opt.step()

    return step


def _timed(step, length: int) -> float:
    t0 = time.perf_counter()
    step(length)
    return time.perf_counter() - t0


def run_variant(torch, neoflow, variant: str, lengths: list[int], args) -> dict:
    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    neoflow.compile_report(clear=True)
    step = _model(torch, neoflow, variant, args.seed)
    seen, times, repeat = set(), [], []
    for n in lengths:
        t = _timed(step, n)
        times.append(t)
        if n in seen:
            repeat.append(t)
        seen.add(n)
    graphs = int(torch._dynamo.utils.counters["stats"]["unique_graphs"])
    shapes = len(neoflow.compile_report()) // 2
    kernels = _kernels(neoflow.compile_report())
    # a fresh model that only ever sees --length (static shapes), built while the first one lives: the two
    # are then timed in turns, so that the machine's drift falls on both alike
    neoflow.compile_report(clear=True)
    fresh = _model(torch, neoflow, variant, args.seed)
    for _ in range(args.warm):  # past the measured choice's trial of a new shape, and any warm-up
        step(args.length)
        fresh(args.length)
    if args.settle and variant == "neoflow":  # the background's picks and searches land before the timing
        neoflow.wait_background(timeout=args.settle)
    varied, static = [], []
    for _ in range(args.repeat):
        varied.append(_timed(step, args.length))
        static.append(_timed(fresh, args.length))
    del step, fresh  # and with them the compiled graphs, their subgraphs and neoflow ops
    torch._dynamo.reset()
    gc.collect()
    neoflow.compile_report(clear=True)
    return {
        "variant": variant,
        "total_s": sum(times),
        "first_s": times[0],
        "steady": _stats(repeat),
        "dynamo_graphs": graphs,
        "neoflow_graphs": shapes if variant == "neoflow" else None,
        "neoflow_kernels": kernels if variant == "neoflow" else None,
        "varied": _stats(varied),
        "static": _stats(static),
        "varied_over_static": statistics.median(varied) / statistics.median(static),
    }


def _kernels(reports: list[dict]) -> dict:
    """The kernels neoflow's graphs built (those for every size among them) and the subgraphs that reused one."""
    out = {"built": 0, "every_size": 0, "reused": 0}
    for r in reports:
        for k in out:
            out[k] += r.get("kernels", {}).get(k, 0)
    return out


def _stats(seconds: list[float]) -> dict:
    ms = [s * 1e3 for s in seconds]
    return {"median_ms": statistics.median(ms), "min_ms": min(ms), "max_ms": max(ms)} if ms else {}


def _ms(d: dict) -> str:
    return f"{d['median_ms']:.2f} ({d['min_ms']:.2f}–{d['max_ms']:.2f})" if d else "-"


def render_markdown(result: dict) -> str:
    m, s = result["machine"], result["settings"]
    lo, hi = s["lengths"]
    lines = [
        f"# Training on varying shapes ({result['date']})",
        "",
        f"Machine: {m['cpu']}, {m['threads']} threads, torch {m['torch']}, neoflow {m['neoflow']}. "
        f"BERT (bench/zoo.py: hidden 128, 2 layers), batch {zoo.BATCH}, float32, CPU; {s['steps']} training "
        f"steps (Adam) on sequence lengths drawn from {lo}-{hi} (seed {s['seed']}), each variant on a fresh "
        "model, one after another. steady: median (min-max) of the steps whose length came before; "
        f"at {s['length']}: {s['repeat']} steps of the same model at length {s['length']} after the run and "
        f"{s['warm']} untimed ones, "
        f"against a fresh model that only saw length {s['length']} (static), timed in turns"
        + (f" after waiting up to {s['settle']:g} s for background tuning" if s.get("settle") else "")
        + f" (NEOFLOW_TUNE={s.get('tune') or 'default'}). Dynamo graphs: graphs Dynamo "
        "compiled; neoflow graphs: the graphs neoflow lowered (forward and backward as one); kernels: the "
        "kernels those graphs' "
        "subgraphs built (of them, for every size of a dimension that varies), and the subgraph compiles that "
        "reused a kernel built before. Compile caches as the machine had them.",
        "",
        f"| variant | run s | first step s | steady ms | Dynamo graphs | neoflow graphs | kernels built (every size) "
        f"| reused | at {s['length']} ms | static ms | varied / static |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in result["rows"]:
        shapes = "-" if r["neoflow_graphs"] is None else str(r["neoflow_graphs"])
        k = r.get("neoflow_kernels")
        built, reused = (f"{k['built']} ({k['every_size']})", str(k["reused"])) if k else ("-", "-")
        lines.append(
            f"| {r['variant']} | {r['total_s']:.1f} | {r['first_s']:.1f} | {_ms(r['steady'])} | "
            f"{r['dynamo_graphs']} | {shapes} | {built} | {reused} | {_ms(r['varied'])} | {_ms(r['static'])} | "
            f"{r['varied_over_static']:.2f}x |"
        )
    return "\n".join(lines) + "\n"


def main(argv=None) -> dict:
    args = parse_args(argv)
    import neoflow
    import torch

    if zoo.missing():
        raise SystemExit(f"bench/shapes.py needs {', '.join(zoo.missing())} (scripts/env.sh installs them)")
    rng = random.Random(args.seed)
    lengths = [rng.randint(*args.lengths) for _ in range(args.steps)]
    rows = []
    for v in args.variants:
        rows.append(run_variant(torch, neoflow, v, lengths, args))
        print(
            f"{v:10s} run {rows[-1]['total_s']:.1f} s, at {args.length}: {rows[-1]['varied_over_static']:.2f}x "
            "its static step",
            file=sys.stderr,
        )
    info = wl.machine_info(torch, neoflow)
    settings = {**vars(args), "lengths": list(args.lengths), "tune": os.environ.get("NEOFLOW_TUNE", "")}
    result = {"date": datetime.date.today().isoformat(), "machine": info, "settings": settings, "rows": rows}
    md = render_markdown(result)

    def chart(path):
        bars = [{"variant": r["variant"], "varied": r["varied"], "static": r["static"]} for r in rows]
        title = f"BERT at length {args.length} after lengths {args.lengths[0]}-{args.lengths[1]}, {info['cpu']}"
        wl.bar_chart(bars, ("static", "varied"), list(args.variants), "ms per step (log scale)", title, path)

    stem = wl.write_results(args.out, f"shapes-{result['date']}-cpu", result, md, chart)
    print(md)
    print(f"wrote {stem}.json, .md, .png", file=sys.stderr)
    return result


if __name__ == "__main__":
    main()
