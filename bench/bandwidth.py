"""Memory-bound ops against the measured copy bandwidth.

In one process, on float32 tensors of ``--mib`` MiB each (default 256 on a
GPU, 64 on the CPU: past the caches), times

- the copy bandwidth: ``torch.Tensor.copy_`` between two such tensors
  (bytes read plus bytes written over the time), the ceiling;
- elementwise ops through neoflow and through PyTorch eager: ``Y = X * a + b``
  (scale and shift, one read and one write), ``Y = A + B`` (two reads, one
  write), ``Y = relu(X) * sigmoid(X)`` (one read, arithmetic that stays
  memory-bound). Eager writes into preallocated tensors (``out=``, in
  place), one pass per PyTorch op.

Each op's effective bandwidth is its fewest bytes moved (every input read
once, the output written once) over its median time; the report gives it
as a fraction of the copy's. On a GPU every call is timed with CUDA events
on the current stream; on the CPU with a wall clock. Every neoflow result is
compared with PyTorch's. Writes ``bandwidth-DATE-MACHINE.json``, ``.md`` and
``.png`` into ``--out``. Not a test: speed is reported, not asserted.

    python bench/bandwidth.py [--device cuda] [--mib 256] [--repeat 30] [--out bench/results]
"""

from __future__ import annotations

import argparse
import datetime
import statistics
import sys
import time
from pathlib import Path

import workloads_module

ROOT = Path(__file__).resolve().parent.parent

wl = workloads_module.load()


def _scale_shift(torch, out, tmp, x):
    return torch.mul(x, 1.5, out=out).add_(0.25)


def _add(torch, out, tmp, a, b):
    return torch.add(a, b, out=out)


def _relu_sigmoid(torch, out, tmp, x):
    return torch.clamp_min(x, 0, out=out).mul_(torch.sigmoid(x, out=tmp))


# name: (neoflow source, eager function of (torch, out, tmp, *inputs), input count). Eager writes into
# preallocated tensors (out=, in place): on the CPU a fresh 64 MiB result would cost page faults each
# call (glibc maps blocks that large anew), which is not what is measured here.
OPS = {
    "scale_shift": ("Y[i] = X[i] * 1.5 + 0.25", _scale_shift, 1),
    "add": ("Y[i] = A[i] + B[i]", _add, 2),
    "relu_sigmoid": ("Y[i] = relu(X[i]) * sigmoid(X[i])", _relu_sigmoid, 1),
}


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--mib", type=float, help="MiB per tensor (default: 256 on a GPU, 64 on the CPU)")
    ap.add_argument("--repeat", type=int, default=30, help="timed calls per variant")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results"))
    args = ap.parse_args(argv)
    if args.repeat < 1 or (args.mib is not None and args.mib <= 0):
        ap.error("--repeat and --mib must be positive")
    return args


def timer(torch, device: str):
    """A function timing fn() in milliseconds: CUDA events on the current stream, or a wall clock."""
    if device == "cuda":

        def cuda_ms(fn) -> float:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            end.synchronize()
            return start.elapsed_time(end)

        return cuda_ms

    def wall_ms(fn) -> float:
        t0 = time.perf_counter()
        fn()
        return (time.perf_counter() - t0) * 1e3

    return wall_ms


def measure(time_ms, fn, repeat: int) -> dict:
    for _ in range(3):
        fn()
    ms = sorted(time_ms(fn) for _ in range(repeat))
    return {"median_ms": statistics.median(ms), "min_ms": ms[0], "max_ms": ms[-1]}


def run(args) -> dict:
    import neoflow
    import torch

    if args.device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("bandwidth: --device cuda, but torch.cuda.is_available() is False")
    mib = args.mib or (256 if args.device == "cuda" else 64)
    n = int(mib * 2**20) // 4
    time_ms = timer(torch, args.device)
    gen = torch.Generator(device=args.device).manual_seed(0)
    src = torch.rand(n, device=args.device, generator=gen) * 2 - 1
    dst = torch.empty_like(src)
    copy = measure(time_ms, lambda: dst.copy_(src), args.repeat)
    copy_gbs = 2 * 4 * n / (copy["median_ms"] * 1e-3) / 1e9
    rows = []
    for name, (source, ref, nin) in OPS.items():
        op = neoflow.op(source, name=f"bw_{name}")
        xs = [torch.rand(n, device=args.device, generator=gen) * 2 - 1 for _ in range(nin)]
        out, tmp = torch.empty_like(src), torch.empty_like(src)
        got, want = op(*xs), ref(torch, out, tmp, *xs)
        matches = bool(torch.allclose(got, want, rtol=1e-5, atol=1e-6))
        del got
        moved = 4 * n * (nin + 1)
        row = {"op": name, "source": source, "bytes": moved, "matches": matches}
        variants = {
            "neoflow": lambda op=op, xs=xs: op(*xs),
            "eager": lambda ref=ref, xs=xs, out=out, tmp=tmp: ref(torch, out, tmp, *xs),
        }
        for key, fn in variants.items():
            m = measure(time_ms, fn, args.repeat)
            gbs = moved / (m["median_ms"] * 1e-3) / 1e9
            row[key] = {**m, "gb_per_s": gbs, "of_copy": gbs / copy_gbs}
        rows.append(row)
        print(
            f"  {name}: neoflow {row['neoflow']['gb_per_s']:.1f} GB/s ({row['neoflow']['of_copy']:.0%} of the copy), "
            f"eager {row['eager']['gb_per_s']:.1f} GB/s, matches: {matches}",
            file=sys.stderr,
            flush=True,
        )
    return {
        "date": datetime.date.today().isoformat(),
        "machine": wl.machine_info(torch, neoflow, args.device),
        "settings": {"mib": mib, "elements": n, "repeat": args.repeat},
        "copy": {**copy, "gb_per_s": copy_gbs},
        "ops": rows,
    }


def render_markdown(result: dict) -> str:
    m, s, c = result["machine"], result["settings"], result["copy"]
    where = f"GPU {m['gpu']} (CUDA {m['cuda']})" if m["device"] == "cuda" else f"CPU {m['cpu']}, {m['threads']} threads"
    lines = [
        f"# Memory-bound ops against the copy bandwidth, {result['date']}",
        "",
        f"{where}, torch {m['torch']}, neoflow {m['neoflow']}. float32 tensors of {s['mib']:g} MiB "
        f"({s['elements']} elements); median (min–max) of {s['repeat']} calls after 3 warm-ups.",
        "",
        f"Copy (`copy_`, bytes read + written): {c['median_ms']:.3f} ms ({c['min_ms']:.3f}–{c['max_ms']:.3f}), "
        f"**{c['gb_per_s']:.1f} GB/s**.",
        "",
        "| op | neoflow ms | neoflow GB/s | of the copy | eager ms | eager GB/s | of the copy | matches |",
        "|---|---|---|---|---|---|---|---|",
    ]

    def cells(v: dict) -> str:
        return f"{v['median_ms']:.3f} ({v['min_ms']:.3f}–{v['max_ms']:.3f}) | {v['gb_per_s']:.1f} | {v['of_copy']:.0%}"

    for r in result["ops"]:
        ok = "yes" if r["matches"] else "**no**"
        lines.append(f"| `{r['source']}` | {cells(r['neoflow'])} | {cells(r['eager'])} | {ok} |")
    lines += [
        "",
        "GB/s counts each input read once and the output written once. Eager writes into preallocated tensors, "
        "one pass per PyTorch op (x * 1.5 then + 0.25; relu, sigmoid, then their product).",
        "",
    ]
    return "\n".join(lines)


def render_chart(result: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ops = result["ops"]
    fig, ax = plt.subplots(figsize=(6, 3.5))
    xs = range(len(ops))
    ax.bar([x - 0.2 for x in xs], [r["neoflow"]["gb_per_s"] for r in ops], 0.4, label="neoflow")
    ax.bar([x + 0.2 for x in xs], [r["eager"]["gb_per_s"] for r in ops], 0.4, label="eager")
    ax.axhline(result["copy"]["gb_per_s"], color="gray", linestyle="--", label="copy")
    ax.set_xticks(list(xs))
    ax.set_xticklabels([r["op"] for r in ops], fontsize=8)
    ax.set_ylabel("GB/s (inputs read once, output written once)")
    m = result["machine"]
    ax.set_title(f"memory-bound ops, {m['gpu'] if m['device'] == 'cuda' else m['cpu']}", fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv=None) -> dict:
    args = parse_args(argv)
    result = run(args)
    md = render_markdown(result)
    name = f"bandwidth-{result['date']}-{wl.machine_tag(result['machine'])}"
    stem = wl.write_results(args.out, name, result, md, lambda p: render_chart(result, p))
    print(md)
    print(f"wrote {stem}.json, .md, .png", file=sys.stderr)
    if not all(r["matches"] for r in result["ops"]):
        raise SystemExit("bandwidth: a neoflow result differs from PyTorch's")
    return result


if __name__ == "__main__":
    main()
