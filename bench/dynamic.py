"""Dynamic mode: training under NEOFLOW_TUNE=background, step time against wall-clock time.

For each workload (bench size, batch 16, float32 by default), in one process:
the eager baseline's and ``torch.compile``'s step times (median of
``--repeat`` steps after warm-up) as reference lines, then the neoflow model
trained from a cold kernel cache and an empty tuning database with
``configure(tune="background")`` for ``--seconds`` of wall-clock time, every
step's time recorded against the time since its first step began (the first
step included: it builds every kernel with default schedules), with the
background tuner's progress sampled along the way. Every ``--eager-every``
seconds (by default so that they take about 4% of the run, at least every
2 s: eager_every) the run also times 5 steps of the eager baseline (not counted as
neoflow's), so that neoflow is compared with eager under the same load: on a
shared machine eager's own step time drifts by a third within minutes, more
than the differences measured. Those eager steps start from the neoflow
model's weights of that moment (its state_dict, loaded into the baseline),
so that both are timed at the same point of the training: the step time
depends on it. MI-LSTM's training at bench size diverges after about 250
steps, and its saturated activations then make every step about three times
slower, eager's as much as neoflow's (measured: eager alone, 160 ms a step
before, 450-510 ms after); an eager baseline trained only by its own few
interleaved steps stayed fast, which made neoflow look 3-4x slower.

The report gives the first step's time, the median step time in windows of
the run (neoflow's and the interleaved eager's), when the median of the last
5 s of steps first reached the median of the eager steps timed within 20 s of
it, the final median (neoflow's steps of the last 30 s) against the eager
steps of that time, the slowest step after the third against the final
median, the steps over 3x that median with their times, the time Python's
garbage collector took within each and the interleaved eager steps' median
within a second of each, and when the tuning ended (a step's cause shows
there: the tuner, Python, or the machine, whose slow spells slow eager's
steps as much), and the kernels tuned and swapped in. The warm eager and
torch.compile medians measured before the run are reference lines. Writes
``dynamic-DATE-cpu.json``, ``.md`` and ``.png`` into ``--out``. Not a test:
speed is reported, not asserted.

    python bench/dynamic.py [--workloads lltm milstm] [--seconds 150] [--repeat 20] [--eager-every SECONDS]
                            [--out bench/results]
"""

from __future__ import annotations

import argparse
import copy
import datetime
import gc
import os
import resource
import statistics
import sys
import time
from pathlib import Path

import workloads_module
from machine import scratch_dir

ROOT = Path(__file__).resolve().parent.parent


wl = workloads_module.load()


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workloads", nargs="+", choices=wl.WORKLOADS, default=["lltm", "milstm"])
    ap.add_argument("--size", default="bench", choices=["small", "bench"])
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--seconds", type=float, default=150.0, help="wall-clock time of each neoflow run")
    ap.add_argument("--repeat", type=int, default=20, help="timed steps of the eager and compile references")
    ap.add_argument(
        "--eager-every",
        type=float,
        default=None,
        help="seconds between the interleaved eager samples (default: per workload, eager_every)",
    )
    ap.add_argument("--no-compile", action="store_true")
    ap.add_argument(
        "--eager-alone",
        action="store_true",
        help="also train the eager baseline alone for --seconds after the neoflow run, as a control of the "
        "machine's own slow steps (eager_alone)",
    )
    ap.add_argument("--out", default=str(ROOT / "bench" / "results"))
    return ap.parse_args(argv)


def windows(points, eager_points=(), edges=(0, 10, 30, 60, 90, 120, 150, 180, 240, 300)) -> list[dict]:
    """Median step time (ms) of neoflow's steps, and of the interleaved eager steps, that began in each
    window [a, b) of seconds."""
    out = []
    for a, b in zip(edges, edges[1:]):
        ms = [s * 1e3 for t, s in points if a <= t < b]
        eager = [s * 1e3 for t, s in eager_points if a <= t < b]
        if ms:
            row = {"from_s": a, "to_s": b, "steps": len(ms), "median_ms": statistics.median(ms)}
            row["eager_ms"] = statistics.median(eager) if eager else None
            out.append(row)
    return out


def eager_near(eager_points, t: float, span: float, fallback: float) -> float:
    """Median (ms) of the interleaved eager steps timed within ``span`` seconds of t (fallback: none)."""
    near = [s * 1e3 for u, s in eager_points if abs(u - t) <= span]
    return statistics.median(near) if near else fallback


def caught_up(points, eager_points, eager_ms: float, width_s: float = 5.0) -> float | None:
    """Seconds until the median of the steps of the last ``width_s`` seconds first reached the median of the
    eager steps timed within 20 s of it (eager_ms where none were)."""
    lo = 0
    for i, (t, _) in enumerate(points):
        while points[lo][0] < t - width_s:
            lo += 1
        if t < width_s:
            continue
        if statistics.median(s for _, s in points[lo : i + 1]) * 1e3 <= eager_near(eager_points, t, 20, eager_ms):
            return t
    return None


def gc_recorder(start: float) -> tuple[list, object]:
    """A ``gc.callbacks`` callback that records Python's garbage-collector passes of over a millisecond, as
    (time since start, seconds, generation), and the list it records into: a slow step's cause shows there."""
    passes, began = [], [0.0]

    def record(phase, info):
        now = time.perf_counter()
        if phase == "start":
            began[0] = now
        elif now - began[0] > 1e-3:
            passes.append((began[0] - start, now - began[0], info["generation"]))

    return passes, record


def collected_during(passes: list, t: float, seconds: float) -> float:
    """Seconds of the garbage-collector passes that began within the step [t, t + seconds)."""
    return sum(d for at, d, _ in passes if t <= at < t + seconds)


def usage() -> tuple:
    """The process's CPU seconds (all its threads, user and system), involuntary context switches and minor
    page faults so far: a step's differences tell a slow step's kind. Both cores computing for the whole of a
    slow step, with no switch and no fault, is the machine running slower (another guest on the host, its
    clock), not waiting; a switch is the OS giving the core to another process; faults are memory mapped anew."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime, r.ru_nivcsw, r.ru_minflt


def measured(step, start: float) -> tuple:
    """Runs step once: its (time since start, seconds) and the differences of usage() across it."""
    u0, t0 = usage(), time.perf_counter()
    step()
    t1, u1 = time.perf_counter(), usage()
    return (t0 - start, t1 - t0), tuple(b - a for a, b in zip(u0, u1))


def slow_usage(points, spent, final: float) -> tuple:
    """Of the steps after the third, as (CPU ms, involuntary switches, page faults) from the per-step usage
    differences ``spent`` (aligned with points): the slowest step's, and those of the steps over 3x the final
    median (tail's, in order); (None, []) with 3 steps or fewer."""
    if len(points) <= 3:
        return None, []

    def of(i):
        return spent[i][0] * 1e3, spent[i][1], spent[i][2]

    later = range(3, len(points))
    return of(max(later, key=lambda i: points[i][1])), [of(i) for i in later if points[i][1] * 1e3 > 3 * final]


def eager_every(eager_ms: float, share: float = 0.04, least: float = 2.0) -> float:
    """Seconds between the interleaved samples of 5 eager steps of eager_ms each, so that they take about
    ``share`` of the run, and at least ``least``: every 2 s for LLTM's 15 ms steps, about every 19 s for
    MI-LSTM's 150 ms. A slow spell of a few seconds shows in eager's steps as well when it is the machine's."""
    return max(least, 5 * eager_ms / 1e3 / share)


def run_background(torch, neoflow, nf, loss, lr, seconds: float, eager_step, every: float, base) -> tuple:
    """Trains nf for ``seconds`` under background tuning: (time since start, step seconds) per step, samples
    (time, trials done, kernels swapped), the eager steps timed every ``every`` seconds
    (5 at a time, base starting from nf's weights) as (time since start, step seconds), and the
    garbage-collector passes of over a millisecond (gc_recorder), and each step's usage differences."""
    step = wl.train_step(torch, nf, lambda: loss(nf), lr)
    points, samples, eager_points, spent = [], [], [], []
    start = time.perf_counter()
    passes, record = gc_recorder(start)
    gc.callbacks.append(record)
    next_sample, next_eager = 0.0, every
    try:
        while True:
            point, used = measured(step, start)
            points.append(point)
            spent.append(used)
            now = sum(point)  # seconds since start, at the step's end
            if now >= next_sample:
                st = neoflow.background_status()
                samples.append((now, sum(k.trials for k in st), sum(k.swapped for k in st), len(st)))
                next_sample += 2.0
            if now >= next_eager:
                base.load_state_dict(nf.state_dict())
                for _ in range(5):
                    e0 = time.perf_counter()
                    eager_step()
                    eager_points.append((e0 - start, time.perf_counter() - e0))
                next_eager += every
            if now >= seconds:
                return points, samples, eager_points, passes, spent
    finally:
        gc.callbacks.remove(record)


def tail(points) -> tuple:
    """Of (time since start, step seconds) points: the final median (ms, the steps of the last 30 s), the
    slowest step after the third against it (None with 3 steps or fewer), and the steps after the third over
    3x it, (time, seconds) each."""
    end = points[-1][0]
    final = statistics.median(s for t, s in points if t >= end - 30) * 1e3
    worst = max(s for _, s in points[3:]) * 1e3 / final if len(points) > 3 else None
    return final, worst, [(t, s) for t, s in points[3:] if s * 1e3 > 3 * final]


def eager_alone(eager_step, seconds: float, points: list | None = None) -> dict:
    """The control: the eager baseline trained alone for ``seconds``, its steps measured as neoflow's are
    (tail): the slow steps the machine itself makes, with no neoflow kernel, compiler or tuner in the
    process's work. Its (time since start, seconds) points go into ``points`` when given (bench/jitter.py)."""
    points = [] if points is None else points
    spent = []
    start = time.perf_counter()
    while not points or points[-1][0] + points[-1][1] < seconds:
        point, used = measured(eager_step, start)
        points.append(point)
        spent.append(used)
    final, worst, slow = tail(points)
    worst_usage, slow_usages = slow_usage(points, spent, final)
    return {
        "steps": len(points),
        "final_ms": final,
        "worst_after_third_vs_final": worst,
        "worst_usage": worst_usage,
        "over_3x": [(t, s * 1e3) for t, s in slow],
        "over_3x_usage": slow_usages,
    }


def bench(torch, neoflow, name, args, tmp) -> dict:
    dtype = torch.float32
    base, nf, loss, lr, _ = wl.setup(name, args.size, args.batch, dtype, torch)
    row = {"workload": name, "batch": args.batch}
    eager_step = wl.train_step(torch, base, lambda: loss(base), lr)
    row["eager"] = wl.measure(eager_step, args.repeat, 3)
    if not args.no_compile:
        comp = copy.deepcopy(base)
        torch._dynamo.reset()
        row["compile"] = wl.measure(wl.train_step(torch, comp, torch.compile(lambda: loss(comp)), lr), args.repeat, 3)
    neoflow.configure(cache_dir=os.path.join(tmp, name), tune="background")
    earlier = len(neoflow.background_status())  # kernels of the workloads before this one
    every = args.eager_every or eager_every(row["eager"]["median_ms"])
    row["eager_every_s"] = every
    points, samples, eager_points, passes, spent = run_background(
        torch, neoflow, nf, loss, lr, args.seconds, eager_step, every, base
    )
    status = neoflow.background_status()[earlier:]
    end = points[-1][0]
    eager_ms = eager_near(eager_points, end, 30, row["eager"]["median_ms"])
    final, worst, slow = tail(points)  # final: the eager steps' window
    worst_usage, slow_usages = slow_usage(points, spent, final)
    row |= {
        "points": points,
        "samples": samples,
        "eager_points": eager_points,
        "first_step_s": points[0][1],
        "windows": windows(points, eager_points),
        "final_ms": final,
        "final_eager_ms": eager_ms,
        "final_vs_eager": eager_ms / final,
        "caught_eager_s": caught_up(points, eager_points, row["eager"]["median_ms"]),
        "worst_after_third_vs_final": worst,
        "worst_usage": worst_usage,
        "kernels": [
            {
                "kernel": k.kernel,
                "trials": k.trials,
                "default_ms": k.default_ms,
                "best_ms": k.best_ms,
                "swapped": k.swapped,
            }
            for k in status
        ],
        "tuning_done": all(k.done for k in status),
        # when the worker's trials stopped growing (the first sample with the final count), and the steps after
        # the third over 3x the final median, (time, ms) each: while tuning, or after it
        "tuning_end_s": next((t for t, n, _, _ in samples if n == samples[-1][1]), None) if samples else None,
        "over_3x": [(t, s * 1e3) for t, s in slow],
        # of those, the milliseconds Python's garbage collector took within each, and the median of the
        # interleaved eager steps within 1 s of each (None where none were): the machine's own slowness shows there
        "over_3x_gc_ms": [collected_during(passes, t, s) * 1e3 for t, s in slow],
        "over_3x_eager_ms": [eager_near(eager_points, t, 1.0, None) for t, s in slow],
        # and the process's CPU ms, involuntary context switches and page faults within each (usage)
        "over_3x_usage": slow_usages,
        "gc_passes": passes,
    }
    if args.eager_alone:
        row["eager_alone"] = eager_alone(eager_step, args.seconds)
    print(
        f"  {name}: first step {row['first_step_s']:.2f} s, final {final:.3f} ms, eager (last 30 s) {eager_ms:.3f} ms, "
        f"caught eager at {row['caught_eager_s']} s",
        file=sys.stderr,
        flush=True,
    )
    return row


def spent_text(u) -> str:
    """A slow step's usage (CPU ms of the process, involuntary switches, page faults) as words."""
    if u is None:
        return ""
    cpu, switches, faults = u
    return f" [CPU {cpu:.0f} ms, {switches} switches, {faults} faults]"


def render_markdown(result: dict) -> str:
    m, s = result["machine"], result["settings"]
    every = ", ".join(
        f"{r.get('eager_every_s', s.get('eager_every') or 10):.0f} s ({r['workload']})" for r in result["rows"]
    )
    lines = [
        f"# Dynamic mode (NEOFLOW_TUNE=background), {s['size']} size, batch {s['batch']}, float32 ({result['date']})",
        "",
        f"Machine: {m['cpu']}, {m['threads']} threads, torch {m['torch']}, neoflow {m['neoflow']}. Each neoflow run "
        f"starts from a cold kernel cache and an empty tuning database and trains for {s['seconds']:.0f} s; eager "
        "and torch.compile: median step of a warm run before it. During the run 5 eager steps are timed every "
        + every
        + ", starting from the neoflow model's weights of that moment: final vs "
        "eager compares neoflow's steps of the last 30 s with the "
        "eager steps of that time, and neoflow caught eager when the median of its last 5 s of steps reached "
        "the eager steps timed within 20 s.",
        "",
        "| workload | eager ms (warm, before) | compile ms | first step s | final ms | eager ms, last 30 s | "
        "final vs eager | caught eager at | worst step after the 3rd / final | kernels swapped |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in result["rows"]:
        comp = f"{r['compile']['median_ms']:.3f}" if "compile" in r else "-"
        caught = f"{r['caught_eager_s']:.0f} s" if r["caught_eager_s"] is not None else "not within the run"
        swapped = f"{sum(k['swapped'] for k in r['kernels'])} of {len(r['kernels'])}"
        worst = r["worst_after_third_vs_final"]
        worst = f"{worst:.1f}x" if worst is not None else "- (3 steps or fewer)"
        lines.append(
            f"| {r['workload']} | {r['eager']['median_ms']:.3f} | {comp} | {r['first_step_s']:.2f} | "
            f"{r['final_ms']:.3f} | {r.get('final_eager_ms', r['eager']['median_ms']):.3f} | "
            f"{r['final_vs_eager']:.2f}x | {caught} | {worst} | "
            f"{swapped} |"
        )
    lines += [
        "",
        "Steps after the third over 3x the final median (time since the start: ms; the milliseconds Python's "
        "garbage collector took within the step where over 1 ms; the interleaved eager steps' median within 1 s, "
        "against their final median, where any were; in brackets the process's CPU time within the step, its "
        "involuntary context switches and minor page faults: CPU about twice the step's time with no switch is "
        "both cores computing throughout, a machine running slower rather than a wait); when tuning ended:",
        "",
    ]
    for r in result["rows"]:
        over3 = r.get("over_3x", [])
        collected = r.get("over_3x_gc_ms") or [0.0] * len(over3)
        eager = r.get("over_3x_eager_ms") or [None] * len(over3)
        over = (
            ", ".join(
                f"{t:.1f} s: {ms:.1f}"
                + (f" (gc {g:.1f})" if g > 1 else "")
                + (f" (eager {e:.1f}, {e / r['final_eager_ms']:.1f}x its final)" if e is not None else "")
                + spent_text(u)
                for (t, ms), g, e, u in zip(over3, collected, eager, r.get("over_3x_usage") or [None] * len(over3))
            )
            or "none"
        )
        end = r.get("tuning_end_s")
        ended = f"tuning ended at about {end:.0f} s" if r["tuning_done"] and end is not None else "tuning not done"
        worst = f"; slowest step{spent_text(r['worst_usage'])}" if r.get("worst_usage") else ""
        lines.append(f"- {r['workload']}: {over} ({len(r['points'])} steps; {ended}{worst})")
    alone = [r for r in result["rows"] if "eager_alone" in r]
    if alone:
        lines += [
            "",
            f"Control: the eager baseline trained alone for {s['seconds']:.0f} s after the neoflow run, its steps "
            "measured as neoflow's (final median of the last 30 s; slowest step after the third against it; "
            "steps over 3x it, time since its start: ms):",
            "",
        ]
        for r in alone:
            a = r["eager_alone"]
            spent = a.get("over_3x_usage") or [None] * len(a["over_3x"])
            over = ", ".join(f"{t:.1f} s: {ms:.1f}{spent_text(u)}" for (t, ms), u in zip(a["over_3x"], spent)) or "none"
            worst = a["worst_after_third_vs_final"]
            lines.append(
                f"- {r['workload']}: final {a['final_ms']:.3f} ms, worst step after the 3rd "
                f"{worst:.1f}x it{spent_text(a.get('worst_usage'))} ({a['steps']} steps); over 3x: {over}"
            )
    lines += [
        "",
        "Median step time (ms) by window of the run (seconds since the first step began): neoflow (its steps), "
        "and the interleaved eager steps' median after the slash:",
        "",
    ]
    for r in result["rows"]:
        cells = ", ".join(
            f"{w['from_s']}-{w['to_s']} s: {w['median_ms']:.3f} ({w['steps']})"
            + (f" / {w['eager_ms']:.3f}" if w.get("eager_ms") else "")
            for w in r["windows"]
        )
        lines.append(f"- {r['workload']}: {cells}")
    return "\n".join(lines) + "\n"


def render_chart(result: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = result["rows"]
    fig, axes = plt.subplots(1, len(rows), figsize=(6 * len(rows), 4.2), squeeze=False)
    for ax, r in zip(axes[0], rows):
        ts = [t for t, _ in r["points"]]
        ax.plot(ts, [s * 1e3 for _, s in r["points"]], ".", ms=2, label="neoflow (background tuning)")
        ax.axhline(r["eager"]["median_ms"], color="k", ls="--", label="eager (warm, before the run)")
        if r.get("eager_points"):
            ax.plot(
                [t for t, _ in r["eager_points"]],
                [s * 1e3 for _, s in r["eager_points"]],
                "x",
                color="k",
                ms=3,
                label="eager (interleaved)",
            )
        if "compile" in r:
            ax.axhline(r["compile"]["median_ms"], color="g", ls=":", label="torch.compile")
        ax.set_yscale("log")
        ax.set_xlabel("seconds since the first step began")
        ax.set_ylabel("step time, ms (log)")
        ax.set_title(f"{r['workload']}, batch {r['batch']}", fontsize=9)
        ax.legend(fontsize=7)
    fig.suptitle(f"NEOFLOW_TUNE=background, {result['machine']['cpu']}", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv=None) -> dict:
    args = parse_args(argv)
    tmp = scratch_dir("neoflow-dynamic-")
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(tmp, "inductor")
    if (os.cpu_count() or 1) <= 4:
        os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")
    import neoflow
    import torch

    info = wl.machine_info(torch, neoflow)
    rows = [bench(torch, neoflow, name, args, tmp) for name in args.workloads]
    result = {"date": datetime.date.today().isoformat(), "machine": info, "settings": vars(args), "rows": rows}
    md = render_markdown(result)
    wl.write_results(args.out, f"dynamic-{result['date']}-cpu", result, md, lambda p: render_chart(result, p))
    print(md)
    return result


if __name__ == "__main__":
    main()
