"""Fusion on and off: forward+backward time of every workload op, untuned.

For each neoflow op the workloads use (bench size, batch 16, float32 by
default), in one process on the same inputs, times forward+backward (the
saving gradient op, as training runs it) of

- ``unfused``: neoflow with the fusion passes off (``configure(fusion=False)``),
- ``fused``: neoflow with them on (the default),
- ``eager``: the equivalent plain-PyTorch computation,
- ``compile``: that computation under ``torch.compile`` (inductor, default mode),

next to the fusion plan: loop nests (statements) and temporaries of the
forward kernel and of the saving gradient kernel (with respect to every
input), unfused and fused. The neoflow variants run in ``--rounds``
rounds, each timing both, in turns (off then on, then on then off, ...: the
variant timed second in a round measured a few percent slower even where
both run the same kernels); each round reports the median of ``--repeat``
calls after ``--warmup`` untimed ones, and the table gives the median over
rounds with its min-max. The fusion speedup is the median of the rounds'
paired ratios (unfused / fused of the same round) with a bootstrap 95%
interval of that median; an op counts as slower fused only when the whole
interval lies below 1. Kernels are untuned (NEOFLOW_TUNE=off) and built
into a fresh cache.

Writes ``fusion-DATE-cpu.json``, ``.md`` and ``.png`` into ``--out``. Not a
test: speed is reported, not asserted.

    python bench/fusion.py [--size bench|small] [--batch 16] [--workloads lltm ...]
                           [--rounds 15] [--repeat 20] [--warmup 3] [--no-compile] [--out bench/results]
"""

from __future__ import annotations

import argparse
import datetime
import os
import random
import statistics
import sys
import time
from pathlib import Path

import workloads_module
from machine import scratch_dir

ROOT = Path(__file__).resolve().parent.parent
RNN = ("milstm", "scrnn", "sublstm", "lltm")


wl = workloads_module.load()


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", default="bench", choices=["small", "bench"])
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--workloads", nargs="+", choices=wl.WORKLOADS, default=list(wl.WORKLOADS))
    ap.add_argument("--rounds", type=int, default=15, help="rounds timing fusion off and on in turns")
    ap.add_argument("--repeat", type=int, default=20, help="timed calls per variant and round")
    ap.add_argument("--warmup", type=int, default=3, help="untimed calls before them")
    ap.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    ap.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results"))
    return ap.parse_args(argv)


def statements(text: str) -> int:
    """Loop nests of an explain_fusion text: the fused op's statement lines (with a '//' comment),
    less those joined to the nest before them (printed with a leading '& ')."""
    return sum(
        1
        for line in text.splitlines()
        if line.startswith("  ") and not line.startswith("  & ") and "  // " in line and "=" in line
    )


DECISIONS = ("fold:", "merge:", "split:", "cse:", "inline:", "prune:", "group:")


def changed(text: str) -> bool:
    """Whether an explain_fusion text records a transformation (not only rates and temporaries kept)."""
    return any(line.startswith(DECISIONS) for line in text.splitlines())


def calls(neoflow, fn, inputs) -> list:
    """The neoflow ops fn calls, with the tensors and sizes of each call (one forward, recorded)."""
    seen = []
    original = neoflow.Op.__call__

    def record(self, *tensors, sizes=None):
        seen.append((self, [t.detach() for t in tensors], sizes))
        return original(self, *tensors, sizes=sizes)

    neoflow.Op.__call__ = record
    try:
        fn(*inputs)
    finally:
        neoflow.Op.__call__ = original
    return seen


def plan(neoflow, torch, op_calls) -> dict:
    """Loop nests and temporaries of the forward and saving-gradient kernels of the ops called, as now
    configured (summed over the ops)."""
    out = {"forward_nests": 0, "forward_temps": 0, "grad_nests": 0, "grad_temps": 0, "changed": False}
    for op, tensors, sizes in op_calls:
        text = op.explain_fusion(*tensors, sizes=sizes)
        out["changed"] |= changed(text)
        out["forward_nests"] += statements(text)
        out["forward_temps"] += len(op.temporaries(*tensors, sizes=sizes))
        gop, gsizes = op.grad_op(*tensors, sizes=sizes, saved=True)
        temps = dict(op.temporaries(*tensors, sizes=sizes))
        outs = wl.as_tuple(op(*tensors, sizes=sizes))
        dtype = tensors[0].dtype
        saved = {**dict(zip(op.outputs, outs)), **{n: torch.zeros(s, dtype=dtype) for n, s in temps.items()}}
        gins = [*tensors, *[torch.zeros_like(o) for o in outs], *[saved[n] for n in gop.saved]]
        text = gop.explain_fusion(*gins, sizes=gsizes)
        out["changed"] |= changed(text)
        out["grad_nests"] += statements(text)
        out["grad_temps"] += len(gop.temporaries(*gins, sizes=gsizes))
    return out


def median_interval(values: list, resamples: int = 2000, seed: int = 0) -> list:
    """A bootstrap 95% interval of the median of values (percentiles of the medians of resamples drawn
    with replacement; seeded, so a result file's interval can be recomputed)."""
    rng = random.Random(seed)
    meds = sorted(statistics.median(rng.choices(values, k=len(values))) for _ in range(resamples))
    return [meds[int(0.025 * resamples)], meds[int(0.975 * resamples) - 1]]


def verdict(row: dict) -> str:
    """faster, slower or even: whether the fusion speedup's 95% interval lies above 1, below 1 or spans it."""
    lo, hi = row["fusion_speedup_ci95"]
    return "faster" if lo > 1 else "slower" if hi < 1 else "even"


def bench_op(neoflow, torch, workload, case, args) -> dict:
    op_name, nf_fn, torch_fn, inputs, params = case
    leaves = list(inputs) + list(params)
    with torch.no_grad():
        want = wl.as_tuple(torch_fn(*inputs))
    grads = [torch.randn_like(t) for t in want]
    fb = lambda fn: wl.forward_backward(torch, fn, inputs, grads, leaves)  # noqa: E731
    row = {"workload": workload, "op": op_name, "rounds": {"unfused": [], "fused": []}}
    op_calls = calls(neoflow, nf_fn, inputs)
    for i in range(args.rounds):
        turns = (("unfused", False), ("fused", True))
        for variant, on in turns if i % 2 == 0 else turns[::-1]:
            neoflow.configure(fusion=on)
            m = wl.measure(fb(nf_fn), args.repeat, args.warmup)
            row["rounds"][variant].append(m["median_ms"])
    for variant, on in (("unfused", False), ("fused", True)):
        neoflow.configure(fusion=on)
        with torch.no_grad():
            got = wl.as_tuple(nf_fn(*inputs))
        tol = 1e-3 if args.dtype == "float32" else 1e-8
        row[f"{variant}_matches"] = all(torch.allclose(g, w, rtol=tol, atol=tol) for g, w in zip(got, want))
        row[f"{variant}_plan"] = plan(neoflow, torch, op_calls)
    row["eager"] = wl.measure(fb(torch_fn), args.repeat, args.warmup)
    if not args.no_compile:
        row["compile"] = wl.measure(fb(torch.compile(torch_fn)), args.repeat, args.warmup)
    for variant in ("unfused", "fused"):
        r = row["rounds"][variant]
        row[variant] = {"median_ms": statistics.median(r), "min_ms": min(r), "max_ms": max(r)}
    ratios = [u / f for u, f in zip(row["rounds"]["unfused"], row["rounds"]["fused"])]
    row["fusion_speedup"] = statistics.median(ratios)
    row["fusion_speedup_ci95"] = median_interval(ratios)
    # Fusion changed neither kernel: fused and unfused run the same code (one cache key).
    row["fusion_changed"] = row["fused_plan"]["changed"]
    row["fused_vs_eager"] = row["eager"]["median_ms"] / row["fused"]["median_ms"]
    if "compile" in row:
        row["fused_vs_compile"] = row["compile"]["median_ms"] / row["fused"]["median_ms"]
    print(
        f"  {workload} {op_name}: unfused {row['unfused']['median_ms']:.3f}, fused {row['fused']['median_ms']:.3f}, "
        f"eager {row['eager']['median_ms']:.3f} ms ({row['fusion_speedup']:.2f}x from fusion)",
        file=sys.stderr,
        flush=True,
    )
    return row


def render_markdown(result: dict) -> str:
    m, s = result["machine"], result["settings"]
    lines = [
        f"# Fusion on and off, {s['size']} size, batch {s['batch']}, {s['dtype']}, untuned ({result['date']})",
        "",
        f"Machine: {m['cpu']}, {m['threads']} threads, torch {m['torch']}, neoflow {m['neoflow']}.",
        f"Forward+backward per op, ms: median over {s['rounds']} rounds (fusion off and on timed in turns, "
        f"the first of each round alternating) of the median of {s['repeat']} calls (min-max of the round "
        "medians); eager and compile: median (min-max) of one run. Fusion speedup: median of the rounds' paired "
        "ratios unfused / fused, [bootstrap 95% interval], and whether the interval lies above 1 (faster), "
        "below 1 (slower) or spans it (even). "
        "Nests: loop nests (statements) of the forward / gradient kernel; temps: their temporaries.",
        "",
        "| workload | op | unfused | fused | eager | compile | fusion speedup | fused vs eager "
        "| nests unfused | nests fused | temps unfused | temps fused | matches |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in result["ops"]:
        comp = wl.spread(r["compile"]) if "compile" in r else "-"
        pu, pf = r.get("unfused_plan"), r.get("fused_plan")
        nests = lambda p: f"{p['forward_nests']} / {p['grad_nests']}" if p else "-"  # noqa: E731
        temps = lambda p: f"{p['forward_temps']} / {p['grad_temps']}" if p else "-"  # noqa: E731
        ok = "yes" if r["unfused_matches"] and r["fused_matches"] else "NO"
        lo, hi = r["fusion_speedup_ci95"]
        speedup = f"{r['fusion_speedup']:.2f}x [{lo:.2f}, {hi:.2f}] " + (
            verdict(r) if r["fusion_changed"] else "(same kernels)"
        )
        lines.append(
            f"| {r['workload']} | {r['op']} | {wl.spread(r['unfused'])} | {wl.spread(r['fused'])} "
            f"| {wl.spread(r['eager'])} | {comp} | {speedup} | {r['fused_vs_eager']:.2f}x "
            f"| {nests(pu)} | {nests(pf)} | {temps(pu)} | {temps(pf)} | {ok} |"
        )
    sm = result["summary"]
    lines += [
        "",
        f"Fusion speedup (unfused / fused time), geomean over the RNN cells: **{sm['rnn_fusion_speedup']:.2f}x**; "
        f"over every op: {sm['fusion_speedup']:.2f}x. Ops that fusion changes and that ran slower fused than "
        f"unfused (95% interval below 1): {', '.join(sm['slower_fused']) or 'none'}; even (interval spans 1): "
        f"{', '.join(sm['even_fused']) or 'none'}. Ops whose kernels fusion leaves as they "
        f"are (the same code runs both ways; their ratio is noise): {', '.join(sm['unchanged']) or 'none'}.",
        f"Fused against eager, geomean over every op: {sm['fused_vs_eager']:.2f}x (above 1: neoflow is faster).",
    ]
    if sm.get("fused_vs_compile"):
        lines.append(f"Fused against torch.compile, geomean over every op: {sm['fused_vs_compile']:.2f}x.")
    return "\n".join(lines) + "\n"


def render_chart(result: dict, path: Path) -> None:
    s = result["settings"]
    wl.bar_chart(
        result["ops"],
        ("eager", "compile", "unfused", "fused"),
        [r["op"] for r in result["ops"]],
        "forward+backward, ms (log scale)",
        f"fusion on/off, {s['size']} size, batch {s['batch']}, {s['dtype']}, {result['machine']['cpu']}",
        path,
        {"fontsize": 7, "rotation": 30, "ha": "right"},
    )


def main(argv=None) -> dict:
    args = parse_args(argv)
    tmp = scratch_dir("neoflow-fusion-")
    os.environ["NEOFLOW_CACHE_DIR"] = os.path.join(tmp, "neoflow")
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(tmp, "inductor")
    os.environ["NEOFLOW_TUNE"] = "off"
    if (os.cpu_count() or 1) <= 4:
        os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")
    import neoflow
    import torch

    dtype = getattr(torch, args.dtype)
    info = wl.machine_info(torch, neoflow)
    t0 = time.perf_counter()
    ops = []
    for name in args.workloads:
        *_, op_cases = wl.setup(name, args.size, args.batch, dtype, torch)
        for case in op_cases():
            ops.append(bench_op(neoflow, torch, name, case, args))
    neoflow.configure(fusion=True)
    rnn = [r["fusion_speedup"] for r in ops if r["workload"] in RNN]
    result = {
        "date": datetime.date.today().isoformat(),
        "machine": info,
        "settings": {k: getattr(args, k) for k in ("size", "batch", "workloads", "rounds", "repeat", "warmup", "dtype")}
        | {"compile": not args.no_compile, "tune": "off"},
        "ops": ops,
        "summary": {
            "rnn_fusion_speedup": wl.geomean(rnn) if rnn else None,
            "fusion_speedup": wl.geomean(r["fusion_speedup"] for r in ops),
            "slower_fused": [r["op"] for r in ops if r["fusion_changed"] and verdict(r) == "slower"],
            "even_fused": [r["op"] for r in ops if r["fusion_changed"] and verdict(r) == "even"],
            "unchanged": [r["op"] for r in ops if not r["fusion_changed"]],
            "fused_vs_eager": wl.geomean(r["fused_vs_eager"] for r in ops),
            "fused_vs_compile": wl.geomean(r.get("fused_vs_compile") for r in ops),
            "total_s": time.perf_counter() - t0,
        },
    }
    md = render_markdown(result)
    stem = wl.write_results(args.out, f"fusion-{result['date']}-cpu", result, md, lambda p: render_chart(result, p))
    print(md)
    print(f"wrote {stem}.json, .md, .png in {result['summary']['total_s']:.0f} s", file=sys.stderr)
    return result


if __name__ == "__main__":
    main()
