"""Warm start: a new shape of a tuned op, built from its nearest tuned shape's schedule.

For each case (float32 GEMM and batched GEMM), tunes the op at one
shape (``neoflow.tune``, ``--trials`` per kernel, a fresh tuning database),
then for each new shape times the forward kernel three ways in one run:
the default schedule (``tune="off"``, another cache), the first build of
that shape in the tuned database (the tuned shape's schedule projected
onto it where that tuning gained at least 25% over its defaults, else the
default; the row says which), and that shape tuned itself with the same
budget. Median of ``--repeat`` calls after 3 warm-ups, on the CPU. Writes
``warm-DATE-cpu.json`` and ``.md`` into ``--out``. Not a test: speed is
reported, not asserted.

    python bench/warm.py [--trials 16] [--repeat 15] [--out bench/results]
"""

from __future__ import annotations

import argparse
import datetime
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CASES = {
    "gemm": (
        "C[i,j] += A[i,k] * B[k,j]",
        lambda n, k, m: [(n, k), (k, m)],
        (512, 512, 512),
        [(512, 512, 768), (576, 512, 512), (480, 512, 544), (640, 640, 640), (384, 256, 384)],
    ),
    "batched_gemm": (
        "C[b,i,j] += A[b,i,k] * B[b,k,j]",
        lambda b, n, k, m: [(b, n, k), (b, k, m)],
        (8, 128, 128, 256),
        [(8, 128, 128, 240), (12, 128, 128, 256), (8, 96, 128, 256)],
    ),
}


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=16)
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--out", default=str(ROOT / "bench" / "results"))
    return ap.parse_args(argv)


def time_kernel(op, xs, repeat: int) -> tuple[float, str]:
    """Median milliseconds of the forward kernel on xs (built first, outside the timing), and its C source."""
    k = op.specialize(*xs)
    for _ in range(3):
        op._launch(xs, None, kernel=k)
    ms = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        op._launch(xs, None, kernel=k)
        ms.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(ms), k.c_source


def run_case(torch, neoflow, name: str, args) -> list[dict]:
    src, shapes_of, tuned, news = CASES[name]
    db = tempfile.mkdtemp(prefix="neoflow-warm-")
    neoflow.configure(cache_dir=db, tune="default")
    op = neoflow.op(src, name=f"warm_{name}")
    inputs = lambda dims: [torch.randn(*s) for s in shapes_of(*dims)]  # noqa: E731
    (rep,) = neoflow.tune(op, *inputs(tuned), trials=args.trials, backward=False, progress=False)
    rows = []
    for dims in news:
        xs = inputs(dims)
        warm, warm_src = time_kernel(op, xs, args.repeat)  # the first build of this shape
        neoflow.configure(cache_dir=tempfile.mkdtemp(prefix="neoflow-warm-off-"), tune="off")
        op.forget_kernels()  # the op keeps its specializations: build this shape again, here
        default, default_src = time_kernel(op, xs, args.repeat)
        neoflow.configure(cache_dir=db, tune="default")
        op.forget_kernels()
        neoflow.tune(op, *xs, trials=args.trials, backward=False, progress=False)
        tuned_ms, _ = time_kernel(op, xs, args.repeat)
        rows.append(
            {
                "case": name,
                "tuned_at": list(tuned),
                "tuned_gain": rep.speedup,
                "shape": list(dims),
                "default_ms": default,
                "warm_ms": warm,
                "projected": warm_src != default_src,
                "tuned_ms": tuned_ms,
            }
        )
        print(f"  {name} {dims}: default {default:.3f} ms, warm {warm:.3f}, tuned {tuned_ms:.3f}", file=sys.stderr)
    return rows


def render_markdown(result: dict) -> str:
    m = result["machine"]
    lines = [
        f"# Warm start from the nearest tuned shape, {result['date']}",
        "",
        f"Machine: {m['cpu']}, {m['threads']} threads, torch {m['torch']}, neoflow {m['neoflow']}. Forward kernel, "
        f"float32, median of {result['repeat']} calls; each op tuned at one shape with {result['trials']} trials, "
        "then each new shape timed with its default schedule, its first build in the tuned database (projected: "
        "the tuned shape's schedule projected onto it, used where that tuning gained at least 1.25x) and tuned itself.",
        "",
        "| case | tuned at (gain) | new shape | default ms | first build ms | projected | tuned ms "
        "| first vs default | first vs tuned |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in result["rows"]:
        lines.append(
            f"| {r['case']} | {'x'.join(map(str, r['tuned_at']))} ({r['tuned_gain']:.2f}x) "
            f"| {'x'.join(map(str, r['shape']))} | {r['default_ms']:.3f} | {r['warm_ms']:.3f} "
            f"| {'yes' if r['projected'] else 'no'} | {r['tuned_ms']:.3f} "
            f"| {r['default_ms'] / r['warm_ms']:.2f}x | {r['tuned_ms'] / r['warm_ms']:.2f}x |"
        )
    g = statistics.geometric_mean
    rows = result["rows"]
    lines += [
        "",
        f"Geometric means: first build {g([r['default_ms'] / r['warm_ms'] for r in rows]):.2f}x the default's speed, "
        f"{g([r['tuned_ms'] / r['warm_ms'] for r in rows]):.2f}x the tuned kernel's (1.00x: as fast).",
        "",
    ]
    return "\n".join(lines)


def main(argv=None) -> dict:
    args = parse_args(argv)
    import neoflow
    import torch

    sys.path.insert(0, str(ROOT / "bench"))
    import workloads_module

    wl = workloads_module.load()
    rows = []
    for name in CASES:
        rows += run_case(torch, neoflow, name, args)
    result = {
        "date": datetime.date.today().isoformat(),
        "machine": wl.machine_info(torch, neoflow),
        "trials": args.trials,
        "repeat": args.repeat,
        "rows": rows,
    }
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    stem = out / f"warm-{result['date']}-cpu"
    md = render_markdown(result)
    stem.with_suffix(".json").write_text(json.dumps(result, indent=2) + "\n")
    stem.with_suffix(".md").write_text(md)
    print(md)
    return result


if __name__ == "__main__":
    main()
