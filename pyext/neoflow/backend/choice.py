"""The measured choice between a compiled graph and its own eager operators.

A graph under ``backend="neoflow"`` runs faster lowered on most models, but
not on all: AOT Autograd's decompositions replace fused ATen operators (layer
norm, softmax, GELU and their backward kernels) by their parts, and what
neoflow leaves of those parts in eager, with AOT's runtime around it, can cost
more than the fused operators saved. Which way it goes depends on the model,
its shapes and the machine, so the backend measures it (``Chosen``):

- the first ``WARM`` calls run the compiled graph (its kernels are built on the
  first), the next one Dynamo's graph as eager runs it, untimed;
- then the two alternate for ``2 * SAMPLES`` calls, and each call's time is
  the interval until the graph's next call: in a training loop that is a
  whole step (this graph's forward, its backward, the optimizer and whatever
  else the loop does), so the backward and AOT's own work are counted where
  timing the call alone would miss them; what the loop does besides falls on
  both variants alike;
- the variant with the smaller median runs from then on, and the reports of
  the graph's forward and backward say which, with both medians
  (``compile_report()``'s ``choice``; ``explain=True`` prints it).

Where a step calls several graphs, each alternates with its own calls; graphs
called once per step alternate together and choose alike, between all of
them compiled and all of them in eager. ``measure=False`` (a backend option)
runs the compiled graph always.
"""

from __future__ import annotations

import logging
import statistics
import sys
import time

log = logging.getLogger("neoflow.compile")

WARM = 2  # compiled calls before the trial (the first builds the kernels), then one eager call
SAMPLES = 8  # timed calls of each variant
TRIAL = WARM + 2 + 2 * SAMPLES  # calls until the choice is made (by the last of them)


class Chosen:
    """Dynamo's graph ``gm`` compiled (``compiled``) and as is (``eager``): runs the one measured faster
    (see the module's doc). ``reports`` are the compile reports of the graph's forward and backward, which
    get the choice once it is made; ``explain`` prints it."""

    def __init__(self, compiled, eager, reports: list, explain: bool = False):
        self.compiled = compiled
        self.eager = eager
        self.reports = reports
        self.explain = explain
        self.calls = 0
        self.run = None  # the chosen variant, once chosen
        self.last = None  # the variant of the previous timed call and its start (ns)
        self.times: dict = {"neoflow": [], "eager": []}

    def __call__(self, *args):
        run = self.run
        if run is not None:
            return run(*args)
        return self._trial(args)

    def _trial(self, args):
        now = time.perf_counter_ns()
        n, self.calls = self.calls, self.calls + 1
        if self.last is not None:
            variant, start = self.last
            self.times[variant].append(now - start)
        if min(map(len, self.times.values())) >= SAMPLES:
            self._choose()
            return self.run(*args)
        if n < WARM:
            return self.compiled(*args)
        if n == WARM:
            return self.eager(*args)
        variant = "neoflow" if (n - WARM) % 2 else "eager"
        self.last = (variant, now)
        return (self.compiled if variant == "neoflow" else self.eager)(*args)

    def _choose(self) -> None:
        ms = {k: statistics.median(v) / 1e6 for k, v in self.times.items()}
        kept = "neoflow" if ms["neoflow"] <= ms["eager"] else "eager"
        choice = {"kept": kept, "neoflow_ms": ms["neoflow"], "eager_ms": ms["eager"], "samples": SAMPLES}
        for rep in self.reports:
            rep["choice"] = choice
        self.run = self.compiled if kept == "neoflow" else self.eager
        self.compiled = self.eager = None  # the other variant's kernels or graph are freed
        text = choice_text(choice, [r["graph"] for r in self.reports])
        log.info("%s", text)
        if self.explain:
            print(text, file=sys.stderr)


def choice_text(choice: dict, graphs: list) -> str:
    """One line: which variant of a graph runs, and the medians it was chosen by."""
    what = " and ".join(graphs) or "a"
    where = "neoflow" if choice["kept"] == "neoflow" else "eager (all its operators, as without the backend)"
    return (
        f"neoflow: the {what} graph runs in {where}: {choice['neoflow_ms']:.3f} ms a call compiled, "
        f"{choice['eager_ms']:.3f} ms in eager (medians of {choice['samples']} calls in turns)"
    )
