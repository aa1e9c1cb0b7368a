"""The measured choices between compiled code and eager operators: per lowered subgraph, then per graph.

A graph under ``backend="neoflow"`` runs faster lowered on most models, but
not on all: an untuned kernel can be slower than the fused eager operators it
replaces, and AOT Autograd's own work around a graph (its runtime wrappers,
functionalized copies, the backward run as one graph of ATen calls) can cost
more than the lowered subgraphs save. Which way it goes depends on the model,
its shapes and the machine, so the backend measures it, twice.

Each lowered subgraph first (``Turns``): its first call builds and runs the
kernel, the next runs the subgraph's own ATen operators (fused ones whole,
see ``decompose``), untimed; then the two alternate for ``2 *
SUBGRAPH_SAMPLES`` calls, each timed alone (on the CPU a call returns when
its work is done; on a GPU nothing is timed and the kernel stays), and the
faster by median runs from then on (the report's ``measured``).

Then the whole graph (``Chosen``):

- the first calls run the compiled graph, at least ``WARM`` and until its
  subgraphs have chosen (at most ``WARM_MAX``, but for as long as the
  background tuner works on their kernels: a subgraph times its kernel once
  its schedules are settled), the next one Dynamo's graph as eager runs it,
  untimed;
- then the two alternate for ``2 * SAMPLES`` calls, and each call's time is
  the interval until the graph's next call (on a GPU, the host waits for the
  GPU at each call of the trial): in a training loop that is a
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

import torch

log = logging.getLogger("neoflow.compile")

WARM = 2  # compiled calls before the trial (the first builds the kernels), then one eager call
SAMPLES = 8  # timed calls of each variant
SUBGRAPH_SAMPLES = 5  # timed calls of each variant of a lowered subgraph
WARM_MAX = 3 + 2 * SUBGRAPH_SAMPLES  # compiled calls at most before the trial, while subgraphs choose
TRIAL = WARM_MAX + 2 + 2 * SAMPLES  # calls until the graph's choice is made (by the last of them), at most


class Graph:
    """What the backend made of one Dynamo graph: the compile reports of its forward and backward, and
    their lowered subgraphs (each with its own measured choice, ``turns``, None once made)."""

    def __init__(self):
        self.reports: list = []
        self.subgraphs: list = []

    def waiting(self) -> str | None:
        """What the graph's trial waits for: "tuner" while the background tuner works on a subgraph's
        kernels (they are timed once it is done), "turns" while a subgraph's turns last, else None."""
        if any(s.tuning and s.turns is not None for s in self.subgraphs):
            return "tuner"
        return "turns" if any(s.turns is not None for s in self.subgraphs) else None


class Chosen:
    """Dynamo's graph ``gm`` compiled (``compiled``) and as is (``eager``): runs the one measured faster
    (see the module's doc). ``made`` (a Graph) holds the compile reports of the graph's forward and
    backward, which get the choice once it is made, and its subgraphs, whose choices come first (the
    warm-up lasts until they are made, at most ``WARM_MAX`` calls); ``explain`` prints it."""

    def __init__(self, compiled, eager, made: Graph, explain: bool = False):
        self.compiled = compiled
        self.eager = eager
        self.made = made
        self.explain = explain
        self.warm = 0  # compiled calls so far in the warm-up; None once it is over
        self.cuda = None  # whether the graph's inputs are on a GPU (known at the first call)
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
        if self.cuda is None:
            self.cuda = any(a.is_cuda for a in args if isinstance(a, torch.Tensor))
        if self.cuda:  # the interval is the GPU's work: the host waits for it during the trial
            torch.cuda.synchronize()
        now = time.perf_counter_ns()
        if self.last is not None:
            variant, start = self.last
            self.times[variant].append(now - start)
        if min(map(len, self.times.values())) >= SAMPLES:
            self._choose()
            return self.run(*args)
        if self.warm is not None:
            waiting = self.made.waiting()
            if self.warm < WARM or waiting == "tuner" or (waiting and self.warm < WARM_MAX):
                self.warm += 1
                return self.compiled(*args)
            self.warm = None
            return self.eager(*args)
        self.calls += 1
        variant = "neoflow" if self.calls % 2 else "eager"
        self.last = (variant, now)
        return (self.compiled if variant == "neoflow" else self.eager)(*args)

    def _choose(self) -> None:
        kept, ms = _faster(self.times, 1e6)
        choice = {"kept": kept, "neoflow_ms": ms["neoflow"], "eager_ms": ms["eager"], "samples": SAMPLES}
        for rep in self.made.reports:
            rep["choice"] = choice
        self.run = self.compiled if kept == "neoflow" else self.eager
        self.compiled = self.eager = None  # the other variant's kernels or graph are freed
        text = choice_text(choice, [r["graph"] for r in self.made.reports])
        log.info("%s", text)
        if self.explain:
            print(text, file=sys.stderr)


class Turns:
    """The same choice for one lowered subgraph, by the duration of its calls (synchronous on the CPU):
    its first call runs the kernel (built then), the next its eager operators, untimed; then the two
    alternate for ``2 * SUBGRAPH_SAMPLES`` timed calls. ``next()`` names the variant of a call, ``record``
    takes its duration; ``kept`` is set once chosen."""

    def __init__(self):
        self.calls = 0
        self.kept = None
        self.times: dict = {"neoflow": [], "eager": []}

    def next(self) -> str:
        n, self.calls = self.calls, self.calls + 1
        return "eager" if n % 2 else "neoflow"

    def record(self, variant: str, ns: int) -> None:
        if self.calls <= 2:  # the build and the eager warm-up
            return
        self.times[variant].append(ns)
        if min(map(len, self.times.values())) >= SUBGRAPH_SAMPLES:
            self.kept, us = _faster(self.times, 1e3)
            self.figures = {"kept": self.kept, "neoflow_us": us["neoflow"], "eager_us": us["eager"]}


def _faster(times: dict, per: float) -> tuple[str, dict]:
    """The variant of the smaller median ("neoflow" on a tie) and both medians, times (ns) divided by per."""
    medians = {k: statistics.median(v) / per for k, v in times.items()}
    return ("neoflow" if medians["neoflow"] <= medians["eager"] else "eager"), medians


def choice_text(choice: dict, graphs: list) -> str:
    """One line: which variant of a graph runs, and the medians it was chosen by."""
    what = " and ".join(graphs) or "a"
    where = "neoflow" if choice["kept"] == "neoflow" else "eager (all its operators, as without the backend)"
    return (
        f"neoflow: the {what} graph runs in {where}: {choice['neoflow_ms']:.3f} ms a call compiled, "
        f"{choice['eager_ms']:.3f} ms in eager (medians of {choice['samples']} calls in turns)"
    )
