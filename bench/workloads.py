"""Training step time of every workload: PyTorch eager, torch.compile and neoflow side by side.

For each workload and batch size, in one process on the same data, times a
training step (zero_grad + forward + loss + backward + ``Adam.step()``) of

- ``eager``: the plain-PyTorch baseline module,
- ``compile``: ``torch.compile`` (default mode, inductor) of the baseline's loss
  function (the whole forward + loss; AOTAutograd compiles the backward),
- ``neoflow``: the neoflow module (same parameters as the baseline).

Step times are the median (and min–max) of ``--repeat`` steps after
``--warmup`` steps, taken in turns: once every variant has run its first
step (and neoflow's background picks landed) and its warm-up, each round
times one step of each variant, in an order rotating between rounds, so
that the machine's drift falls on all of them alike. The first steps are reported separately: ``compile_s`` is
torch.compile's first step (tracing and compiling forward and backward),
``build_s`` neoflow's first step (generating and compiling every kernel).
Both start cold: the run uses fresh, empty kernel caches (neoflow's and
inductor's) unless ``--warm-cache``. On machines with 4 cores or fewer,
inductor compiles in-process (``TORCHINDUCTOR_COMPILE_THREADS=1`` unless set)
so that its compile subprocesses do not steal the timed steps' cores. Then each neoflow op the workload uses is
timed alone, forward and forward+backward, next to the equivalent PyTorch
computation.

Writes ``workloads-DATE-TAG.json``, ``.md`` and ``.png`` (grouped bars) into
``--out``, with ``-tuned`` after TAG when ``--tune`` is given, so a tuned run
does not overwrite the untuned one of the same day. Not a test: speed is reported, not asserted.

    python bench/workloads.py [--size small|bench] [--batches 1 16 64] [--workloads milstm ...]
                              [--repeat 20] [--warmup 3] [--dtype float32] [--out bench/results] [--no-compile]
                              [--tune TRIALS] [--device cpu|cuda]

With ``--device cuda`` everything (models, data, the ops timed alone) runs on
the current GPU, the file names and the report name it, every timed call is
bracketed by ``torch.cuda.synchronize()``, and the report ends with the CUDA
backend's speed targets: capsule convolution forward against eager, and the
LSTM-variant cells forward+backward against eager.

With ``--tune``, every kernel the neoflow model's first step builds is tuned
first (``neoflow.tune_session``), its tuning time reported as ``tune_s``; the
records go to the run's tuning database. Each op timed alone is tuned the
same way first, since it may build kernels the model's step does not (the
gradients of its data inputs), so the per-operator timings use tuned kernels
too.
"""

from __future__ import annotations

import argparse
import copy
import datetime
import json
import math
import os
import platform
import re
import statistics
import sys
import time
from pathlib import Path

import results_index
from machine import cpu_model, scratch_dir, steady_heap

ROOT = Path(__file__).resolve().parent.parent
WORKLOADS = ("milstm", "scrnn", "sublstm", "lltm", "capsnet", "shufflenet")
CNN_LR = 0.01


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", default="bench", choices=["small", "bench"])
    ap.add_argument("--batches", type=int, nargs="+", help="batch sizes (default: 1 16 64)")
    ap.add_argument("--workloads", nargs="+", choices=WORKLOADS, default=list(WORKLOADS))
    ap.add_argument("--repeat", type=int, default=20, help="timed steps per variant")
    ap.add_argument("--warmup", type=int, default=3, help="untimed steps after the first one")
    ap.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    ap.add_argument("--out", default=str(ROOT / "bench" / "results"), help="output directory")
    ap.add_argument("--no-compile", action="store_true", help="skip torch.compile (faster; for smoke tests)")
    ap.add_argument("--no-ops", action="store_true", help="skip the per-operator benchmarks")
    ap.add_argument(
        "--tune",
        type=int,
        default=0,
        metavar="TRIALS",
        help="before timing neoflow, tune every kernel of its first step with this many trials each (0: no tuning)",
    )
    ap.add_argument("--warm-cache", action="store_true", help="keep the usual kernel caches (build times then vary)")
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"], help="where models and data live")
    args = ap.parse_args(argv)
    if args.repeat < 1 or args.warmup < 0:
        ap.error("--repeat must be >= 1 and --warmup >= 0")
    return args


def cold_caches() -> None:
    """Point neoflow's and inductor's on-disk caches at fresh directories (before either is used)."""
    tmp = scratch_dir("neoflow-bench-")
    os.environ["NEOFLOW_CACHE_DIR"] = os.path.join(tmp, "neoflow")
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(tmp, "inductor")


def untuned_process(heap: str) -> None:
    """The set-up of a benchmark process that compiles whole models: glibc keeping its freed memory when heap
    is "steady" (machine.steady_heap), fresh compile caches (cold_caches), neoflow untuned (NEOFLOW_TUNE=off)."""
    if heap == "steady":
        steady_heap()
    cold_caches()
    os.environ["NEOFLOW_TUNE"] = "off"


# ---------------------------------------------------------------- machine


def machine_info(torch, neoflow, device: str = "cpu") -> dict:
    gpu = torch.cuda.get_device_name() if torch.cuda.is_available() else None
    return {
        "cpu": cpu_model(),
        "cpu_count": os.cpu_count(),
        "threads": torch.get_num_threads(),
        "torch": torch.__version__,
        "neoflow": neoflow.__version__,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "gpu": gpu,
        "cuda": torch.version.cuda,
        "device": device,
    }


def machine_tag(info: dict) -> str:
    """ "cpu" for a CPU run (even where a GPU is), the GPU's name for a CUDA run."""
    if info["device"] == "cuda":
        return re.sub(r"[^a-z0-9]+", "-", info["gpu"].lower()).strip("-")
    return "cpu"


# ---------------------------------------------------------------- timing


SYNC = None  # torch.cuda.synchronize in a CUDA run: timed calls wait for the GPU


def timed(fn) -> float:
    if SYNC:
        SYNC()
    t0 = time.perf_counter()
    fn()
    if SYNC:
        SYNC()
    return time.perf_counter() - t0


def stats(times: list[float]) -> dict:
    return {"median_ms": statistics.median(times) * 1e3, "min_ms": min(times) * 1e3, "max_ms": max(times) * 1e3}


def prepare(fn, warmup: int, settle=None) -> dict:
    """First call on its own, then ``settle()`` if given (its seconds as ``settle_s``), then ``warmup``
    untimed calls."""
    first = timed(fn)
    settled = timed(settle) if settle else 0.0
    for _ in range(warmup):
        fn()
    return {"first_s": first, "settle_s": settled}


def interleaved(fns: dict, repeat: int, block: int = 1, untimed: int = 0) -> dict:
    """``repeat`` timed calls of each function, in blocks of ``block`` per function and round, each block after
    ``untimed`` calls that are not timed, the order rotating between rounds; name -> stats.
    The machines this runs on drift by a third within minutes: timed in turns, every variant sees the same drift,
    where timed one after another a slow minute fell on one of them. Where the functions are whole training
    steps of different models, a step right after another model's pays for it (ShuffleNet's inductor step
    22.8 ms after a neoflow step, 17.6 after its own): blocks whose first calls are not timed absorb that."""
    names = list(fns)
    times = {k: [] for k in names}
    for r in range(-(-repeat // block)):
        for k in names[r % len(names) :] + names[: r % len(names)]:
            for _ in range(untimed):
                fns[k]()
            times[k] += [timed(fns[k]) for _ in range(min(block, repeat - len(times[k])))]
    return {k: stats(v) for k, v in times.items()}


def measure(fn, repeat: int, warmup: int, settle=None) -> dict:
    """First call on its own, then ``settle()`` if given (its seconds as ``settle_s``), then ``warmup``
    untimed calls, then the median of ``repeat`` timed calls."""
    prepared = prepare(fn, warmup, settle)
    return stats([timed(fn) for _ in range(repeat)]) | prepared


def neoflow_settle():
    """Waits for the schedules neoflow picks in the background after a first build (the default mode;
    nothing to wait for when tuned), so that the timed calls run the kernels a training run settles on."""
    import neoflow

    neoflow.wait_background(timeout=120)


# ---------------------------------------------------------------- workloads


def setup(name, size, batch, dtype, torch, device="cpu"):
    """(baseline, neoflow_model, loss(model), lr, op_cases) for one workload at one batch size, on device."""
    sys.path.insert(0, str(ROOT))
    from workloads import capsnet, config, rnn, shufflenet

    if name in config.RNN_WORKLOADS:
        cfg = (config.SMALL if size == "small" else config.BENCH)[name].with_batch(batch)
        base, nf = (m.to(device) for m in rnn.make_models(name, cfg, dtype=dtype, seed=0))
        xs, targets = (t.to(device) for t in rnn.make_data(cfg, seed=0, dtype=dtype))

        def loss(model):
            return torch.nn.functional.mse_loss(model(xs), targets)

        return base, nf, loss, cfg.lr, lambda: rnn.op_cases(name, cfg, dtype=dtype, seed=0, device=device)
    mod, base_cls, nf_cls = {
        "capsnet": (capsnet, capsnet.CapsNetTorch, capsnet.CapsNetNeoflow),
        "shufflenet": (shufflenet, shufflenet.ShuffleUnitTorch, shufflenet.ShuffleUnitNeoflow),
    }[name]
    cfg = dict(mod.CONFIG[size], batch=batch)
    base = base_cls(cfg, dtype=dtype, seed=0)
    nf = nf_cls(cfg, dtype=dtype, seed=0)
    nf.load_state_dict(base.state_dict())
    base.to(device).train()
    nf.to(device).train()
    x, labels = (t.to(device) for t in mod.synthetic_data(cfg, dtype=dtype, seed=0))

    def loss(model):
        return model.loss(x, labels)[0]

    return base, nf, loss, CNN_LR, lambda: mod.op_cases(cfg, dtype=dtype, seed=0, device=device)


def train_step(torch, model, loss_fn, lr):
    """A closure running one training step of ``model``; ``loss_fn()`` is the forward pass."""
    opt = torch.optim.Adam(model.parameters(), lr=lr)

    def step():
        opt.zero_grad(set_to_none=True)
        loss_fn().backward()
        opt.step()

    return step


def tuned_rows(report) -> list[dict]:
    """The JSON rows of a tuning report: each kernel's default and tuned times."""
    return [{"kernel": r.kernel, "default_ms": r.default_ms, "tuned_ms": r.best_ms, "trials": r.trials} for r in report]


def bench_steps(torch, name, size, batch, dtype, args) -> dict:
    base, nf, loss, lr, _ = setup(name, size, batch, dtype, torch, args.device)
    variants = {
        "eager": train_step(torch, base, lambda: loss(base), lr),
        "neoflow": train_step(torch, nf, lambda: loss(nf), lr),
    }
    if not args.no_compile:
        comp = copy.deepcopy(base)
        variants["compile"] = None  # built after eager and neoflow are timed
    row = {"workload": name, "batch": batch}
    for key, step in variants.items():
        if key == "compile":
            torch._dynamo.reset()
            step = variants[key] = train_step(torch, comp, torch.compile(lambda: loss(comp)), lr)
        if key == "neoflow" and args.tune:
            import neoflow

            t0 = time.perf_counter()
            with neoflow.tune_session(trials=args.tune, progress=False) as report:
                step()
            row["tune_s"] = time.perf_counter() - t0
            row["tuned_kernels"] = tuned_rows(report)
            print(f"  {name} batch {batch}: tuned {len(report)} kernels in {row['tune_s']:.0f} s", file=sys.stderr)
        m = prepare(step, args.warmup, neoflow_settle if key == "neoflow" else None)
        if key == "compile":
            row["compile_s"] = m["first_s"]
        elif key == "neoflow":
            row["build_s"], row["pick_s"] = m["first_s"], m["settle_s"]
        else:
            row["eager_first_s"] = m["first_s"]
    for key, m in interleaved(variants, args.repeat).items():
        row[key] = m
        print(
            f"  {name} batch {batch} {key}: {m['median_ms']:.3f} ms ({m['min_ms']:.3f}–{m['max_ms']:.3f})",
            file=sys.stderr,
            flush=True,
        )
    nf_ms = row["neoflow"]["median_ms"]
    row["speedup_vs_eager"] = row["eager"]["median_ms"] / nf_ms
    row["speedup_vs_compile"] = row["compile"]["median_ms"] / nf_ms if "compile" in row else None
    return row


def as_tuple(out):
    return out if isinstance(out, (tuple, list)) else (out,)


def forward_only(torch, fn, inputs, grads, leaves):
    def run():
        with torch.no_grad():
            fn(*inputs)

    return run


def forward_backward(torch, fn, inputs, grads, leaves):
    """One forward and backward pass for fixed output gradients; clears the gradients it made."""

    def run():
        torch.autograd.backward(as_tuple(fn(*inputs)), grads)
        for t in leaves:
            t.grad = None

    return run


def bench_ops(torch, name, size, batch, dtype, args) -> list[dict]:
    """Forward and forward+backward time of each neoflow op of the workload next to its PyTorch equivalent."""
    _, _, _, _, op_cases = setup(name, size, batch, dtype, torch, args.device)
    rows = []
    for op_name, nf_fn, torch_fn, inputs, params in op_cases():
        leaves = list(inputs) + list(params)

        with torch.no_grad():
            want = as_tuple(torch_fn(*inputs))
        grads = [torch.randn_like(t) for t in want]

        row = {"workload": name, "batch": batch, "op": op_name}
        if args.tune:
            # The op alone computes gradients the model's step may not ask
            # for (its data inputs'), so its gradient kernel is another
            # kernel: tune what this op's forward and backward build.
            import neoflow

            with neoflow.tune_session(trials=args.tune, progress=False) as report:
                forward_backward(torch, nf_fn, inputs, grads, leaves)()
            row["tuned_kernels"] = tuned_rows(report)
        for kind, wrap in (("forward", forward_only), ("fwd_bwd", forward_backward)):
            for impl, fn in (("neoflow", nf_fn), ("torch", torch_fn)):
                settle = neoflow_settle if impl == "neoflow" else None
                m = measure(wrap(torch, fn, inputs, grads, leaves), args.repeat, args.warmup, settle)
                row[f"{kind}_{impl}"] = {k: m[k] for k in ("median_ms", "min_ms", "max_ms")}
        # backward time = (forward + backward) - forward, medians
        for impl in ("neoflow", "torch"):
            row[f"backward_{impl}_ms"] = max(
                row[f"fwd_bwd_{impl}"]["median_ms"] - row[f"forward_{impl}"]["median_ms"], 0.0
            )
        row["forward_ratio"] = row["forward_neoflow"]["median_ms"] / row["forward_torch"]["median_ms"]
        row["backward_ratio"] = row["backward_neoflow_ms"] / max(row["backward_torch_ms"], 1e-9)
        with torch.no_grad():
            got = as_tuple(nf_fn(*inputs))
        tol = 1e-3 if dtype == torch.float32 else 1e-8
        row["matches"] = all(torch.allclose(g, w, rtol=tol, atol=tol) for g, w in zip(got, want))
        print(
            f"  {name} batch {batch} op {op_name}: forward {row['forward_neoflow']['median_ms']:.3f} vs "
            f"{row['forward_torch']['median_ms']:.3f} ms, fwd+bwd {row['fwd_bwd_neoflow']['median_ms']:.3f} vs "
            f"{row['fwd_bwd_torch']['median_ms']:.3f} ms",
            file=sys.stderr,
            flush=True,
        )
        rows.append(row)
    return rows


# ---------------------------------------------------------------- output


def geomean(xs) -> float | None:
    xs = [x for x in xs if x]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def spread(d: dict) -> str:
    return f"{d['median_ms']:.3f} ({d['min_ms']:.3f}–{d['max_ms']:.3f})"


def render_markdown(result: dict) -> str:
    m, s = result["machine"], result["settings"]
    has_compile = any("compile" in r for r in result["steps"])
    lines = [
        f"# Workload benchmark, {result['date']}",
        "",
        f"Machine: {m['cpu']}, {m['threads']} threads, torch {m['torch']}, neoflow {m['neoflow']}"
        + (
            f"; everything on the GPU, {m['gpu']} (CUDA {m.get('cuda')})"
            if m.get("device") == "cuda"
            else f"; everything on the CPU{' (a ' + m['gpu'] + ' idle)' if m['gpu'] else ''}"
        ),
        "",
        f"Settings: size `{s['size']}`, batches {s['batches']}, {s['dtype']}, median of {s['repeat']} steps "
        f"after {s['warmup']} warm-up steps, timed in turns with the other variants; kernel caches "
        f"{'warm' if s['warm_cache'] else 'cold'}"
        + (
            f"; neoflow's kernels tuned first, {s['tune_trials']} trials each."
            if s.get("tune_trials")
            else "; neoflow's kernels untuned: default schedules, and where a kernel has enough work the faster "
            "per statement of those and register-tiled ones, picked in the background after the first step "
            "(the timed steps start once the picks landed; the column pick s is how long after the first step "
            "that was)."
        ),
        "",
        "## Training step (forward + backward + Adam step), ms: median (min–max)",
        "",
    ]
    head = ["workload", "batch", "eager", "compile", "neoflow", "neoflow vs eager", "neoflow vs compile"]
    head += ["compile time s", "neoflow build s", "eager first s", "pick s"]
    tuned = any("tune_s" in r for r in result["steps"])
    if tuned:
        head.append("neoflow tuning s")
    if not has_compile:
        head = [h for h in head if "compile" not in h]
    lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in result["steps"]:
        cells = [r["workload"], str(r["batch"]), spread(r["eager"])]
        if has_compile:
            cells.append(spread(r["compile"]))
        cells += [spread(r["neoflow"]), f"{r['speedup_vs_eager']:.2f}x"]
        if has_compile:
            cells += [f"{r['speedup_vs_compile']:.2f}x", f"{r['compile_s']:.1f}"]
        cells += [f"{r['build_s']:.1f}", f"{r.get('eager_first_s', 0):.2f}", f"{r.get('pick_s', 0):.1f}"]
        if tuned:
            cells.append(f"{r.get('tune_s', 0):.0f}")
        lines.append("| " + " | ".join(cells) + " |")
    g = result["summary"]
    lines += [
        "",
        "Speedup = baseline step time / neoflow step time (above 1: neoflow is faster). Compile time and build "
        "time are the first step (tracing + compiling), not included in the step times.",
        "",
        f"Geometric mean speedup of neoflow vs eager across workloads: **{g['geomean_speedup_vs_eager']:.2f}x**"
        + (
            f"; vs torch.compile: **{g['geomean_speedup_vs_compile']:.2f}x**"
            if g.get("geomean_speedup_vs_compile")
            else ""
        ),
        "",
    ]
    if result["ops"]:
        lines += [
            "## Operators: neoflow vs the equivalent PyTorch computation, ms: median (min–max)",
            "",
            "| workload | batch | op | forward neoflow | forward torch | fwd+bwd neoflow | fwd+bwd torch "
            "| fwd ratio | bwd ratio | matches |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        for r in result["ops"]:
            lines.append(
                f"| {r['workload']} | {r['batch']} | {r['op']} | {spread(r['forward_neoflow'])} "
                f"| {spread(r['forward_torch'])} | {spread(r['fwd_bwd_neoflow'])} | {spread(r['fwd_bwd_torch'])} "
                f"| {r['forward_ratio']:.2f}x | {r['backward_ratio']:.2f}x | {'yes' if r['matches'] else 'NO'} |"
            )
        lines += [
            "",
            "Ratios are neoflow time / PyTorch time (above 1: neoflow is slower); backward = median fwd+bwd − "
            "median forward.",
            "",
        ]
    if m.get("device") == "cuda" and result["ops"]:
        lines += ["## CUDA backend targets (speedup = eager time / neoflow time, medians)", ""]
        lines += ["| target | op | batch | speedup | goal | met |", "|---|---|---|---|---|---|"]
        for t in targets(result["ops"]):
            lines.append(
                f"| {t['target']} | {t['op']} | {t['batch']} | {t['speedup']:.2f}x | {t['goal']:.0f}x "
                f"| {'yes' if t['met'] else 'no'} |"
            )
        lines += ["", "GEMM 4096³ against torch.matmul is measured by bench/gemm.py.", ""]
    return "\n".join(lines)


def targets(ops: list[dict]) -> list[dict]:
    """The CUDA backend's speed targets, per op row: capsule convolution forward at least 3x eager, the
    LSTM-variant cells forward+backward at least 2x eager."""
    out = []
    for r in ops:
        if r["op"].startswith("capsule_conv"):
            target, goal, key = "capsule conv forward", 3.0, "forward"
        elif r["op"].endswith("_cell"):
            target, goal, key = "LSTM-variant cell fwd+bwd", 2.0, "fwd_bwd"
        else:
            continue
        speedup = r[f"{key}_torch"]["median_ms"] / r[f"{key}_neoflow"]["median_ms"]
        row = {"target": target, "op": r["op"], "batch": r["batch"], "speedup": speedup, "goal": goal}
        out.append(row | {"met": speedup >= goal})
    return out


def write_results(out, name: str, result: dict, md: str, chart=None) -> Path:
    """Writes ``<out>/<name>.json`` (result) and ``.md`` (md), and ``.png`` by ``chart(path)`` when given and
    matplotlib is installed; returns the files' common stem. Written into bench/results, the run replaces the
    older runs of its benchmark and machine there, and INDEX.md is rewritten (bench/results_index.py)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    stem = out / name
    stem.with_suffix(".json").write_text(json.dumps(result, indent=2) + "\n")
    stem.with_suffix(".md").write_text(md)
    if chart is not None and chart_libraries():
        chart(stem.with_suffix(".png"))
    if out.resolve() == results_index.RESULTS.resolve():  # the archive: this run supersedes the older ones
        results_index.refresh(out, prune=True)
    return stem


def chart_libraries() -> bool:
    """Whether matplotlib, which draws the chart, is installed (pip install .[bench])."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def bar_chart(rows, variants, labels, ylabel: str, title: str, path: Path, tick_style=None) -> None:
    """Grouped bars, log scale: one group per row, one bar per variant present (its median, with
    min-max error bars from row[variant]); bench/fusion.py draws with it too."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    variants = [v for v in variants if any(v in r for r in rows)]
    width = 0.8 / len(variants)
    fig, ax = plt.subplots(figsize=(max(6, 0.9 * len(rows) + 2), 4.5))
    for i, v in enumerate(variants):
        xs = [j + (i - (len(variants) - 1) / 2) * width for j in range(len(rows))]
        med = [r[v]["median_ms"] for r in rows]
        err = [[r[v]["median_ms"] - r[v]["min_ms"] for r in rows], [r[v]["max_ms"] - r[v]["median_ms"] for r in rows]]
        ax.bar(xs, med, width, yerr=err, capsize=2, label=v)
    ax.set_xticks(range(len(rows)))
    ax.set_xticklabels(labels, **(tick_style or {"fontsize": 8}))
    ax.set_yscale("log")
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=9)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def render_chart(result: dict, path: Path) -> None:
    rows = result["steps"]
    m = result["machine"]
    where = m["gpu"] if m.get("device") == "cuda" else m["cpu"]
    bar_chart(
        rows,
        ("eager", "compile", "neoflow"),
        [f"{r['workload']}\nb={r['batch']}" for r in rows],
        "training step, ms (log scale)",
        f"{result['settings']['size']} workloads, {result['settings']['dtype']}, {where}",
        path,
    )


# ---------------------------------------------------------------- main


def main(argv=None) -> dict:
    args = parse_args(argv)
    chart = chart_libraries()
    if not chart:
        print(
            "workloads.py: matplotlib is not installed, so the chart (.png) is skipped; the JSON and markdown "
            "results are written. Install the bench extra for it: pip install '.[bench]' (or neoflow[bench])",
            file=sys.stderr,
        )
    if not args.warm_cache:
        cold_caches()
    if (os.cpu_count() or 1) <= 4:
        # inductor's pool of compile subprocesses would compete with the timed steps for the few cores
        os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")
    import neoflow
    import torch

    sys.path.insert(0, str(ROOT))
    from workloads import config

    global SYNC
    if args.device == "cuda":
        if not torch.cuda.is_available():
            sys.exit("workloads.py: --device cuda, but torch.cuda.is_available() is False")
        SYNC = torch.cuda.synchronize
    dtype = getattr(torch, args.dtype)
    batches = args.batches or list(config.BENCH_BATCHES)
    info = machine_info(torch, neoflow, args.device)
    where = f"GPU {info['gpu']}" if args.device == "cuda" else f"{info['threads']} threads"
    print(f"machine: {info['cpu']}, {where}, torch {info['torch']}", file=sys.stderr)
    torch.manual_seed(0)
    t0 = time.perf_counter()
    steps, ops = [], []
    for name in args.workloads:
        for batch in batches:
            steps.append(bench_steps(torch, name, args.size, batch, dtype, args))
            if not args.no_ops:
                ops.extend(bench_ops(torch, name, args.size, batch, dtype, args))
    date = datetime.date.today().isoformat()
    result = {
        "date": date,
        "machine": info,
        "settings": {
            "size": args.size,
            "batches": batches,
            "workloads": args.workloads,
            "repeat": args.repeat,
            "warmup": args.warmup,
            "dtype": args.dtype,
            "compile": not args.no_compile,
            "warm_cache": args.warm_cache,
            "tune_trials": args.tune,
            "optimizer": "Adam",
            "device": args.device,
        },
        "steps": steps,
        "ops": ops,
        "summary": {
            "geomean_speedup_vs_eager": geomean(r["speedup_vs_eager"] for r in steps),
            "geomean_speedup_vs_compile": geomean(r["speedup_vs_compile"] for r in steps),
            "total_s": time.perf_counter() - t0,
        },
    }
    if args.device == "cuda":
        result["targets"] = targets(ops)
    name = f"workloads-{date}-{machine_tag(info)}{'-tuned' if args.tune else ''}"
    md = render_markdown(result)
    stem = write_results(args.out, name, result, md, (lambda p: render_chart(result, p)) if chart else None)
    print(md)
    written = ".json, .md, .png" if chart else ".json, .md"
    print(f"wrote {stem}{written} in {result['summary']['total_s']:.0f} s", file=sys.stderr)
    return result


if __name__ == "__main__":
    main()
