"""The machine's own slow steps: eager PyTorch training alone, in fresh processes that never load neoflow's library.

bench/dynamic.py holds neoflow to "no step after the third takes more than 3x
the final median". Whether a machine lets any training meet that line is a
property of the machine: this bench trains a workload's eager baseline
(bench size, batch 16, float32 by default) for ``--seconds`` in each of
``--runs`` child processes, one after another, and measures the steps as
bench/dynamic.py measures neoflow's (dynamic.eager_alone: the final median
over the last 30 s, the slowest step after the third against it, the steps
over 3x it, and each one's CPU time, involuntary context switches and minor
page faults). The workload's model is PyTorch's own modules and operators;
each child checks ``/proc/self/maps`` at its end and reports whether
neoflow's library was ever mapped (it must not be). ``--heap steady`` makes
the children keep glibc's freed memory (machine.steady_heap), which removes
the page faults of a step's large tensors but not every slow step. Writes
``jitter-DATE-cpu.json``, ``.md`` and ``.png`` (step time against time,
one panel per run) into ``--out``. Not a test: nothing is asserted.

    python bench/jitter.py [--workload lltm] [--runs 3] [--seconds 150] [--heap default|steady] [--out bench/results]
"""

from __future__ import annotations

import argparse
import datetime
import json
import subprocess
import sys
from pathlib import Path

import workloads_module

ROOT = Path(__file__).resolve().parent.parent
wl = workloads_module.load()


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workload", choices=wl.WORKLOADS, default="lltm")
    ap.add_argument("--size", default="bench", choices=["small", "bench"])
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--runs", type=int, default=3, help="child processes, one after another")
    ap.add_argument("--seconds", type=float, default=150.0, help="training time of each run")
    ap.add_argument("--heap", default="default", choices=["default", "steady"], help="glibc malloc policy")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results"))
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    return ap.parse_args(argv)


def child(args) -> dict:
    """One run, in this process: the eager baseline trained alone (dynamic.eager_alone), with its points."""
    if args.heap == "steady":
        from machine import steady_heap

        steady_heap()
    import dynamic
    import torch

    base, _, loss, lr, _ = wl.setup(args.workload, args.size, args.batch, torch.float32, torch)
    step = wl.train_step(torch, base, lambda: loss(base), lr)
    for _ in range(3):  # as bench/dynamic.py's eager baseline: warmed up before it is measured
        step()
    points = []
    run = dynamic.eager_alone(step, args.seconds, points)
    maps = Path("/proc/self/maps").read_text()
    run["neoflow_library_mapped"] = "libneoflow" in maps
    run["threads"] = torch.get_num_threads()
    run["points"] = [(round(t, 4), round(sec, 7)) for t, sec in points]  # 0.1 ms and 0.1 us: the report's precision
    return run


def runs(args) -> list[dict]:
    """--runs children, one after another, each a fresh interpreter."""
    out = []
    for i in range(args.runs):
        cmd = [sys.executable, __file__, "--child", "--workload", args.workload, "--size", args.size]
        cmd += ["--batch", str(args.batch), "--seconds", str(args.seconds), "--heap", args.heap]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise SystemExit(f"run {i + 1} failed:\n{proc.stderr[-2000:]}")
        run = json.loads(proc.stdout.strip().splitlines()[-1])
        worst = run["worst_after_third_vs_final"]
        print(f"  run {i + 1}: final {run['final_ms']:.3f} ms, worst {worst:.2f}x", flush=True)
        out.append(run)
    return out


def render_markdown(result: dict) -> str:
    s, m = result["settings"], result["machine"]
    lines = [
        f"# The machine's own slow steps: {s['workload']} eager alone, {s['size']} size, batch {s['batch']}, "
        f"float32 ({result['date']})",
        "",
        f"Machine: {m['cpu']}, {m['threads']} threads, torch {m['torch']}, glibc heap {s['heap']}. Each run is a "
        f"fresh process that trains the eager baseline alone for {s['seconds']:.0f} s, without loading neoflow's "
        "library, its steps measured as bench/dynamic.py measures neoflow's: the final median (the last 30 s), the "
        "slowest step after the third against it, and the steps over 3x it (time since the start: ms [CPU ms, "
        "involuntary switches, minor faults]).",
        "",
        "| run | neoflow library mapped | steps | final ms | worst step after the 3rd / final | slowest step "
        "[CPU ms, switches, faults] | steps over 3x |",
        "|---|---|---|---|---|---|---|",
    ]
    for i, r in enumerate(result["runs"], 1):
        cpu, switches, faults = r["worst_usage"]
        slow = ", ".join(f"{t:.1f} s: {ms:.1f}" for t, ms in r["over_3x"]) or "none"
        lines.append(
            f"| {i} | {'yes' if r['neoflow_library_mapped'] else 'no'} | {r['steps']} | {r['final_ms']:.3f} | "
            f"{r['worst_after_third_vs_final']:.2f}x | [{cpu:.0f}, {switches}, {faults}] | {slow} |"
        )
    over = sum(1 for r in result["runs"] if r["over_3x"])
    lines += ["", f"Runs with a step over 3x the final median: {over} of {len(result['runs'])}.", ""]
    return "\n".join(lines)


def render_chart(result: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rs = result["runs"]
    fig, axes = plt.subplots(len(rs), 1, figsize=(8, 2.4 * len(rs)), squeeze=False)
    for ax, (i, r) in zip(axes[:, 0], enumerate(rs, 1)):
        ax.plot([t for t, _ in r["points"]], [s * 1e3 for _, s in r["points"]], ".", ms=1.5)
        ax.axhline(3 * r["final_ms"], color="red", lw=0.8, label="3x the final median")
        ax.set_yscale("log")
        ax.set_ylabel("step, ms (log)")
        ax.set_title(f"run {i}: worst {r['worst_after_third_vs_final']:.2f}x", fontsize=9)
        ax.legend(fontsize=7)
    axes[-1, 0].set_xlabel("seconds since the first measured step")
    fig.suptitle(f"{result['settings']['workload']} eager alone, {result['machine']['cpu']}", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None) -> dict:
    args = parse_args(argv)
    if args.child:
        print(json.dumps(child(args)))
        return {}
    import neoflow  # its version for the report; the parent trains nothing and loads no library
    import torch

    result = {
        "date": datetime.date.today().isoformat(),
        "machine": wl.machine_info(torch, neoflow),
        "settings": {k: v for k, v in vars(args).items() if k != "child"},
        "runs": runs(args),
    }
    md = render_markdown(result)
    wl.write_results(args.out, f"jitter-{result['date']}-cpu", result, md, lambda p: render_chart(result, p))
    print(md)
    return result


if __name__ == "__main__":
    main()
