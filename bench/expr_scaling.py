"""Expression and program size: time to define and to differentiate long
products and sums, and programs of many statements.

For products and sums of 10, 100, 1,000 and 2,000 terms, written out as
one statement, it times

- define: ``neoflow.op(text)`` (parse, check, print, hash);
- first call: define, then the first forward and backward of a float64
  input of 64 elements that requires grad, on a cold kernel cache: the
  forward kernel's C source and compile, the gradient op's derivation
  (autodiff), its C source and compile, and both runs.

Four shapes of expression: ``product`` and ``sum`` of one read
(``X[i] * X[i] * ... * X[i]``, the issue's example), and ``shifted sum``
and ``shifted product`` of distinct reads (``X[i] + X[i + 1] + ...``).
The partials of a product of n distinct reads are n products of n - 1
factors; past the size limit (``ir.MaxNodes``) the gradient is refused,
and the time to the refusal is reported. Each point is repeated
(median, min, max); each repetition uses a fresh kernel cache. Not a
test: speed is reported, not asserted.

    python bench/expr_scaling.py [--repeat 5] [--terms 10 100 1000 2000] [--statements 10 30 ... 2000]
                                 [--out bench/results]

The statements axis (``--statements``) times the same first call for
programs of 10 to 2,000 statements over a float64 input of 16 elements:
``chain`` (``T{k}[i] = T{k-1}[i] * 1.0001``, one output), ``fan-out``
(``T{k}[i] = X[i] + k``, as many outputs as statements) and ``random DAG``
(each statement combines one to three earlier tensors with tanh, products
and sums, from a fixed seed; every tensor no statement reads is an
output). The backward sums every output. The growth exponent k of time ~
n^k is fitted by least squares over all sizes, and also given between the
two largest.

Writes ``expr_scaling-DATE-cpu.json`` and ``.md`` into ``--out``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import platform
import random
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

import neoflow  # noqa: E402
from machine import cpu_model, scratch_dir  # noqa: E402

KINDS = ("product", "sum", "shifted sum", "shifted product")
ELEMS = 64
MAX_NODES = 50_000  # core/ir.MaxNodes, for the report


def source(kind: str, n: int) -> str:
    shifted = kind.startswith("shifted")
    terms = [f"X[i + {k}]" if shifted else "X[i]" for k in range(n)]
    return "Y[i] = " + (" * " if kind.endswith("product") else " + ").join(terms)


PROGRAMS = ("chain", "fan-out", "random DAG")
STATEMENT_ELEMS = 16


def program(kind: str, n: int) -> str:
    """A program of n statements over input X (the statements axis)."""
    if kind == "chain":
        return "\n".join(f"T{k}[i] = {'X' if k == 0 else f'T{k - 1}'}[i] * 1.0001" for k in range(n))
    if kind == "fan-out":
        return "\n".join(f"T{k}[i] = X[i] + {k}.0" for k in range(n))
    rng = random.Random(n)
    lines = []
    for k in range(n):
        reads = [f"T{j}[i]" if j >= 0 else "X[i]" for j in rng.sample(range(-1, k), min(k + 1, rng.randint(1, 3)))]
        terms = [f"tanh({r})" if rng.random() < 0.3 else r for r in reads]
        op = " * " if rng.random() < 0.3 else " + "
        lines.append(f"T{k}[i] = ({op.join(terms)}) * 0.5 + {k % 7}.0 * 0.01")
    return "\n".join(lines)


def program_run(kind: str, n: int) -> dict:
    """Times one define + first forward + backward of an n-statement program, on a fresh kernel cache."""
    neoflow.configure(cache_dir=scratch_dir("neoflow-bench-expr-"))
    src = program(kind, n)
    x = (0.5 + 0.1 * torch.rand(STATEMENT_ELEMS, dtype=torch.float64)).requires_grad_(True)
    t0 = time.perf_counter()
    op = neoflow.op(src, inputs=["X"])
    ys = op(x)
    ys = ys if isinstance(ys, tuple) else (ys,)
    sum(y.sum() for y in ys).backward()
    return {"first_s": time.perf_counter() - t0, "outputs": len(ys)}


def fitted_growth(ns: list[int], ts: list[float]) -> float:
    """The least-squares slope of log t over log n."""
    xs, ys = [math.log(n) for n in ns], [math.log(t) for t in ts]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)


def statements_axis(sizes: list[int], repeat: int) -> dict:
    rows = []
    for kind in PROGRAMS:
        for n in sizes:
            runs = [program_run(kind, n) for _ in range(repeat)]
            first = stats([r["first_s"] for r in runs])
            row = {"kind": kind, "statements": n, "outputs": runs[0]["outputs"], "first": first}
            rows.append(row)
            print(f"{kind} {n} statements: first {fmt(row['first'])}", file=sys.stderr)
    growth = {}
    for kind in PROGRAMS:
        kr = [r for r in rows if r["kind"] == kind]
        ns, ts = [r["statements"] for r in kr], [r["first"]["median_s"] for r in kr]
        growth[kind] = {
            "fitted": fitted_growth(ns, ts) if len(kr) > 1 else None,
            "largest_two": math.log(ts[-1] / ts[-2]) / math.log(ns[-1] / ns[-2]) if len(kr) > 1 else None,
        }
    return {"sizes": sizes, "rows": rows, "growth": growth}


def statements_markdown(ax: dict) -> list[str]:
    lines = [
        "",
        "## Statements",
        "",
        f"Programs of n statements over a float64 input of {STATEMENT_ELEMS} elements; *first call*: define, "
        "the first forward and the backward of the sum of every output, on a cold kernel cache.",
        "",
        "| program | statements | outputs | first forward+backward s |",
        "|---|---|---|---|",
    ]
    for r in ax["rows"]:
        lines.append(f"| {r['kind']} | {r['statements']} | {r['outputs']} | {fmt(r['first'])} |")
    lines += ["", "Growth (time ~ statements^k): fitted by least squares over all sizes; between the two largest:", ""]
    for kind, g in ax["growth"].items():
        if g["fitted"] is not None:
            lines.append(f"- {kind}: fitted k = {g['fitted']:.2f}; largest two k = {g['largest_two']:.2f}")
    return lines


def one_run(kind: str, n: int) -> dict:
    """Times one define and one define + first forward + backward, on a
    fresh kernel cache."""
    neoflow.configure(cache_dir=scratch_dir("neoflow-bench-expr-"))
    src = source(kind, n)
    t0 = time.perf_counter()
    neoflow.op(src)
    define = time.perf_counter() - t0

    size = ELEMS + (n - 1 if kind.startswith("shifted") else 0)
    x = (0.999 + 0.002 * torch.rand(size, dtype=torch.float64)).requires_grad_(True)
    t0 = time.perf_counter()
    try:
        op = neoflow.op(src)
        y = op(x)
        y.backward(torch.ones_like(y))
    except neoflow.Error as e:
        if "expression too large" not in str(e):
            raise
        return {"define_s": define, "first_s": time.perf_counter() - t0, "refused": str(e).split("; write")[0]}
    return {"define_s": define, "first_s": time.perf_counter() - t0, "refused": None}


def stats(xs: list[float]) -> dict:
    return {"median_s": statistics.median(xs), "min_s": min(xs), "max_s": max(xs)}


def growth(rows: list[dict], key: str) -> float | None:
    """The exponent k of time ~ n^k between the two largest accepted sizes."""
    ok = [r for r in rows if not r["refused"]]
    if len(ok) < 2:
        return None
    a, b = ok[-2], ok[-1]
    return math.log(b[key]["median_s"] / a[key]["median_s"]) / math.log(b["terms"] / a["terms"])


def fmt(s: dict) -> str:
    return f"{s['median_s']:.3f} ({s['min_s']:.3f}–{s['max_s']:.3f})"


def markdown(result: dict) -> str:
    m, st = result["machine"], result["settings"]
    lines = [
        "# Expression size: define and differentiate long products and sums",
        "",
        f"machine: {m['cpu']}, {m['threads']} threads, torch {m['torch']}, neoflow {m['neoflow']}; "
        f"{result['date']}; median of {st['repeat']} runs (min–max), seconds; float64 input of {ELEMS} "
        f"elements; a cold kernel cache for every run; size limit {st['max_nodes']} nodes",
        "",
        "*define*: `neoflow.op(text)`. *first call*: define, then the first forward and backward "
        "(both kernels' C source and compile, the gradient's derivation, both runs).",
        "",
        "| expression | terms | text bytes | define s | first forward+backward s |",
        "|---|---|---|---|---|",
    ]
    for kind in st["kinds"]:
        rows = [r for r in result["rows"] if r["kind"] == kind]
        for r in rows:
            first = fmt(r["first"]) if not r["refused"] else f"refused in {fmt(r['first'])}: {r['refused']}"
            lines.append(f"| {kind} | {r['terms']} | {r['text_bytes']} | {fmt(r['define'])} | {first} |")
    lines += ["", "Growth (time ~ terms^k between the two largest accepted sizes):", ""]
    for kind, g in result["growth"].items():
        d, f = g["define"], g["first"]
        lines.append(
            f"- {kind}: define k = {d:.2f}, first call k = {f:.2f}"
            if d is not None and f is not None
            else f"- {kind}: fewer than two accepted sizes"
        )
    if result.get("statements"):
        lines += statements_markdown(result["statements"])
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--terms", type=int, nargs="*", default=[10, 100, 1000, 2000])
    ap.add_argument("--kinds", nargs="*", default=list(KINDS), choices=KINDS)
    ap.add_argument("--statements", type=int, nargs="*", default=[10, 30, 100, 300, 1000, 2000])
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent / "results"))
    args = ap.parse_args()
    torch.manual_seed(0)
    info = {
        "cpu": cpu_model(),
        "cpu_count": os.cpu_count(),
        "threads": torch.get_num_threads(),
        "torch": torch.__version__,
        "neoflow": neoflow.__version__,
        "python": platform.python_version(),
        "platform": platform.platform(),
    }
    print(f"machine: {info['cpu']}, {info['threads']} threads, torch {info['torch']}", file=sys.stderr)
    neoflow.op("Y[i] = X[i]")(torch.ones(1))  # load the library and the runtime outside the timings
    t_all = time.perf_counter()
    rows = []
    for kind in args.kinds:
        for n in args.terms:
            runs = [one_run(kind, n) for _ in range(args.repeat)]
            row = {
                "kind": kind,
                "terms": n,
                "text_bytes": len(source(kind, n)),
                "define": stats([r["define_s"] for r in runs]),
                "first": stats([r["first_s"] for r in runs]),
                "refused": runs[0]["refused"],
            }
            rows.append(row)
            print(f"{kind} {n}: define {fmt(row['define'])}, first {fmt(row['first'])}", file=sys.stderr)
    settings = {"repeat": args.repeat, "terms": args.terms, "kinds": args.kinds, "elems": ELEMS, "max_nodes": MAX_NODES}
    statements = statements_axis(args.statements, args.repeat) if args.statements else None
    result = {
        "date": datetime.date.today().isoformat(),
        "machine": info,
        "settings": settings,
        "rows": rows,
        "growth": {
            kind: {
                "define": growth([r for r in rows if r["kind"] == kind], "define"),
                "first": growth([r for r in rows if r["kind"] == kind], "first"),
            }
            for kind in args.kinds
        },
        "statements": statements,
        "total_s": time.perf_counter() - t_all,
    }
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    stem = out / f"expr_scaling-{result['date']}-cpu"
    md = markdown(result)
    stem.with_suffix(".json").write_text(json.dumps(result, indent=2) + "\n")
    stem.with_suffix(".md").write_text(md)
    print(md)
    print(f"wrote {stem}.json, .md in {result['total_s']:.0f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
