"""First-call cost: how long a user waits before each workload op's first
forward and backward have run, on a cold kernel cache.

For each op of the six workloads (``bench/workloads.py``'s per-operator
cases, size ``bench``), in a fresh process per repetition with a fresh,
empty kernel cache and tuning off (``NEOFLOW_TUNE=off``: nothing works in
the background), it times

- ``define``: building the workload's op cases (the ops' ``neoflow.op``
  definitions and their inputs);
- ``first``: the op's first forward with inputs that require grad and its
  first backward: the forward kernel's specialization, fusion and compile,
  the gradient op's derivation, the gradient kernel's, and both runs;
- ``second``: the same forward and backward again (the kernels built), to
  show what of ``first`` is building.

Each op is timed after the previous ops of its process, so what ops share
(the compiler's start, the machine's fusion rates) falls on the first op
of each workload. Reports the median, min and max over ``--repeat``
processes. Not a test: speed is reported, not asserted.

    python bench/first_call.py [--repeat 3] [--workloads milstm ...] [--out bench/results] [--tag TAG]

Writes ``first_call-DATE-cpu[-TAG].json`` and ``.md`` into ``--out``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

WORKLOADS = ("milstm", "scrnn", "sublstm", "lltm", "capsnet", "shufflenet")


def child(name: str) -> None:
    """Times one workload's ops in this (fresh) process and prints the rows as JSON."""
    import torch
    import workloads_module

    wl = workloads_module.load()
    torch.set_num_threads(int(os.environ.get("NEOFLOW_BENCH_THREADS", "2")))
    t0 = time.perf_counter()
    _, _, _, _, op_cases = wl.setup(name, "bench", 16, torch.float32, torch)
    cases = list(op_cases())
    define_s = time.perf_counter() - t0
    rows = []
    for op_name, nf_fn, torch_fn, inputs, params in cases:
        leaves = list(inputs) + list(params)
        with torch.no_grad():  # the output gradients, shaped by the plain-PyTorch twin (no neoflow kernel runs)
            grads = [torch.randn_like(t) for t in wl.as_tuple(torch_fn(*inputs))]
        run = wl.forward_backward(torch, nf_fn, inputs, grads, leaves)
        t = time.perf_counter()
        run()
        first = time.perf_counter() - t
        t = time.perf_counter()
        run()
        second = time.perf_counter() - t
        rows.append({"workload": name, "op": op_name, "first_s": first, "second_s": second})
    print(json.dumps({"define_s": define_s, "rows": rows}))


def run_once(name: str) -> dict:
    """One fresh process timing workload name, with a cold cache and tuning off."""
    with tempfile.TemporaryDirectory(prefix="neoflow-first-") as tmp:
        env = dict(os.environ, NEOFLOW_CACHE_DIR=tmp, NEOFLOW_TUNE="off")
        out = subprocess.run(
            [sys.executable, __file__, "--child", name], env=env, capture_output=True, text=True, check=False
        )
    if out.returncode != 0:
        raise SystemExit(f"first_call: {name} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def summarize(samples: list[float]) -> dict:
    return {"median": statistics.median(samples), "min": min(samples), "max": max(samples), "samples": samples}


def render(result: dict) -> str:
    lines = [
        f"# First call, {result['date']}",
        "",
        f"Machine: {result['machine']}; commit {result['commit']}; {result['repeat']} fresh processes per workload, "
        "cold kernel cache, `NEOFLOW_TUNE=off`, size `bench`, batch 16, float32.",
        "",
        "`first`: the op's first forward (inputs require grad) and backward, building every kernel; "
        "`second`: the same call again. Seconds: median (min-max).",
        "",
        "| workload | op | define s | first s | second s |",
        "|---|---|---|---|---|",
    ]
    for r in result["rows"]:
        d = r.get("define")
        dtxt = f"{d['median']:.2f} ({d['min']:.2f}-{d['max']:.2f})" if d else ""
        f, s = r["first"], r["second"]
        lines.append(
            f"| {r['workload']} | {r['op']} | {dtxt} | {f['median']:.2f} ({f['min']:.2f}-{f['max']:.2f}) "
            f"| {s['median'] * 1e3:.1f} ms |"
        )
    total = sum(r["first"]["median"] for r in result["rows"])
    lines += ["", f"Sum of the first calls' medians: **{total:.2f} s**.", ""]
    return "\n".join(lines)


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3, help="fresh processes per workload")
    ap.add_argument("--workloads", nargs="+", choices=WORKLOADS, default=list(WORKLOADS))
    ap.add_argument("--out", default=str(HERE / "results"))
    ap.add_argument("--tag", default="", help="appended to the file names")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        child(args.child)
        return {}
    from machine import cpu_model

    rows = []
    for name in args.workloads:
        runs = [run_once(name) for _ in range(args.repeat)]
        print(f"{name}: {[round(sum(r['first_s'] for r in run['rows']), 2) for run in runs]}", file=sys.stderr)
        for i, row in enumerate(runs[0]["rows"]):
            rows.append(
                {
                    "workload": name,
                    "op": row["op"],
                    "define": summarize([run["define_s"] for run in runs]) if i == 0 else None,
                    "first": summarize([run["rows"][i]["first_s"] for run in runs]),
                    "second": summarize([run["rows"][i]["second_s"] for run in runs]),
                }
            )
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=HERE, capture_output=True, text=True).stdout
    result = {
        "benchmark": "first_call",
        "date": datetime.date.today().isoformat(),
        "machine": f"{cpu_model()}, {platform.machine()}",
        "commit": commit.strip(),
        "repeat": args.repeat,
        "settings": {"repeat": args.repeat, "workloads": args.workloads, "tune": "off", "cache": "cold"},
        "rows": rows,
    }
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    stem = out / f"first_call-{result['date']}-cpu{'-' + args.tag if args.tag else ''}"
    stem.with_suffix(".json").write_text(json.dumps(result, indent=2) + "\n")
    stem.with_suffix(".md").write_text(render(result))
    print(f"wrote {stem}.json, .md", file=sys.stderr)
    return result


if __name__ == "__main__":
    main()
