"""Dynamic mode: training under NEOFLOW_TUNE=background, step time against wall-clock time.

For each workload (bench size, batch 16, float32 by default), in one process:
the eager baseline's and ``torch.compile``'s step times (median of
``--repeat`` steps after warm-up) as reference lines, then the neoflow model
trained from a cold kernel cache and an empty tuning database with
``configure(tune="background")`` for ``--seconds`` of wall-clock time, every
step's time recorded against the time since its first step began (the first
step included: it builds every kernel with default schedules), with the
background tuner's progress sampled along the way. The report gives the
first step's time, the median step time in windows of the run, when the
rolling median (9 steps) first reached eager's median, the slowest step
after the third against the final median (median of the last 20 steps), and
the kernels tuned and swapped in. Writes ``dynamic-DATE-cpu.json``, ``.md``
and ``.png`` into ``--out``. Not a test: speed is reported, not asserted.

    python bench/dynamic.py [--workloads lltm milstm] [--seconds 150] [--repeat 20] [--out bench/results]
"""

from __future__ import annotations

import argparse
import copy
import datetime
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import workloads_module

ROOT = Path(__file__).resolve().parent.parent


wl = workloads_module.load()


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workloads", nargs="+", choices=wl.WORKLOADS, default=["lltm", "milstm"])
    ap.add_argument("--size", default="bench", choices=["small", "bench"])
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--seconds", type=float, default=150.0, help="wall-clock time of each neoflow run")
    ap.add_argument("--repeat", type=int, default=20, help="timed steps of the eager and compile references")
    ap.add_argument("--no-compile", action="store_true")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results"))
    return ap.parse_args(argv)


def windows(points: list[tuple[float, float]], edges=(0, 10, 30, 60, 90, 120, 150, 180, 240, 300)) -> list[dict]:
    """Median step time (ms) of the steps that began in each window [a, b) of seconds."""
    out = []
    for a, b in zip(edges, edges[1:]):
        ms = [s * 1e3 for t, s in points if a <= t < b]
        if ms:
            out.append({"from_s": a, "to_s": b, "steps": len(ms), "median_ms": statistics.median(ms)})
    return out


def caught_up(points, eager_ms: float, width: int = 9) -> float | None:
    """Seconds until the rolling median of ``width`` steps first reached eager's median step time."""
    for i in range(width, len(points) + 1):
        if statistics.median(s for _, s in points[i - width : i]) * 1e3 <= eager_ms:
            return points[i - 1][0]
    return None


def run_background(torch, neoflow, nf, loss, lr, seconds: float) -> tuple[list, list]:
    """Trains nf for ``seconds`` under background tuning: (time since start, step seconds) per step,
    and samples (time, trials done, kernels swapped)."""
    step = wl.train_step(torch, nf, lambda: loss(nf), lr)
    points, samples = [], []
    start = time.perf_counter()
    next_sample = 0.0
    while True:
        t0 = time.perf_counter()
        step()
        t1 = time.perf_counter()
        points.append((t0 - start, t1 - t0))
        if t1 - start >= next_sample:
            st = neoflow.background_status()
            samples.append((t1 - start, sum(k.trials for k in st), sum(k.swapped for k in st), len(st)))
            next_sample += 2.0
        if t1 - start >= seconds:
            return points, samples


def bench(torch, neoflow, name, args, tmp) -> dict:
    dtype = torch.float32
    base, nf, loss, lr, _ = wl.setup(name, args.size, args.batch, dtype, torch)
    row = {"workload": name, "batch": args.batch}
    row["eager"] = wl.measure(wl.train_step(torch, base, lambda: loss(base), lr), args.repeat, 3)
    if not args.no_compile:
        comp = copy.deepcopy(base)
        torch._dynamo.reset()
        row["compile"] = wl.measure(wl.train_step(torch, comp, torch.compile(lambda: loss(comp)), lr), args.repeat, 3)
    neoflow.configure(cache_dir=os.path.join(tmp, name), tune="background")
    earlier = len(neoflow.background_status())  # kernels of the workloads before this one
    points, samples = run_background(torch, neoflow, nf, loss, lr, args.seconds)
    status = neoflow.background_status()[earlier:]
    eager_ms = row["eager"]["median_ms"]
    final = statistics.median(s for _, s in points[-20:]) * 1e3
    row |= {
        "points": points,
        "samples": samples,
        "first_step_s": points[0][1],
        "windows": windows(points),
        "final_ms": final,
        "final_vs_eager": eager_ms / final,
        "caught_eager_s": caught_up(points, eager_ms),
        "worst_after_third_vs_final": max(s for _, s in points[3:]) * 1e3 / final if len(points) > 3 else None,
        "kernels": [
            {
                "kernel": k.kernel,
                "trials": k.trials,
                "default_ms": k.default_ms,
                "best_ms": k.best_ms,
                "swapped": k.swapped,
            }
            for k in status
        ],
        "tuning_done": all(k.done for k in status),
    }
    print(
        f"  {name}: first step {row['first_step_s']:.2f} s, final {final:.3f} ms, eager {eager_ms:.3f} ms, "
        f"caught eager at {row['caught_eager_s']} s",
        file=sys.stderr,
        flush=True,
    )
    return row


def render_markdown(result: dict) -> str:
    m, s = result["machine"], result["settings"]
    lines = [
        f"# Dynamic mode (NEOFLOW_TUNE=background), {s['size']} size, batch {s['batch']}, float32 ({result['date']})",
        "",
        f"Machine: {m['cpu']}, {m['threads']} threads, torch {m['torch']}, neoflow {m['neoflow']}. Each neoflow run "
        f"starts from a cold kernel cache and an empty tuning database and trains for {s['seconds']:.0f} s; eager "
        "and torch.compile: median step of a warm run.",
        "",
        "| workload | eager ms | compile ms | first step s | final ms | final vs eager | caught eager at | "
        "worst step after the 3rd / final | kernels swapped |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in result["rows"]:
        comp = f"{r['compile']['median_ms']:.3f}" if "compile" in r else "-"
        caught = f"{r['caught_eager_s']:.0f} s" if r["caught_eager_s"] is not None else "not within the run"
        swapped = f"{sum(k['swapped'] for k in r['kernels'])} of {len(r['kernels'])}"
        worst = r["worst_after_third_vs_final"]
        worst = f"{worst:.1f}x" if worst is not None else "- (3 steps or fewer)"
        lines.append(
            f"| {r['workload']} | {r['eager']['median_ms']:.3f} | {comp} | {r['first_step_s']:.2f} | "
            f"{r['final_ms']:.3f} | {r['final_vs_eager']:.2f}x | {caught} | {worst} | "
            f"{swapped} |"
        )
    lines += ["", "Median step time (ms) by window of the run (seconds since the first step began):", ""]
    for r in result["rows"]:
        cells = ", ".join(f"{w['from_s']}-{w['to_s']} s: {w['median_ms']:.3f} ({w['steps']})" for w in r["windows"])
        lines.append(f"- {r['workload']}: {cells}")
    return "\n".join(lines) + "\n"


def render_chart(result: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = result["rows"]
    fig, axes = plt.subplots(1, len(rows), figsize=(6 * len(rows), 4.2), squeeze=False)
    for ax, r in zip(axes[0], rows):
        ts = [t for t, _ in r["points"]]
        ax.plot(ts, [s * 1e3 for _, s in r["points"]], ".", ms=2, label="neoflow (background tuning)")
        ax.axhline(r["eager"]["median_ms"], color="k", ls="--", label="eager")
        if "compile" in r:
            ax.axhline(r["compile"]["median_ms"], color="g", ls=":", label="torch.compile")
        ax.set_yscale("log")
        ax.set_xlabel("seconds since the first step began")
        ax.set_ylabel("step time, ms (log)")
        ax.set_title(f"{r['workload']}, batch {r['batch']}", fontsize=9)
        ax.legend(fontsize=7)
    fig.suptitle(f"NEOFLOW_TUNE=background, {result['machine']['cpu']}", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv=None) -> dict:
    args = parse_args(argv)
    tmp = tempfile.mkdtemp(prefix="neoflow-dynamic-")
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(tmp, "inductor")
    if (os.cpu_count() or 1) <= 4:
        os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")
    import neoflow
    import torch

    info = wl.machine_info(torch, neoflow)
    rows = [bench(torch, neoflow, name, args, tmp) for name in args.workloads]
    result = {"date": datetime.date.today().isoformat(), "machine": info, "settings": vars(args), "rows": rows}
    md = render_markdown(result)
    wl.write_results(args.out, f"dynamic-{result['date']}-cpu", result, md, lambda p: render_chart(result, p))
    print(md)
    return result


if __name__ == "__main__":
    main()
