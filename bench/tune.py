"""Tuned neoflow kernels next to PyTorch: GEMM throughput, memory bandwidth,
and forward+backward of the ops the tuner targets.

In one process, with a fresh cache (cold tuning database):

1. float32 GEMM 1024x1024x1024: torch.matmul, neoflow with the default
   schedule (``NEOFLOW_TUNE=off``), neoflow untuned in the default mode
   (the schedule picked in the background between the default and the
   register-tiled one, once it landed), neoflow after ``neoflow.tune``;
   GFLOP/s and the ratios.
2. Memory-bound ops against the machine's copy bandwidth (``dst.copy_(src)``
   on preallocated 64 MiB tensors): elementwise and broadcast ops, timed as
   kernel launches on preallocated buffers (bytes read + written / time)
   and as whole calls (allocation included).
3. Forward+backward of capsule conv, depthwise conv and the MI-LSTM gate at
   the benchmark sizes of tests/python/ops_table.py: eager, neoflow
   default, neoflow tuned (forward and gradient kernels tuned).

With ``--heap steady`` glibc's malloc is told (mallopt) to keep freed
memory instead of returning it to the system: large tensors then no longer
come back as fresh pages that fault on first touch. Under the default
policy both eager and neoflow pay those faults on some calls and not on
others, depending on the heap's history, so the same eager op runs 3.5 ms
or 9.5 ms; run both modes to see either side. neoflow's outputs come from
its cache of freed blocks (neoflow.memory) under either policy; the
forward+backward table gives each side's page faults per call.

Not a test: speed is reported, not asserted.

    python bench/tune.py [--trials 48] [--repeat 20] [--heap default|steady] [--out bench/results/tune-DATE-cpu] > ...md
"""

from __future__ import annotations

import argparse
import datetime
import json
import resource
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "python"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import neoflow  # noqa: E402
from machine import cpu_model, scratch_dir, steady_heap  # noqa: E402
from neoflow import _lib  # noqa: E402
from ops import fwd_bwd, timeit  # noqa: E402
from ops_table import BENCH_CASES  # noqa: E402


def alternate(fns, repeat: int, warmup: int = 3):
    """(median, min, max) seconds per call of each function, timed in turns,
    and the page faults per call (minor faults of this process).

    Each round calls every function once, in an order that rotates from
    round to round, so that the machine's drift (this one is shared and
    noisy) falls on all of them alike; a ratio of two of these is far
    steadier than a ratio of two separate timeit runs.
    """
    for fn in fns:
        for _ in range(warmup):
            fn()
    times = [[] for _ in fns]
    faults = [0] * len(fns)
    for r in range(repeat):
        for k in range(len(fns)):
            i = (r + k) % len(fns)
            f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
            t0 = time.perf_counter()
            fns[i]()
            times[i].append(time.perf_counter() - t0)
            faults[i] += resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0
    return [(statistics.median(t), min(t), max(t), f / repeat) for t, f in zip(times, faults)]


def ms(t) -> list[float]:
    """(median, min, max) in milliseconds, of a timeit or alternate result
    (alternate's fourth entry, faults per call, is not a time)."""
    return [v * 1e3 for v in t[:3]]


def spread(t) -> str:
    return f"{t[0] * 1e3:.3f} ({t[1] * 1e3:.3f}–{t[2] * 1e3:.3f})"


def launcher(op, tensors):
    """A function running op's kernel on preallocated buffers: the kernel alone."""
    kernel = op.specialize(*tensors)
    bufs = list(tensors) + [torch.empty(s, dtype=kernel.dtype) for s in kernel.allocated]
    pointers = kernel.pack(*[b.data_ptr() for b in bufs])
    n = torch.get_num_threads()
    return lambda: _lib.launch(kernel.kernel_id, pointers, n), bufs


def gemm(args, out):
    n = 1024
    a, b = torch.randn(n, n), torch.randn(n, n)
    op = neoflow.op("C[i,j] += A[i,k] * B[k,j]", name="gemm")
    flops = 2 * n**3
    t_torch = timeit(lambda: torch.matmul(a, b), args.repeat)
    neoflow.configure(tune="off")
    run, _ = launcher(op, [a, b])
    t_default = timeit(run, max(5, args.repeat // 4))
    neoflow.configure(tune="default")
    picked = neoflow.op("C[i,j] += A[i,k] * B[k,j]", name="gemm_picked")
    run, _ = launcher(picked, [a, b])
    t0 = time.perf_counter()
    neoflow.wait_background(timeout=120)
    pick_s = time.perf_counter() - t0
    t_torch_p, t_picked = alternate([lambda: torch.matmul(a, b), run], args.repeat)
    t0 = time.perf_counter()
    report = neoflow.tune(op, a, b, trials=args.trials, backward=False)
    tune_s = time.perf_counter() - t0
    run, bufs = launcher(op, [a, b])
    ok = torch.allclose((run(), bufs[2])[1], a @ b, rtol=1e-3, atol=1e-2)
    # again, in turns with the tuned kernel: the machine drifts
    t_torch2, t_tuned = alternate([lambda: torch.matmul(a, b), run], args.repeat)
    r = {
        "torch_ms": ms(t_torch),
        "torch_after_ms": ms(t_torch2),
        "default_ms": ms(t_default),
        "picked_ms": ms(t_picked),
        "torch_with_picked_ms": ms(t_torch_p),
        "picked_vs_torch": t_torch_p[0] / t_picked[0],
        "pick_seconds": pick_s,
        "tuned_ms": ms(t_tuned),
        "torch_gflops": flops / t_torch[0] / 1e9,
        "torch_after_gflops": flops / t_torch2[0] / 1e9,
        "default_gflops": flops / t_default[0] / 1e9,
        "tuned_gflops": flops / t_tuned[0] / 1e9,
        "tuned_vs_torch": t_torch[0] / t_tuned[0],
        "tuned_vs_torch_after": t_torch2[0] / t_tuned[0],
        "tune_seconds": tune_s,
        "trials": report[0].trials if report else 0,
        "matches": bool(ok),
    }
    out["gemm"] = r
    print("## float32 GEMM 1024x1024x1024\n")
    print("| variant | ms (min–max) | GFLOP/s |\n|---|---|---|")
    print(f"| torch.matmul | {spread(t_torch)} | {r['torch_gflops']:.1f} |")
    print(f"| torch.matmul (again, in turns with tuned) | {spread(t_torch2)} | {r['torch_after_gflops']:.1f} |")
    print(f"| neoflow default schedule | {spread(t_default)} | {r['default_gflops']:.1f} |")
    print(f"| torch.matmul (in turns with untuned) | {spread(t_torch_p)} | {flops / t_torch_p[0] / 1e9:.1f} |")
    print(f"| neoflow untuned (picked, {pick_s:.1f} s) | {spread(t_picked)} | {flops / t_picked[0] / 1e9:.1f} |")
    print(f"| neoflow tuned ({r['trials']} trials, {tune_s:.0f} s) | {spread(t_tuned)} | {r['tuned_gflops']:.1f} |")
    print(
        f"\nuntuned / torch.matmul throughput: {r['picked_vs_torch']:.2f}; "
        f"tuned / torch.matmul throughput: {r['tuned_vs_torch']:.2f} "
        f"({r['tuned_vs_torch_after']:.2f} against torch timed in turns with it); matches: {ok}\n",
        flush=True,
    )


def bandwidth(args, out):
    rows, cols = 4096, 4096  # 64 MiB of float32
    x, y = torch.randn(rows, cols), torch.randn(rows, cols)
    bias = torch.randn(cols)
    dst = torch.empty_like(x)
    nbytes = x.numel() * 4
    cases = [
        ("scale_shift", "Y[i,j] = X[i,j] * 2.0 + 1.0", [x], 2, lambda: x * 2.0 + 1.0),
        ("add", "Z[i,j] = X[i,j] + Y[i,j]", [x, y], 3, lambda: x + y),
        ("broadcast_add", "Y[i,j] = X[i,j] + B[j]", [x, bias], 2, lambda: x + bias),
        ("sigmoid", "Y[i,j] = sigmoid(X[i,j])", [x], 2, lambda: torch.sigmoid(x)),
    ]
    res = {"ops": []}
    print(
        "## Memory-bound ops (4096x4096 float32)\n\n"
        "Each kernel is timed in turns with the copy `dst.copy_(src)` of the same 64 MiB, whose bandwidth\n"
        "(bytes read + written / time) is the reference.\n"
    )
    print(
        "| op | kernel ms (min–max) | GB/s | copy GB/s | of copy | call ms | torch call ms |\n"
        "|---|---|---|---|---|---|---|"
    )
    for name, src, ins, streams, ref in cases:
        op = neoflow.op(src, name=name)
        neoflow.tune(op, *ins, trials=max(8, args.trials // 3), backward=False, progress=False)
        run, bufs = launcher(op, ins)
        run()
        ok = torch.allclose(bufs[-1], ref(), rtol=1e-5, atol=1e-5)
        t_copy, t_k = alternate([lambda: dst.copy_(x), run], args.repeat)
        t_call, t_ref = alternate([lambda op=op, ins=ins: op(*ins), ref], args.repeat)
        gbps = streams * nbytes / t_k[0] / 1e9
        copy_bw = 2 * nbytes / t_copy[0] / 1e9
        row = {
            "op": name,
            "kernel_ms": ms(t_k),
            "copy_ms": ms(t_copy),
            "gbps": gbps,
            "copy_gbps": copy_bw,
            "of_copy": gbps / copy_bw,
            "call_ms": ms(t_call),
            "torch_ms": ms(t_ref),
            "matches": bool(ok),
        }
        res["ops"].append(row)
        print(
            f"| {name} | {spread(t_k)} | {gbps:.1f} | {copy_bw:.1f} | {gbps / copy_bw:.0%} | {t_call[0] * 1e3:.3f} "
            f"| {t_ref[0] * 1e3:.3f} |",
            flush=True,
        )
    out["bandwidth"] = res
    print()


def training_ops(args, out):
    res = []
    print("## Forward+backward, bench sizes, float32\n")
    print(
        "Eager is timed in turns with neoflow default, then again in turns with neoflow tuned; the speedup is\n"
        "over the second.\n"
    )
    print(
        "| op | eager ms | neoflow default ms | neoflow tuned ms | tuned speedup over eager "
        "| page faults per call: eager / tuned |"
    )
    print("|---|---|---|---|---|---|")
    for case in BENCH_CASES:
        if case.name not in ("capsule_conv", "depthwise_conv", "milstm_gate"):
            continue
        tensors = case.inputs("bench", torch.float32)
        op = case.op(tensors)
        leaves = [t.detach().clone().requires_grad_(True) for t in tensors]
        grad_out = torch.randn_like(case.reference(*tensors))

        def nf(*t, op=op):
            return op(*t)

        fwd_bwd(nf, leaves, grad_out)
        t_eager, t_default = alternate(
            [
                lambda f=case.reference, t=leaves, g=grad_out: fwd_bwd(f, t, g),
                lambda f=nf, t=leaves, g=grad_out: fwd_bwd(f, t, g),
            ],
            args.repeat,
        )
        t0 = time.perf_counter()
        report = neoflow.tune(op, *tensors, trials=args.trials)
        tune_s = time.perf_counter() - t0
        torch.autograd.backward(nf(*leaves), grad_out)  # fwd_bwd would clear the gradients
        grads = [t.grad for t in leaves]
        # Both float32 results against a float64 reference: neoflow's error
        # must be within twice eager's (float32 sums of 1024 terms differ
        # from each other by more than a fixed tolerance).
        ref_leaves = [t.detach().clone().requires_grad_(True) for t in tensors]
        torch.autograd.backward(case.reference(*ref_leaves), grad_out)
        exact = [t.detach().double().requires_grad_(True) for t in tensors]
        torch.autograd.backward(case.reference(*exact), grad_out.double())
        nf_err = max((g.double() - x.grad).abs().max().item() for g, x in zip(grads, exact))
        eager_err = max((r.grad.double() - x.grad).abs().max().item() for r, x in zip(ref_leaves, exact))
        scale = max(x.grad.abs().max().item() for x in exact)
        ok = nf_err <= 2 * eager_err + 1e-6 * scale
        for t in leaves:
            t.grad = None
        t_eager2, t_tuned = alternate(
            [
                lambda f=case.reference, t=leaves, g=grad_out: fwd_bwd(f, t, g),
                lambda f=nf, t=leaves, g=grad_out: fwd_bwd(f, t, g),
            ],
            args.repeat,
        )
        row = {
            "op": case.name,
            "eager_ms": ms(t_eager),
            "eager_after_ms": ms(t_eager2),
            "default_ms": ms(t_default),
            "tuned_ms": ms(t_tuned),
            "faults_per_call": {"eager": t_eager2[3], "default": t_default[3], "tuned": t_tuned[3]},
            "speedup_vs_eager": t_eager[0] / t_tuned[0],
            "speedup_vs_eager_after": t_eager2[0] / t_tuned[0],
            "tune_seconds": tune_s,
            "kernels": [
                {"kernel": k.kernel, "default_ms": k.default_ms, "tuned_ms": k.best_ms, "trials": k.trials}
                for k in report
            ],
            "gradients_match": bool(ok),
            "gradient_error_vs_float64": {"neoflow": nf_err, "eager": eager_err, "scale": scale},
        }
        res.append(row)
        print(
            f"| {case.name} | {spread(t_eager2)} | {spread(t_default)} | {spread(t_tuned)} "
            f"| {row['speedup_vs_eager_after']:.2f}x ({row['speedup_vs_eager']:.2f}x vs the first eager) "
            f"| {t_eager2[3]:.0f} / {t_tuned[3]:.0f} |",
            flush=True,
        )
    out["training_ops"] = res
    print()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=48, help="tuning trials per kernel")
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--only", nargs="*", choices=["gemm", "bandwidth", "training"], help="sections to run")
    ap.add_argument("--heap", choices=["default", "steady"], default="default", help="glibc malloc policy (see above)")
    ap.add_argument("--out", help="also write the results to <out>.json")
    args = ap.parse_args()
    if args.heap == "steady":
        steady_heap()
    torch.manual_seed(0)
    cache = scratch_dir("neoflow-bench-tune-")
    neoflow.configure(cache_dir=cache)
    header = (
        f"machine: {cpu_model()}, torch {torch.__version__}, {torch.get_num_threads()} threads; "
        f"median of {args.repeat} runs after 3 warm-ups (min–max); {args.heap} heap; cold cache {cache}"
    )
    print(header + "\n")
    out = {"machine": cpu_model(), "torch": torch.__version__, "threads": torch.get_num_threads()}
    out["trials"] = args.trials
    out["heap"] = args.heap
    sections = args.only or ["gemm", "bandwidth", "training"]
    if "gemm" in sections:
        gemm(args, out)
    if "bandwidth" in sections:
        bandwidth(args, out)
    if "training" in sections:
        training_ops(args, out)
    if args.out:
        Path(args.out + ".json").write_text(json.dumps(out, indent=1))
        print(f"wrote {args.out}.json ({datetime.date.today()})")


if __name__ == "__main__":
    main()
