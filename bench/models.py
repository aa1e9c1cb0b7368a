"""Whole models under ``torch.compile(backend="neoflow")``: a training step against eager and inductor.

Models (float32, on the CPU or with ``--device cuda`` on the GPU): the six workloads' plain-PyTorch baselines
at bench size and batch 16 (workloads/, unchanged), an MLP with GELU and LayerNorm, a transformer block
(attention, layer norms, MLP), a small convolutional net, and the public models of bench/zoo.py
(torchvision, timm and transformers models from small configs, batch 2; nobody here tuned for them).
For each, in one process, a training step
(zero_grad + forward + loss + backward + ``Adam.step()``) of

- ``eager``: the model as it is;
- ``inductor``: ``torch.compile`` of the loss function (default backend and mode);
- ``neoflow``: ``torch.compile`` of the loss function with neoflow's backend, untuned (``NEOFLOW_TUNE=off``),
  stepped alone until each graph's measured choice between compiled and eager is made (neoflow.backend.choice;
  the report's "kept" column: what each graph kept, and its compiled step time over its eager one);
- ``neoflow tuned``: the same, compiled again under ``NEOFLOW_TUNE=background``, after the background tuner
  finished the subgraphs' kernels (``neoflow.wait_background``, at most ``--tune-timeout`` s per model);
  ``--no-tuned`` leaves it out.

Each variant is a separate copy of the model with the same parameters. Step times: the median (min-max) of
``--repeat`` steps after ``--warmup``; the first step (tracing and compiling) is reported as ``first_s``.
eager, inductor and neoflow are timed in turns (``interleaved`` of bench/workloads.py): blocks of 5 timed
steps per variant and round, each after 2 untimed ones, the rounds rotating the order. The tuned variant is
timed after them, on its own. The report adds the fraction of each graph's operator calls that neoflow lowered
(``neoflow.compile_report``) and the geomean of inductor's time over neoflow's on the six workloads. Caches
start cold. Writes ``models-DATE-cpu.json`` (``models-DATE-<gpu>.json`` for a CUDA run), ``.md`` and ``.png``
into ``--out``. Not a test: speed is reported, not asserted.

    python bench/models.py [--models lltm mlp ...] [--repeat 15] [--warmup 3] [--no-tuned] [--tune-timeout 400]
                           [--device cpu|cuda] [--heap default|steady]

``--heap steady`` keeps glibc's freed memory (machine.steady_heap): under the default policy a step's large
tensors come back as fresh pages in some runs and not others, and ShuffleNet's steps ran 27 or 36 ms (eager),
25 or 36 ms (neoflow) minutes apart.
"""

from __future__ import annotations

import argparse
import copy
import datetime
import functools
import importlib
import math
import os
import sys
from pathlib import Path

import workloads_module
import zoo

ROOT = Path(__file__).resolve().parent.parent
wl = workloads_module.load()

WORKLOADS = ["milstm", "scrnn", "sublstm", "lltm", "capsnet", "shufflenet"]
OTHERS = ["mlp", "transformer", "convnet"]
ZOO = list(zoo.MODELS)  # public models nobody here tuned for (bench/zoo.py)
BATCH = 16


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", nargs="+", default=WORKLOADS + OTHERS + ZOO, choices=WORKLOADS + OTHERS + ZOO)
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--no-tuned", action="store_true", help="skip the background-tuned neoflow variant")
    ap.add_argument("--no-compile", action="store_true", help="skip inductor")
    ap.add_argument(
        "--inference",
        action="store_true",
        help="time inference (eval mode, forward and loss without grad), not training",
    )
    ap.add_argument(
        "--tune-timeout",
        type=float,
        default=400.0,
        help="seconds to wait for tuning, per model (at 120 CapsNet and ShuffleNet were timed unfinished on 2 cores)",
    )
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"], help="where models and data live")
    ap.add_argument(
        "--heap",
        default="default",
        choices=["default", "steady"],
        help="glibc malloc policy: steady keeps freed memory (machine.steady_heap), so that no side's steps "
        "fault on fresh pages in some runs and not others",
    )
    ap.add_argument("--out", default=str(ROOT / "bench" / "results"))
    return ap.parse_args(argv)


def other_model(torch, name: str, device: str = "cpu"):
    """(model, loss(model), lr) for the models beside the workloads."""
    torch.manual_seed(0)
    nn = torch.nn
    if name == "mlp":
        model = nn.Sequential(nn.Linear(256, 512), nn.GELU(), nn.LayerNorm(512), nn.Linear(512, 256))
        x, y = torch.randn(BATCH * 8, 256), torch.randn(BATCH * 8, 256)
    elif name == "transformer":

        class Block(nn.Module):
            def __init__(self, d=128, heads=4):
                super().__init__()
                self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
                self.att = nn.MultiheadAttention(d, heads, batch_first=True)
                self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

            def forward(self, x):
                h = self.ln1(x)
                x = x + self.att(h, h, h, need_weights=False)[0]
                return x + self.mlp(self.ln2(x))

        model = Block()
        x, y = torch.randn(BATCH, 64, 128), torch.randn(BATCH, 64, 128)
    else:
        model = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1),
            nn.BatchNorm2d(16),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1),
            nn.ReLU(),
            nn.AdaptiveAvgPool2d(4),
            nn.Flatten(),
            nn.Linear(32 * 16, 10),
        )
        x, y = torch.randn(BATCH, 3, 32, 32), torch.randn(BATCH, 10)

    model.to(device)
    x, y = x.to(device), y.to(device)

    def loss(m):
        return torch.nn.functional.mse_loss(m(x), y)

    return model, loss, 1e-3


def model_and_loss(torch, name: str, device: str):
    if name in WORKLOADS:
        base, _, loss, lr, _ = wl.setup(name, "bench", BATCH, torch.float32, torch, device)
        return base, loss, lr
    if name in ZOO:
        model, inputs = zoo.make(name)
        inputs = {k: v.to(device) for k, v in inputs.items()}
        return model.to(device), functools.partial(zoo.loss, name, inputs=inputs), 1e-3
    return other_model(torch, name, device)


def variant_step(torch, neoflow, model, loss, lr, variant: str, reset: bool = True, inference: bool = False):
    """A training step of a copy of model under the variant, or with inference its forward and loss in eval
    mode without grad. ``reset`` clears Dynamo's caches first (the variants timed in turns are compiled
    without it: a reset would make the earlier ones compile again)."""
    m = copy.deepcopy(model)
    if inference:
        m.eval()
    if reset:
        torch._dynamo.reset()
    if variant == "eager":
        fn = lambda: loss(m)  # noqa: E731
    elif variant == "inductor":
        fn = torch.compile(lambda: loss(m))
    else:
        neoflow.configure(tune="background" if variant == "neoflow tuned" else "off")
        fn = neoflow.compile(lambda: loss(m))
    if inference:

        def step():
            with torch.no_grad():
                fn()

        return step
    return wl.train_step(torch, m, fn, lr)


def _settle(neoflow, timeout: float, into: list) -> None:
    """Waits for the background tuner (at most timeout s) and keeps its kernels' state in into."""
    into.extend(neoflow.wait_background(timeout=timeout))


def bench_model(torch, neoflow, name: str, args) -> dict:
    """eager, inductor and untuned neoflow compiled and warmed up first, then timed in turns (wl.interleaved: a
    slow spell of the machine falls on all three alike); the tuned variant after them, on its own (its tuner swaps
    kernels of ops the untuned variant shares)."""
    model, loss, lr = model_and_loss(torch, name, args.device)
    variants = ["eager"] + ([] if args.no_compile else ["inductor"]) + ["neoflow"]
    row = {"model": name}
    torch._dynamo.reset()
    steps = {}
    for v in variants:
        neoflow.compile_report(clear=True)
        steps[v] = variant_step(torch, neoflow, model, loss, lr, v, reset=False, inference=args.inference)
        row[v] = wl.prepare(steps[v], args.warmup)
        if v == "neoflow":
            _until_chosen(neoflow, steps[v])
            reps = neoflow.compile_report()
            row["choice"] = choices(reps)
            row["lowered"] = sum(r["lowered"] for r in reps)
            row["nodes"] = sum(r["nodes"] for r in reps)
            row["subgraphs"] = sum(r["subgraphs"] for r in reps)
            row["max_nodes"] = importlib.import_module("neoflow.backend.graphs").MAX_NODES
            row["fallback"] = sorted({k for r in reps for k in r["fallback"]})
    for v, st in wl.interleaved(steps, args.repeat, block=5, untimed=2).items():
        row[v] |= st
        print(f"{name:12s} {v:14s} {row[v]['median_ms']:9.2f} ms", file=sys.stderr, flush=True)
    if not args.no_tuned:
        v = "neoflow tuned"
        variants.append(v)
        neoflow.compile_report(clear=True)
        step = variant_step(torch, neoflow, model, loss, lr, v, inference=args.inference)
        tuned: list = []
        # the measured choice is made after the tuner settled (its kernels are swapped in by then)
        warmup = max(args.warmup, importlib.import_module("neoflow.backend.choice").TRIAL + 2)
        row[v] = wl.measure(
            step, args.repeat, warmup, settle=functools.partial(_settle, neoflow, args.tune_timeout, tuned)
        )
        row["choice tuned"] = choices(neoflow.compile_report())
        if tuned:  # the background tuner's state when the timed steps began
            row["tuning"] = {
                "kernels": len(tuned),
                "done": sum(k.done for k in tuned),
                "swapped": sum(k.swapped for k in tuned),
                "errors": sorted({k.error for k in tuned if k.error}),
            }
        print(f"{name:12s} {v:14s} {row[v]['median_ms']:9.2f} ms", file=sys.stderr, flush=True)
    neoflow.configure(tune="off")
    for v in variants[1:]:
        row[f"eager/{v}"] = row["eager"]["median_ms"] / row[v]["median_ms"]
        if "inductor" in row and v.startswith("neoflow"):
            row[f"inductor/{v}"] = row["inductor"]["median_ms"] / row[v]["median_ms"]
    return row


def _until_chosen(neoflow, step) -> None:
    """Runs step until every graph of the compile reports has its measured choice (the backend alternates
    compiled and eager over a graph's first calls, timing the interval to the next: timed in turns with other
    variants, those intervals would hold their steps too), at most choice.TRIAL times."""
    for _ in range(importlib.import_module("neoflow.backend.choice").TRIAL):
        if all(r["choice"] for r in neoflow.compile_report()):
            return
        step()


def choices(reps: list[dict]) -> list[dict]:
    """The measured choices of the reports' graphs, one per choice (a graph's forward and backward share
    one): kept, the medians, and the graphs."""
    out = {}
    for r in reps:
        c = r.get("choice")
        if c:
            out.setdefault(id(c), dict(c, graphs=[]))["graphs"].append(r["graph"])
    return list(out.values())


def kept_text(row: dict) -> str:
    """Per measured graph of the untuned neoflow column: what was kept, and its compiled step time over its
    eager one in the trial (e.g. "eager 1.32x")."""
    cs = row.get("choice") or []
    return "; ".join(f"{c['kept']} {c['neoflow_ms'] / c['eager_ms']:.2f}x" for c in cs) or "-"


def zoo_summary(zrows: list[dict]) -> dict:
    """The public models' geomeans (eager's or inductor's time over neoflow's) and those slower than eager."""
    return {
        "vs inductor": geomean([r.get("inductor/neoflow") for r in zrows]),
        "vs eager": geomean([r.get("eager/neoflow") for r in zrows]),
        "vs inductor tuned": geomean([r.get("inductor/neoflow tuned") for r in zrows]),
        "slower than eager": [r["model"] for r in zrows if r.get("eager/neoflow", 1) < 1],
    }


def geomean(xs):
    xs = [x for x in xs if x]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def render_markdown(result: dict) -> str:
    m, rows = result["machine"], result["rows"]
    where = f"CUDA on {m['gpu']}" if m["device"] == "cuda" else "CPU"
    variants = [v for v in ("eager", "inductor", "neoflow", "neoflow tuned") if v in rows[0]]
    what = "Training step (forward, loss, backward, Adam)"
    if result["settings"].get("inference"):
        what = "Inference (eval mode, forward and loss without grad)"
    lines = [
        f'# Whole models under backend="neoflow" ({result["date"]})',
        "",
        f"Machine: {m['cpu']}, {m['threads']} threads, torch {m['torch']}, neoflow {m['neoflow']}; float32, {where}, "
        f"batch {BATCH} (the public models: {zoo.BATCH}), glibc heap {result['settings'].get('heap', 'default')}. "
        f"{what}, ms: median over {result['settings']['repeat']} "
        "steps (min-max); eager, inductor and neoflow timed in turns, blocks of 5 steps after 2 untimed. Ratios: the "
        "other's time / neoflow's (above 1: neoflow is faster). lowered: operator calls of the forward and "
        "backward graphs that neoflow ran, of all, in how many ops (subgraphs of at most "
        f"{rows[0].get('max_nodes', '?') if rows else '?'} operator calls).",
        "",
        "| model | "
        + " | ".join(variants)
        + " | vs eager | vs inductor | lowered | ops | kept (compiled / eager) | first step s (inductor, neoflow) |",
        "|---|" + "---|" * (len(variants) + 6),
    ]
    for r in rows:
        cells = [wl.spread(r[v]) for v in variants]
        vs_e = f"{r['eager/neoflow']:.2f}x"
        vs_i = f"{r['inductor/neoflow']:.2f}x" if "inductor" in r else "-"
        if "neoflow tuned" in r:
            vs_e += f" ({r['eager/neoflow tuned']:.2f}x tuned)"
            vs_i += f" ({r['inductor/neoflow tuned']:.2f}x tuned)" if "inductor" in r else ""
        first = f"{r['inductor']['first_s']:.1f}" if "inductor" in r else "-"
        first += f", {r['neoflow']['first_s']:.1f}"
        lines.append(
            f"| {r['model']} | "
            + " | ".join(cells)
            + f" | {vs_e} | {vs_i} | {r['lowered']}/{r['nodes']} | {r.get('subgraphs', '-')} | {kept_text(r)}"
            + f" | {first} |"
        )
    g = result["geomean"]
    if g.get("untuned"):
        n = sum(r["model"] in WORKLOADS for r in rows)
        what = "The six workloads" if n == len(WORKLOADS) else f"{n} of the six workloads"
        lines += ["", f"{what}, inductor's time / neoflow's, geomean: untuned {g['untuned']:.2f}x"]
        if g.get("tuned"):
            lines[-1] += f", tuned {g['tuned']:.2f}x"
    z = result.get("zoo") or {}
    if z.get("vs eager"):
        lines += [
            "",
            f"The public models (bench/zoo.py), geomean: neoflow {z['vs eager']:.2f}x eager"
            + (f", {z['vs inductor']:.2f}x inductor" if z.get("vs inductor") else "")
            + (f" ({z['vs inductor tuned']:.2f}x tuned)" if z.get("vs inductor tuned") else "")
            + f"; slower than eager on {len(z['slower than eager'])}: {', '.join(z['slower than eager']) or 'none'}",
        ]
    untouched = [r["model"] for r in rows if "neoflow tuned" in r and "tuning" not in r]
    if untouched:
        lines += [
            "",
            f"The background tuner took no kernel of {', '.join(untouched)}: "
            "the tuned column runs the kernels of the untuned one.",
        ]
    tuning = [r for r in rows if "tuning" in r]
    if tuning:
        lines += ["", "Background tuning when the tuned steps were timed (kernels done of taken, swapped in):", ""]
        for r in tuning:
            t = r["tuning"]
            err = f"; errors: {'; '.join(t['errors'])}" if t["errors"] else ""
            lines.append(f"- {r['model']}: {t['done']}/{t['kernels']} done, {t['swapped']} swapped in{err}")
    lines += ["", "Operators left in eager, per model:", ""]
    for r in rows:
        lines.append(f"- {r['model']}: {', '.join(r['fallback']) or 'none'}")
    return "\n".join(lines) + "\n"


def main(argv=None) -> dict:
    args = parse_args(argv)
    wl.untuned_process(args.heap)
    if (os.cpu_count() or 1) <= 4:
        os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")
    import neoflow
    import torch

    info = wl.machine_info(torch, neoflow, args.device)
    if args.device == "cuda":
        wl.SYNC = torch.cuda.synchronize
    if any(m in ZOO for m in args.models) and zoo.missing():
        need = ", ".join(zoo.missing())
        raise SystemExit(f"bench/models.py: the public models need {need}: scripts/env.sh installs them")
    rows = [bench_model(torch, neoflow, name, args) for name in args.models]
    wrows = [r for r in rows if r["model"] in WORKLOADS]
    zrows = [r for r in rows if r["model"] in ZOO]
    result = {
        "date": datetime.date.today().isoformat(),
        "machine": info,
        "settings": vars(args),
        "rows": rows,
        "geomean": {
            "untuned": geomean([r.get("inductor/neoflow") for r in wrows]),
            "tuned": geomean([r.get("inductor/neoflow tuned") for r in wrows]),
        },
        "zoo": zoo_summary(zrows),
    }
    md = render_markdown(result)
    variants = tuple(v for v in ("eager", "inductor", "neoflow", "neoflow tuned") if v in rows[0])

    def chart(path):
        what = "inference" if args.inference else "training step"
        title = f"{what}, batch {BATCH}, {info['gpu'] if args.device == 'cuda' else info['cpu']}"
        wl.bar_chart(rows, variants, [r["model"] for r in rows], "ms per step (log scale)", title, path)

    name = f"models-{result['date']}-{wl.machine_tag(info)}" + ("-inference" if args.inference else "")
    stem = wl.write_results(args.out, name, result, md, chart)
    print(md)
    print(f"wrote {stem}.json, .md, .png", file=sys.stderr)
    return result


if __name__ == "__main__":
    main()
