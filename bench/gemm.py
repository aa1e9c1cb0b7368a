"""GEMM on the GPU (float32, or float16/bfloat16 with --dtype): neoflow against torch.matmul and torch.compile.

In one process, on the same inputs ``A [n, n] @ B [n, n]`` (default n =
4096), times

- ``torch.matmul`` (cuBLAS; TF32 off, full float32, as neoflow computes),
- ``torch.compile(torch.matmul)`` (inductor),
- neoflow's ``C[i,j] += A[i,k] * B[k,j]`` with its default GPU schedule,
- and, with ``--tune TRIALS``, neoflow after ``neoflow.tune`` (the GPU
  search, timed with CUDA events) in a fresh tuning database.

Each call is timed with CUDA events on the current stream; the report gives
the median and min–max of ``--repeat`` calls after 3 warm-ups, TFLOP/s, and
neoflow's speed as a fraction of torch.matmul's (the CUDA backend's target:
at least 60%). Every variant's result is compared with torch.matmul's first.
Writes ``gemm-DATE-GPU.json`` and ``.md`` into ``--out``. Not a test: speed
is reported, not asserted.

    python bench/gemm.py [--n 4096] [--repeat 20] [--tune TRIALS] [--no-compile] [--out bench/results]
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GOAL = 0.60  # neoflow's GEMM at least 60% of torch.matmul's speed


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=4096, help="the GEMM's M = N = K")
    ap.add_argument("--repeat", type=int, default=20, help="timed calls per variant")
    ap.add_argument("--tune", type=int, default=0, metavar="TRIALS", help="also time neoflow tuned with this budget")
    ap.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    ap.add_argument(
        "--dtype",
        default="float32",
        choices=["float32", "float16", "bfloat16"],
        help="the operands' dtype (16-bit: float32 accumulation, on Tensor Cores where neoflow can)",
    )
    ap.add_argument("--out", default=str(ROOT / "bench" / "results"), help="output directory")
    args = ap.parse_args(argv)
    if args.n < 1 or args.repeat < 1 or args.tune < 0:
        ap.error("--n and --repeat must be positive, --tune not negative")
    return args


def time_cuda(torch, fn, repeat: int, warmup: int = 3) -> dict:
    """Median, min and max milliseconds per call, each call bracketed by CUDA events on the current stream."""
    for _ in range(warmup):
        fn()
    ms = []
    for _ in range(repeat):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        ms.append(start.elapsed_time(end))
    return {"median_ms": statistics.median(ms), "min_ms": min(ms), "max_ms": max(ms)}


def render_markdown(result: dict) -> str:
    m, n = result["machine"], result["n"]
    lines = [
        f"# {result.get('dtype', 'float32')} GEMM {n}x{n}x{n}, {result['date']}",
        "",
        f"GPU {m['gpu']} (CUDA {m['cuda']}), torch {m['torch']}, neoflow {m['neoflow']}; TF32 off. "
        f"Median (min–max) of {result['repeat']} calls after 3 warm-ups, each timed with CUDA events.",
        "",
        "| variant | ms | TFLOP/s | speed vs torch.matmul | matches |",
        "|---|---|---|---|---|",
    ]
    for v in result["variants"]:
        t = v["time"]
        lines.append(
            f"| {v['name']} | {t['median_ms']:.3f} ({t['min_ms']:.3f}–{t['max_ms']:.3f}) | {v['tflops']:.1f} "
            f"| {v['vs_matmul']:.0%} | {'yes' if v['matches'] else 'NO'} |"
        )
    best = max((v for v in result["variants"] if v["name"].startswith("neoflow")), key=lambda v: v["vs_matmul"])
    lines += [
        "",
        f"Target: neoflow at least {GOAL:.0%} of torch.matmul. Best neoflow variant: {best['name']}, "
        f"{best['vs_matmul']:.0%}: {'met' if best['vs_matmul'] >= GOAL else 'not met'}.",
        "",
    ]
    if result.get("tuning"):
        t = result["tuning"]
        sched = f" Tensor Core schedule picked: {t['schedule']}." if t.get("schedule") else ""
        timed = f"the tuner timed {t['best_ms']:.3f} ms"
        lines += [f"Tuning: {t['trials']} trials in {t['seconds']:.0f} s; {timed}.{sched}", ""]
    return "\n".join(lines)


def main(argv=None) -> dict:
    args = parse_args(argv)
    os.environ["NEOFLOW_CACHE_DIR"] = tempfile.mkdtemp(prefix="neoflow-gemm-")  # a cold tuning database
    import neoflow
    import torch

    if not torch.cuda.is_available():
        sys.exit("gemm.py: needs a CUDA GPU (torch.cuda.is_available() is False)")
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    n = args.n
    gen = torch.Generator(device="cuda").manual_seed(0)
    dtype = getattr(torch, args.dtype)
    a = torch.randn(n, n, device="cuda", generator=gen).to(dtype)
    b = torch.randn(n, n, device="cuda", generator=gen).to(dtype)
    want = torch.matmul(a.double(), b.double())
    flop = 2.0 * n * n * n
    op = neoflow.op("C[i,j] += A[i,k] * B[k,j]", name="gemm")

    variants = [("torch.matmul", lambda: torch.matmul(a, b))]
    if not args.no_compile:
        variants.append(("torch.compile", torch.compile(lambda: torch.matmul(a, b))))
    variants.append(("neoflow (default schedule)", lambda: op(a, b)))
    rows, tuning = [], None
    for name, fn in variants:
        t0 = time.perf_counter()
        got = fn()
        torch.cuda.synchronize()
        first = time.perf_counter() - t0
        rows.append({"name": name, "first_s": first, "time": time_cuda(torch, fn, args.repeat), "got": got})
        print(f"  {name}: {rows[-1]['time']['median_ms']:.3f} ms (first call {first:.2f} s)", file=sys.stderr)
    if args.tune:
        t0 = time.perf_counter()
        (rep,) = neoflow.tune(op, a, b, trials=args.tune, backward=False)
        tuning = {"trials": rep.trials, "seconds": time.perf_counter() - t0, "best_ms": rep.best_ms}
        src = op.specialize(a, b).cuda_source
        tuning["schedule"] = next((ln[3:] for ln in src.splitlines() if ln.startswith("// mma ")), None)
        fn = lambda: op(a, b)  # noqa: E731 - rebuilt with the record on its next call
        got = fn()
        rows.append({"name": "neoflow (tuned)", "first_s": 0.0, "time": time_cuda(torch, fn, args.repeat), "got": got})
        print(f"  neoflow (tuned): {rows[-1]['time']['median_ms']:.3f} ms", file=sys.stderr)
    base = rows[0]["time"]["median_ms"]
    scale = want.abs().max().item()
    for r in rows:
        got = r.pop("got")
        # float32 sums of n products: 1e-4 of the largest value per 256 terms; a 16-bit result also rounds once.
        tol = 1e-4 * max(1.0, n / 256) + (0 if dtype == torch.float32 else 2.0**-7)
        r["matches"] = bool(((got.double() - want).abs().max().item()) <= tol * scale)
        r["tflops"] = flop / (r["time"]["median_ms"] * 1e-3) / 1e12
        r["vs_matmul"] = base / r["time"]["median_ms"]
    result = {
        "date": datetime.date.today().isoformat(),
        "machine": {
            "gpu": torch.cuda.get_device_name(),
            "cuda": torch.version.cuda,
            "torch": torch.__version__,
            "neoflow": neoflow.__version__,
        },
        "n": n,
        "dtype": args.dtype,
        "repeat": args.repeat,
        "variants": rows,
        "tuning": tuning,
    }
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    tag = re.sub(r"[^a-z0-9]+", "-", result["machine"]["gpu"].lower()).strip("-")
    suffix = "" if args.dtype == "float32" else "-" + args.dtype
    stem = out / f"gemm-{result['date']}-{tag}{suffix}"
    md = render_markdown(result)
    stem.with_suffix(".json").write_text(json.dumps(result, indent=2) + "\n")
    stem.with_suffix(".md").write_text(md)
    print(md)
    return result


if __name__ == "__main__":
    main()
