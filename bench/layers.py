"""Where a compiled training step's time goes, layer by layer of the backend's path.

For each model (the public models of bench/zoo.py by default, or the six workloads), a training step
(zero_grad, forward, loss, backward, ``SGD.step()``) timed in turns, each variant a copy of the model with
the same parameters:

- ``eager``: the model as it is;
- ``dynamo``: ``torch.compile(backend="eager")``: Dynamo's graph run by eager PyTorch (the model's Python
  gone, nothing else changed);
- ``aot``: AOT Autograd on that graph, forward and backward run as traced, nothing decomposed (what
  ``backend="neoflow"`` starts from);
- ``aot decomposed``: the same with every graph decomposed into core ATen operators first (what the backend
  did before it decomposed only inside lowered subgraphs; neoflow.backend.decompose);
- ``neoflow compiled``: ``backend="neoflow"`` with ``measure=False``: every lowered subgraph runs its kernel;
- ``neoflow``: the backend as a user gets it (the measured choices), stepped until they are made.

Ratios are each variant's time over eager's. dynamo/eager is the model's Python overhead, aot/dynamo AOT's own
(runtime wrappers, functionalization, the backward run as one graph), neoflow compiled/aot what lowering wins or
loses. Medians (min-max) of ``--repeat`` steps, in blocks of 5 after 2 untimed, the order rotating. The heap
is steady by default (machine.steady_heap: glibc keeps freed memory), since under the default policy a step's
large tensors come back as fresh pages in some variants and not others, which swamps the layers' differences
(ResNet-18: 23 to 35 ms for variants that run the same operators). Writes
``layers-DATE-cpu.json`` and ``.md`` into ``--out``. Not a test: speed is reported, not asserted.

    python bench/layers.py [--models bert gpt2 ...] [--repeat 10] [--heap steady|default] [--out bench/results]
"""

from __future__ import annotations

import argparse
import copy
import datetime
import importlib
import sys
import types
from pathlib import Path

import workloads_module
import zoo

ROOT = Path(__file__).resolve().parent.parent
wl = workloads_module.load()
VARIANTS = ["eager", "dynamo", "aot", "aot decomposed", "neoflow compiled", "neoflow"]


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", nargs="+", default=list(zoo.MODELS), choices=list(zoo.MODELS))
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--heap", default="steady", choices=["steady", "default"], help="glibc malloc policy")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results"))
    return ap.parse_args(argv)


def backends(torch, neoflow) -> dict:
    """variant -> the torch.compile backend (None: eager)."""
    from functorch.compile import make_boxed_func
    from torch._dynamo.backends.common import aot_autograd

    decompose = importlib.import_module("neoflow.backend.decompose")

    def nop(gm, example_inputs):
        return make_boxed_func(gm.forward)

    def neoflow_compiled(gm, example_inputs):
        return neoflow.backend.backend(gm, example_inputs, measure=False)

    return {
        "eager": None,
        "dynamo": "eager",
        "aot": aot_autograd(fw_compiler=nop, bw_compiler=nop),
        "aot decomposed": aot_autograd(fw_compiler=nop, bw_compiler=nop, decompositions=decompose.table()),
        "neoflow compiled": neoflow_compiled,
        "neoflow": "neoflow",
    }


def steps(torch, neoflow, name: str) -> dict:
    """variant -> one training step of its copy of the model, compiled and warmed up (the neoflow variant
    until its choices are made)."""
    base, inputs = zoo.make(name)
    out = {}
    choice = importlib.import_module("neoflow.backend.choice")
    for variant, be in backends(torch, neoflow).items():
        model = copy.deepcopy(base)
        opt = torch.optim.SGD(model.parameters(), lr=0.01)

        def fn(model=model):
            return zoo.loss(name, model, inputs)

        if be is not None:
            fn = torch.compile(_own_code(fn, variant), backend=be)

        def step(fn=fn, opt=opt):
            opt.zero_grad()
            fn().backward()
            opt.step()

        for _ in range(3):
            step()
        # the neoflow variant until every graph's choice is made (a recompile starts a graph anew)
        for _ in range(3 * choice.TRIAL if variant == "neoflow" else 0):
            if all(r["choice"] for r in neoflow.compile_report()):
                break
            step()
        out[variant] = step
    return out


def _own_code(fn, variant: str):
    """fn with a code object of its own: Dynamo keeps its compiled graphs per code object, and six variants
    of one function (BERT compiles twice each) went past its recompile limit, after which the last ones ran
    uncompiled."""
    code = fn.__code__.replace(co_name="loss_" + "".join(c if c.isalnum() else "_" for c in variant))
    return types.FunctionType(code, fn.__globals__, code.co_name, fn.__defaults__, fn.__closure__)


def bench_model(torch, neoflow, name: str, repeat: int) -> dict:
    torch._dynamo.reset()
    neoflow.compile_report(clear=True)
    row = {"model": name}
    for v, st in wl.interleaved(steps(torch, neoflow, name), repeat, block=5, untimed=2).items():
        row[v] = st
    eager = row["eager"]["median_ms"]
    for v in VARIANTS[1:]:
        row[f"{v}/eager"] = row[v]["median_ms"] / eager
    row["choices"] = sorted({c["kept"] for r in neoflow.compile_report() if (c := r.get("choice"))})
    print(name, "  ".join(f"{v} {row[v]['median_ms']:.2f}" for v in VARIANTS), file=sys.stderr, flush=True)
    return row


def render_markdown(result: dict) -> str:
    m = result["machine"]
    lines = [
        f"# Where a compiled training step's time goes ({result['date']})",
        "",
        f"Machine: {m['cpu']}, {m['threads']} threads, torch {m['torch']}, neoflow {m['neoflow']}; float32, CPU, "
        f"glibc heap {result['settings']['heap']}. "
        "A training step (zero_grad, forward, loss, backward, SGD) of the public models (bench/zoo.py, batch 2), "
        f"ms: median (min-max) of {result['settings']['repeat']} steps in turns. In parentheses: the time over "
        "eager's. dynamo: Dynamo's graph run by eager PyTorch; aot: AOT Autograd's forward and backward run as "
        "traced; aot decomposed: the same, decomposed into core ATen operators; neoflow compiled: every lowered "
        "subgraph runs its kernel (measure=False); neoflow: the measured choices (kept: what the graphs kept).",
        "",
        "| model | " + " | ".join(VARIANTS) + " | kept |",
        "|---|" + "---|" * (len(VARIANTS) + 1),
    ]
    for r in result["rows"]:
        cells = [wl.spread(r["eager"])] + [f"{wl.spread(r[v])} ({r[f'{v}/eager']:.2f}x)" for v in VARIANTS[1:]]
        lines.append(f"| {r['model']} | " + " | ".join(cells) + f" | {', '.join(r['choices']) or '-'} |")
    g = result["geomean"]
    lines += ["", "Geomean over eager: " + ", ".join(f"{v} {g[v]:.2f}x" for v in VARIANTS[1:])]
    return "\n".join(lines) + "\n"


def main(argv=None) -> dict:
    args = parse_args(argv)
    wl.untuned_process(args.heap)
    if zoo.missing():
        raise SystemExit(f"bench/layers.py: the public models need {', '.join(zoo.missing())}: scripts/env.sh")
    import neoflow
    import neoflow.backend
    import torch

    rows = [bench_model(torch, neoflow, name, args.repeat) for name in args.models]
    result = {
        "date": datetime.date.today().isoformat(),
        "machine": wl.machine_info(torch, neoflow),
        "settings": vars(args),
        "rows": rows,
        "geomean": {v: wl.geomean([r[f"{v}/eager"] for r in rows]) for v in VARIANTS[1:]},
    }
    name = f"layers-{result['date']}-{wl.machine_tag(result['machine'])}"
    path = wl.write_results(args.out, name, result, render_markdown(result))
    print(f"wrote {path}", file=sys.stderr)
    return result


if __name__ == "__main__":
    main()
