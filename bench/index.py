"""Index tensors: an embedding bag and a GCN layer against PyTorch eager and torch.compile, untuned.

Times, in one process, on float32 CPU tensors at sizes a user would pick:

- ``embedding bag forward``: ``O[b, d] += LUT[I[b, k], d]`` on a 100,000 x 128 table, 1,024 bags of 20 int64
  indices, against ``F.embedding_bag(I, LUT, mode="sum")`` (eager) and ``LUT[I].sum(1)`` under torch.compile;
- ``embedding bag forward+backward``: the same with the table requiring grad, the output given a gradient
  (the table's gradient is dense, as ``embedding_bag`` makes it without ``sparse=True``);
- ``GCN layer training step``: ``Y[Dst[e], f] += X[Src[e], f] * Norm[e]`` over 50,000 random edges of a
  10,000-node graph with 128 features (``out_shapes``), then ``Y @ W`` (128 x 128), a squared loss, backward
  into the features and W, against ``index_add`` on ``X[Src] * Norm`` (eager and compiled).

Each round times ``--calls`` calls of every variant in turn (the order rotating between rounds; each variant's
calls after three untimed ones: the cases move about 100 MB between them, and on the 2-core Xeon the first two
calls of an embedding bag after a GCN step ran 1.5-2.5x slower than the rest, for neoflow and eager alike) and
keeps the mean per call; the report gives the median over ``--rounds`` rounds with its min-max, and PyTorch's
time over neoflow's (above 1: neoflow is faster). Kernels are untuned (NEOFLOW_TUNE=off), built before timing
into a fresh cache. Writes ``index-DATE-cpu.json``, ``.md`` and ``.png`` into ``--out``. Not a test: speed is
reported, not asserted.

    python bench/index.py [--rounds 9] [--calls 5] [--no-compile] [--out bench/results]
"""

from __future__ import annotations

import argparse
import datetime
import os
import sys
from pathlib import Path

import workloads_module
from machine import scratch_dir
from overhead import rotating_times, summary

ROOT = Path(__file__).resolve().parent.parent

wl = workloads_module.load()

ROWS, DIM, BAGS, PER_BAG = 100_000, 128, 1024, 20
NODES, EDGES, FEATS = 10_000, 50_000, 128


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--calls", type=int, default=5, help="calls per variant and round")
    ap.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results"))
    return ap.parse_args(argv)


def embedding_cases(torch, neoflow, compile_):
    import torch.nn.functional as F

    bag = neoflow.op("O[b, d] += LUT[I[b, k], d]", name="bench_embedding_bag", inputs=["LUT", "I"])
    lut = torch.randn(ROWS, DIM)
    idx = torch.randint(0, ROWS, (BAGS, PER_BAG))
    lut_g = lut.clone().requires_grad_()
    g = torch.randn(BAGS, DIM)

    def eager(w, i):
        return F.embedding_bag(i, w, mode="sum")

    impls = {"neoflow": bag, "eager": eager}
    if compile_:
        impls["compile"] = torch.compile(lambda w, i: w[i].sum(1))
    check = bag(lut, idx)
    torch.testing.assert_close(check, eager(lut, idx), rtol=1e-4, atol=1e-4)

    def forward(fn):
        def call():
            with torch.no_grad():
                fn(lut, idx)

        return call

    def fwd_bwd(fn):
        def call():
            lut_g.grad = None
            fn(lut_g, idx).backward(g)

        return call

    return {
        "embedding bag forward": {k: forward(f) for k, f in impls.items()},
        "embedding bag forward+backward": {k: fwd_bwd(f) for k, f in impls.items()},
    }


def gcn_cases(torch, neoflow, compile_):
    agg = neoflow.op("Y[Dst[e], f] += X[Src[e], f] * Norm[e]", name="bench_gcn", inputs=["X", "Src", "Dst", "Norm"])
    x = torch.randn(NODES, FEATS, requires_grad=True)
    src = torch.randint(0, NODES, (EDGES,))
    dst = torch.randint(0, NODES, (EDGES,))
    deg = torch.zeros(NODES).index_add_(0, dst, torch.ones(EDGES)).clamp(min=1)
    norm = deg[dst].rsqrt()
    w = torch.randn(FEATS, FEATS, requires_grad=True)

    def neo(x, src, dst, norm):
        return agg(x, src, dst, norm, out_shapes={"Y": (NODES, FEATS)})

    def eager(x, src, dst, norm):
        return x.new_zeros(NODES, FEATS).index_add(0, dst, x[src] * norm[:, None])

    torch.testing.assert_close(neo(x, src, dst, norm), eager(x, src, dst, norm), rtol=1e-4, atol=1e-4)

    def step(aggregate):
        def call():
            x.grad = w.grad = None
            loss = (aggregate(x, src, dst, norm) @ w).square().mean()
            loss.backward()

        return call

    impls = {"neoflow": step(neo), "eager": step(eager)}
    if compile_:
        impls["compile"] = step(torch.compile(eager))
    return {"GCN layer training step": impls}


def run(torch, neoflow, args) -> list[dict]:
    cases = {**embedding_cases(torch, neoflow, not args.no_compile), **gcn_cases(torch, neoflow, not args.no_compile)}
    timed = [(name, impl, fn) for name, impls in cases.items() for impl, fn in impls.items()]
    times = rotating_times(timed, args.rounds, args.calls, warmup=3, settle=3)
    rows = []
    for name, impls in cases.items():
        row = {"case": name}
        for impl in impls:
            row[impl] = summary(times[(name, impl)])
        row["vs_eager"] = row["eager"]["median_ms"] / row["neoflow"]["median_ms"]
        if "compile" in row:
            row["vs_compile"] = row["compile"]["median_ms"] / row["neoflow"]["median_ms"]
        rows.append(row)
    return rows


def ms(d: dict) -> str:
    return f"{d['median_ms']:.2f} ({d['min_ms']:.2f}–{d['max_ms']:.2f})"


def render_markdown(result: dict) -> str:
    m, s = result["machine"], result["settings"]
    lines = [
        f"# Index tensors: embedding bag and GCN layer ({result['date']})",
        "",
        f"Machine: {m['cpu']}, {m['threads']} threads, torch {m['torch']}, neoflow {m['neoflow']}; float32, CPU.",
        f"Embedding bag: {ROWS:,} x {DIM} table, {BAGS} bags of {PER_BAG} indices. GCN layer: {NODES:,} nodes, "
        f"{EDGES:,} edges, {FEATS} features, then a {FEATS} x {FEATS} weight. neoflow untuned. ms per call: median "
        f"over {s['rounds']} rounds of the mean of {s['calls']} calls, each after three untimed calls (min-max of "
        "the rounds). Ratios: PyTorch's time / neoflow's (above 1: neoflow is faster).",
        "",
        "| case | neoflow ms | eager ms | compile ms | vs eager | vs compile |",
        "|---|---|---|---|---|---|",
    ]
    for r in result["rows"]:
        comp = ms(r["compile"]) if "compile" in r else "-"
        vs_c = f"{r['vs_compile']:.2f}x" if "vs_compile" in r else "-"
        lines.append(
            f"| {r['case']} | {ms(r['neoflow'])} | {ms(r['eager'])} | {comp} | {r['vs_eager']:.2f}x | {vs_c} |"
        )
    return "\n".join(lines) + "\n"


def main(argv=None) -> dict:
    args = parse_args(argv)
    os.environ.setdefault("NEOFLOW_CACHE_DIR", scratch_dir("neoflow-bench-index-"))
    os.environ["NEOFLOW_TUNE"] = "off"
    import neoflow
    import torch

    info = wl.machine_info(torch, neoflow)
    rows = run(torch, neoflow, args)
    result = {"date": datetime.date.today().isoformat(), "machine": info, "settings": vars(args), "rows": rows}
    md = render_markdown(result)
    impls = [i for i in ("eager", "compile", "neoflow") if i in rows[0]]
    labels, title = [r["case"] for r in rows], f"index tensors, untuned, {info['cpu']}"

    def chart(path):
        wl.bar_chart(rows, tuple(impls), labels, "ms per call (log scale)", title, path)

    stem = wl.write_results(args.out, f"index-{result['date']}-cpu", result, md, chart)
    print(md)
    print(f"wrote {stem}.json, .md, .png", file=sys.stderr)
    return result


if __name__ == "__main__":
    main()
