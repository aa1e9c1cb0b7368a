"""Size buckets: a kernel with symbolic extents, its default schedules against those picked for each bucket.

For each case (a softmax over rows, a layer norm, a sum over a sequence length, a GELU, a linear layer's
product over a varying batch; float32, CPU), an
op is called at two anchor sizes (its kernel for every size is built from them) and then at each measured
size, under ``tune="background"`` in a fresh tuning database: each size's bucket (the size rounded up to a
power of two) gets its schedules picked behind the calls (torchbridge/buckets.go), which this waits for.
Then the same op is built again under ``tune="off"`` (the default schedules, which every bucket runs before
its pick lands, and the only ones of a bucket with too little work to pick for), and both kernels are timed
at each size in turns (``--rounds`` rounds, each the median of ``--calls`` launches), beside PyTorch's eager
expression of the case. Writes
``buckets-DATE-cpu.json`` and ``.md`` into ``--out``. Not a test: speed is reported, not asserted.

    python bench/buckets.py [--rounds 7] [--calls 50] [--out bench/results]
"""

from __future__ import annotations

import argparse
import datetime
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

SOFTMAX = "M[n] max= X[n, j]\nE[n, j] = exp(X[n, j] - M[n])\nS[n] += E[n, j]\nY[n, j] = E[n, j] / S[n]"
LAYERNORM = (
    "M[n] += X[n, j] / 256.0\nD[n, j] = X[n, j] - M[n]\nV[n] += D[n, j] * D[n, j] / 256.0\n"
    "Y[n, j] = D[n, j] / sqrt(V[n] + 0.00001) * G[j]"
)
GELU = "Y[n, j] = X[n, j] * 0.5 * (1.0 + tanh(0.7978845608 * (X[n, j] + 0.044715 * X[n, j] * X[n, j] * X[n, j])))"

# name: (source, inputs at size n, PyTorch's eager expression)
CASES = {
    "softmax_rows": (SOFTMAX, lambda t, n: [t.randn(n, 512)], lambda t, x: t.softmax(x, 1)),
    "layernorm": (
        LAYERNORM,
        lambda t, n: [t.randn(n, 256), t.randn(256)],
        lambda t, x, g: t.nn.functional.layer_norm(x, (256,), g, None, 1e-5),
    ),
    "sum_over_length": (
        "S[b, h] += X[b, t, h] * X[b, t, h]",
        lambda t, n: [t.randn(8, n, 64)],
        lambda t, x: (x * x).sum(1),
    ),
    "gelu": (GELU, lambda t, n: [t.randn(n, 512)], lambda t, x: t.nn.functional.gelu(x, approximate="tanh")),
    "linear": (
        "Y[n, j] += X[n, k] * W[j, k]",
        lambda t, n: [t.randn(n, 256), t.randn(256, 256)],
        lambda t, x, w: x @ w.T,
    ),
}
ANCHORS = (20, 30)
SIZES = (50, 100, 200, 700, 1000)


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--calls", type=int, default=50)
    ap.add_argument("--out", default=str(ROOT / "bench" / "results"))
    return ap.parse_args(argv)


def build(torch, neoflow, name: str, inputs: dict) -> dict:
    """The op's kernel at each measured size, built from the anchors: {size: kernel}."""
    op = neoflow.op(CASES[name][0], name=f"bucket_{name}")
    for n in ANCHORS:
        op(*inputs[n])
    kernels = {n: op.specialize(*inputs[n], symbolic=True) for n in SIZES}
    for n, k in kernels.items():
        if not k.size_names:
            raise SystemExit(f"{name}: no kernel with symbolic extents at size {n}")
    return {"op": op, "kernels": kernels}


def row_swapped(swapped: dict, name: str, n: int) -> bool:
    """Whether the pick of size n's bucket replaced the default kernel."""
    return swapped.get(f"bucket_{name} [s0={1 << (n - 1).bit_length()}]", False)


def median_us(fn, calls: int) -> float:
    times = []
    for _ in range(calls):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e6


def run(torch, neoflow, args) -> list[dict]:
    torch.manual_seed(0)
    inputs = {name: {n: CASES[name][1](torch, n) for n in ANCHORS + SIZES} for name in CASES}
    neoflow.configure(cache_dir=tempfile.mkdtemp(prefix="neoflow-buckets-"), tune="background")
    picked = {name: build(torch, neoflow, name, inputs[name]) for name in CASES}
    status = neoflow.wait_background(timeout=1800)
    swapped = {k.kernel: k.swapped for k in status if "[" in k.kernel}
    # the same cache (the same fusion rates), its records ignored: each op built again holds the defaults
    neoflow.configure(tune="off")
    for p in picked.values():
        p["op"].forget_kernels()  # the kernels held above stay loaded
    default = {name: build(torch, neoflow, name, inputs[name]) for name in CASES}
    rows = []
    for name, (_, _, eager) in CASES.items():
        for n in SIZES:
            xs = inputs[name][n]
            d, p = default[name], picked[name]
            runs = {
                "default": lambda op=d["op"], k=d["kernels"][n], xs=xs: op._launch(xs, None, kernel=k),
                "picked": lambda op=p["op"], k=p["kernels"][n], xs=xs: op._launch(xs, None, kernel=k),
                "eager": lambda eager=eager, xs=xs: eager(torch, *xs),
            }
            assert d["kernels"][n].kernel_id != p["kernels"][n].kernel_id or not row_swapped(swapped, name, n)
            torch.testing.assert_close(runs["picked"]()[0], runs["default"]()[0])
            times = {v: [] for v in runs}
            for _ in range(3):
                for fn in runs.values():
                    fn()
            for _ in range(args.rounds):
                for v, fn in runs.items():
                    times[v].append(median_us(fn, args.calls))
            row = {"case": name, "size": n, "swapped": row_swapped(swapped, name, n)}
            for v, ts in times.items():
                row[f"{v}_us"], row[f"{v}_spread"] = statistics.median(ts), [min(ts), max(ts)]
            rows.append(row)
            print(
                f"  {name} {n}: default {row['default_us']:.1f} us, picked {row['picked_us']:.1f}, "
                f"eager {row['eager_us']:.1f}",
                file=sys.stderr,
            )
    return rows


def render_markdown(result: dict) -> str:
    m = result["machine"]
    lines = [
        f"# Schedules picked per size bucket, {result['date']}",
        "",
        f"Machine: {m['cpu']}, {m['threads']} threads, torch {m['torch']}, neoflow {m['neoflow']}. Forward kernel "
        f"with symbolic extents (built from sizes {ANCHORS[0]} and {ANCHORS[1]}), float32; per size the median of "
        f"{result['rounds']} rounds (min-max), each the median of {result['calls']} calls, the three variants in "
        "turns: the default schedules (tune off), the bucket's picked schedules (picked: the pick replaced the "
        "default), and PyTorch eager.",
        "",
        "| case | size | default us | picked us | picked | eager us | picked vs default | picked vs eager |",
        "|---|---|---|---|---|---|---|---|",
    ]

    def cell(r, v):
        lo, hi = r[f"{v}_spread"]
        return f"{r[f'{v}_us']:.1f} ({lo:.1f}-{hi:.1f})"

    for r in result["rows"]:
        lines.append(
            f"| {r['case']} | {r['size']} | {cell(r, 'default')} | {cell(r, 'picked')} "
            f"| {'yes' if r['swapped'] else 'no'} | {cell(r, 'eager')} "
            f"| {r['default_us'] / r['picked_us']:.2f}x | {r['eager_us'] / r['picked_us']:.2f}x |"
        )
    g = statistics.geometric_mean
    rows = result["rows"]
    lines += [
        "",
        f"Geometric means: picked {g([r['default_us'] / r['picked_us'] for r in rows]):.2f}x the default's speed, "
        f"{g([r['eager_us'] / r['picked_us'] for r in rows]):.2f}x eager's.",
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
    result = {
        "date": datetime.date.today().isoformat(),
        "machine": wl.machine_info(torch, neoflow),
        "rounds": args.rounds,
        "calls": args.calls,
        "rows": run(torch, neoflow, args),
    }
    md = render_markdown(result)
    wl.write_results(args.out, f"buckets-{result['date']}-cpu", result, md)
    print(md)
    return result


if __name__ == "__main__":
    main()
