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
  show what of ``first`` is building;
- ``backend first``: the first training step (zero_grad, forward, loss,
  backward, ``Adam.step()``) of the workload's plain-PyTorch model under
  ``neoflow.compile`` (Dynamo, AOT Autograd, the lowering of every subgraph
  and its kernels), and ``backend second`` the next step.

Each op is timed after the previous ops of its process, so what ops share
(the compiler's start, the machine's fusion rates) falls on the first op
of each workload. Reports the median, min and max over ``--repeat``
processes. Not a test: speed is reported, not asserted.

    python bench/first_call.py [--repeat 3] [--workloads milstm ...] [--out bench/results] [--tag TAG]
                               [--commit C] [--baseline DIR --baseline-commit C]

``--baseline DIR`` times another build too (a directory holding its
``neoflow`` package, put first on ``PYTHONPATH``), in turns with this one,
and adds a table of both and their ratios.

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
    base, _, loss, lr, _ = wl.setup(name, "bench", 16, torch.float32, torch)
    import neoflow

    step = wl.train_step(torch, base, neoflow.compile(lambda: loss(base)), lr)
    times = []
    for _ in range(2):
        t = time.perf_counter()
        step()
        times.append(time.perf_counter() - t)
    print(json.dumps({"define_s": define_s, "rows": rows, "backend_s": times}))


def run_once(name: str, build: str | None = None) -> dict:
    """One fresh process timing workload name, with a cold cache and tuning off; with build (a directory
    holding another build's ``neoflow`` package) that build, first on PYTHONPATH."""
    with tempfile.TemporaryDirectory(prefix="neoflow-first-") as tmp:
        env = dict(os.environ, NEOFLOW_CACHE_DIR=tmp, NEOFLOW_TUNE="off")
        if build:
            env["PYTHONPATH"] = os.pathsep.join(p for p in (build, env.get("PYTHONPATH")) if p)
        out = subprocess.run(
            [sys.executable, __file__, "--child", name], env=env, capture_output=True, text=True, check=False
        )
    if out.returncode != 0:
        raise SystemExit(f"first_call: {name} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def rows_of(name: str, runs: list[dict]) -> list[dict]:
    """The report's rows of one workload: per op, the statistics over the processes' runs."""
    rows = []
    for i, row in enumerate(runs[0]["rows"]):
        rows.append(
            {
                "workload": name,
                "op": row["op"],
                "define": summarize([run["define_s"] for run in runs]) if i == 0 else None,
                "backend_first": summarize([run["backend_s"][0] for run in runs]) if i == 0 else None,
                "backend_second": summarize([run["backend_s"][1] for run in runs]) if i == 0 else None,
                "first": summarize([run["rows"][i]["first_s"] for run in runs]),
                "second": summarize([run["rows"][i]["second_s"] for run in runs]),
            }
        )
    return rows


def summarize(samples: list[float]) -> dict:
    return {"median": statistics.median(samples), "min": min(samples), "max": max(samples), "samples": samples}


def compared(result: dict) -> list[str]:
    """The comparison with the baseline build: medians side by side, and this build's over the baseline's."""
    base = {(r["workload"], r["op"]): r for r in result["baseline"]["rows"]}
    lines = [
        f"## Against {result['baseline']['commit'] or 'the baseline'} (timed in turns)",
        "",
        "| workload | op | first s | baseline s | ratio | backend first s | baseline s | ratio |",
        "|---|---|---|---|---|---|---|---|",
    ]
    sums = [0.0, 0.0, 0.0, 0.0]
    for r in result["rows"]:
        b = base[(r["workload"], r["op"])]
        f, fb = r["first"]["median"], b["first"]["median"]
        sums[0], sums[1] = sums[0] + f, sums[1] + fb
        cells = ["", "", ""]
        if r.get("backend_first"):
            g, gb = r["backend_first"]["median"], b["backend_first"]["median"]
            sums[2], sums[3] = sums[2] + g, sums[3] + gb
            cells = [f"{g:.2f}", f"{gb:.2f}", f"{g / gb:.2f}"]
        lines.append(f"| {r['workload']} | {r['op']} | {f:.2f} | {fb:.2f} | {f / fb:.2f} | {' | '.join(cells)} |")
    lines += [
        f"| all | | {sums[0]:.2f} | {sums[1]:.2f} | {sums[0] / sums[1]:.2f} | {sums[2]:.2f} | {sums[3]:.2f} "
        f"| {sums[2] / sums[3]:.2f} |",
        "",
        "A ratio below 1: this build is faster.",
        "",
    ]
    return lines


def render(result: dict) -> str:
    lines = [
        f"# First call, {result['date']}",
        "",
        f"Machine: {result['machine']}; commit {result['commit']}; {result['repeat']} fresh processes per workload, "
        "cold kernel cache, `NEOFLOW_TUNE=off`, size `bench`, batch 16, float32.",
        "",
        "`first`: the op's first forward (inputs require grad) and backward, building every kernel; "
        "`second`: the same call again; `backend first`: the first training step of the workload's "
        "plain-PyTorch model under `neoflow.compile`, `backend second` the next. Seconds: median (min-max).",
        "",
        "| workload | op | define s | first s | second s | backend first s | backend second s |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in result["rows"]:
        d = r.get("define")
        dtxt = f"{d['median']:.2f} ({d['min']:.2f}-{d['max']:.2f})" if d else ""
        f, s = r["first"], r["second"]
        b1, b2 = r.get("backend_first"), r.get("backend_second")
        btxt = f"{b1['median']:.2f} ({b1['min']:.2f}-{b1['max']:.2f}) | {b2['median'] * 1e3:.1f} ms" if b1 else " | "
        lines.append(
            f"| {r['workload']} | {r['op']} | {dtxt} | {f['median']:.2f} ({f['min']:.2f}-{f['max']:.2f}) "
            f"| {s['median'] * 1e3:.1f} ms | {btxt} |"
        )
    total = sum(r["first"]["median"] for r in result["rows"])
    btotal = sum(r["backend_first"]["median"] for r in result["rows"] if r.get("backend_first"))
    lines += [
        "",
        f"Sum of the first calls' medians: **{total:.2f} s**; of the backend's first steps: **{btotal:.2f} s**.",
        "",
    ]
    if result.get("baseline"):
        lines += compared(result)
    return "\n".join(lines)


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3, help="fresh processes per workload")
    ap.add_argument("--workloads", nargs="+", choices=WORKLOADS, default=list(WORKLOADS))
    ap.add_argument("--out", default=str(HERE / "results"))
    ap.add_argument("--tag", default="", help="appended to the file names")
    ap.add_argument(
        "--commit", help="the commit of the neoflow build measured (one on PYTHONPATH, say; default: this tree's HEAD)"
    )
    ap.add_argument("--baseline", help="a directory holding another build's neoflow package, timed in turns")
    ap.add_argument("--baseline-commit", default="", help="the commit the baseline was built from")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        child(args.child)
        return {}
    from machine import cpu_model

    rows, baseline = [], []
    for name in args.workloads:
        runs, base = [], []
        for r in range(args.repeat):  # the two builds in turns, the order alternating: drift falls on both
            order = [None, args.baseline] if r % 2 == 0 else [args.baseline, None]
            for build in order if args.baseline else [None]:
                (base if build else runs).append(run_once(name, build))
        print(f"{name}: {[round(sum(r['first_s'] for r in run['rows']), 2) for run in runs]}", file=sys.stderr)
        rows += rows_of(name, runs)
        baseline += rows_of(name, base) if base else []
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=HERE, capture_output=True, text=True).stdout
    result = {
        "benchmark": "first_call",
        "date": datetime.date.today().isoformat(),
        "machine": f"{cpu_model()}, {platform.machine()}",
        "commit": args.commit or commit.strip(),
        "repeat": args.repeat,
        "settings": {"repeat": args.repeat, "workloads": args.workloads, "tune": "off", "cache": "cold"},
        "rows": rows,
        "baseline": {"commit": args.baseline_commit, "rows": baseline} if args.baseline else None,
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
