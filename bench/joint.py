"""Forward and backward kernels tuned together: what the joint pass finds.

For each workload's neoflow op (bench size, one batch, float32, CPU), tunes
the kernels of one forward and backward call (``neoflow.tune_session``, a
fresh cache each) and reports, per gradient kernel, the joint pass's
timings: the forward then the gradient kernel, in training order, on shared
buffers, for the choices made apart and for the pair kept (the same unless
a pair beat it by 3%). Writes ``joint-DATE-cpu.json``, ``.md`` and ``.png``
into ``--out``. Not a test: speed is reported, not asserted.

    python bench/joint.py [--trials 16] [--batch 16] [--workloads lltm ...] [--out bench/results]
"""

from __future__ import annotations

import argparse
import datetime
import sys
import time
from pathlib import Path

import workloads_module
from machine import scratch_dir

ROOT = Path(__file__).resolve().parent.parent

wl = workloads_module.load()


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=16, help="trials per kernel")
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--size", default="bench", choices=["small", "bench"])
    ap.add_argument("--workloads", nargs="+", choices=wl.WORKLOADS, default=list(wl.WORKLOADS))
    ap.add_argument("--out", default=str(ROOT / "bench" / "results"))
    return ap.parse_args(argv)


def tune_workload(torch, neoflow, name: str, args) -> list[dict]:
    """One row per gradient kernel the workload's ops build, from a tuning session over one call."""
    neoflow.configure(cache_dir=scratch_dir("neoflow-joint-"), tune="default")
    *_, cases = wl.setup(name, args.size, args.batch, torch.float32, torch)
    rows = []
    for op_name, nf_fn, _, inputs, _ in cases():
        t0 = time.perf_counter()
        with neoflow.tune_session(trials=args.trials, progress=False) as report:
            out = [o for o in wl.as_tuple(nf_fn(*inputs)) if o.requires_grad]
            torch.autograd.backward(out, [torch.ones_like(o) for o in out])
        secs = time.perf_counter() - t0
        for r in report:
            if not r.joint:
                continue
            rows.append(
                {
                    "workload": name,
                    "op": op_name,
                    "kernel": r.kernel,
                    "apart_ms": r.joint_before_ms,
                    "joint_ms": r.joint_after_ms,
                    "changed": "changed" in r.joint,
                    "summary": r.joint,
                    "tune_s": secs,
                }
            )
            print(f"  {name} {r.kernel}: {r.joint}", file=sys.stderr, flush=True)
    return rows


def render_markdown(result: dict) -> str:
    m, s = result["machine"], result["settings"]
    lines = [
        f"# Forward and backward tuned together, {result['date']}",
        "",
        f"Machine: {m['cpu']}, {m['threads']} threads, torch {m['torch']}, neoflow {m['neoflow']}.",
        "",
        f"Settings: size `{s['size']}`, batch {s['batch']}, float32, {s['trials']} trials per kernel, one "
        "tuning session over one forward and backward call per op, a fresh cache each. Each gradient kernel's "
        "finalists and its forward kernel's (3 each) are timed in pairs, forward then gradient on shared "
        "buffers, 3 rounds in turns; times are the pair's median.",
        "",
        "| workload | op | gradient kernel | pair, choices made apart (ms) | pair kept (ms) | apart / kept | changed |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in result["rows"]:
        lines.append(
            f"| {r['workload']} | {r['op']} | {r['kernel']} | {r['apart_ms']:.3f} | {r['joint_ms']:.3f} | "
            f"{r['apart_ms'] / r['joint_ms']:.2f}x | {'yes' if r['changed'] else 'no'} |"
        )
    summ = result["summary"]
    lines += [
        "",
        f"Changed {summ['changed']} of {summ['pairs']} pairs; geometric mean of apart / kept over all: "
        f"**{summ['geomean']:.3f}x**, over the changed ones: {summ['geomean_changed']:.3f}x.",
        "",
    ]
    return "\n".join(lines)


def render_chart(result: dict, path: Path) -> None:
    rows = [
        {
            "apart": {"median_ms": r["apart_ms"], "min_ms": r["apart_ms"], "max_ms": r["apart_ms"]},
            "kept": {"median_ms": r["joint_ms"], "min_ms": r["joint_ms"], "max_ms": r["joint_ms"]},
        }
        for r in result["rows"]
    ]
    wl.bar_chart(
        rows,
        ("apart", "kept"),
        [f"{r['op']}\n{r['kernel']}" for r in result["rows"]],
        "forward + gradient pair, ms (log scale)",
        f"joint tuning, batch {result['settings']['batch']}, {result['machine']['cpu']}",
        path,
        tick_style={"fontsize": 6, "rotation": 30},
    )


def main(argv=None) -> dict:
    args = parse_args(argv)
    import neoflow
    import torch

    rows = []
    for name in args.workloads:
        rows += tune_workload(torch, neoflow, name, args)
    ratios = [r["apart_ms"] / r["joint_ms"] for r in rows]
    changed = [r["apart_ms"] / r["joint_ms"] for r in rows if r["changed"]]
    result = {
        "date": datetime.date.today().isoformat(),
        "machine": wl.machine_info(torch, neoflow),
        "settings": {"size": args.size, "batch": args.batch, "trials": args.trials, "workloads": args.workloads},
        "rows": rows,
        "summary": {
            "pairs": len(rows),
            "changed": len(changed),
            "geomean": wl.geomean(ratios) or 1.0,
            "geomean_changed": wl.geomean(changed) or 1.0,
        },
    }
    md = render_markdown(result)
    stem = wl.write_results(args.out, f"joint-{result['date']}-cpu", result, md, lambda p: render_chart(result, p))
    print(md)
    print(f"wrote {stem}.json, .md, .png", file=sys.stderr)
    return result


if __name__ == "__main__":
    main()
