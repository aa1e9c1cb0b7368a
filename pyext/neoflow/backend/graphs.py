"""``torch.compile(model, backend="neoflow")``: whole graphs through neoflow.

Dynamo hands the backend an FX graph; AOT Autograd traces its backward, and
each of the two graphs goes through ``compile_graph``:

1. every node that ``aten_support.unsupported`` accepts is a candidate
   (matrix products and convolutions only with ``contractions="neoflow"``),
   and so is every fused operator whose decomposition lowers whole
   (``decompose``: it is decomposed inside its subgraph, and stays whole
   in eager otherwise),
   and PyTorch's ``CapabilityBasedPartitioner`` groups the candidates into
   subgraphs that can each run as one call (no cycle through an eager node);
   those are cut into runs of at most ``MAX_NODES`` calls, views that eager
   users take are made again in eager, and a subgraph of views only stays in
   eager;
2. each subgraph becomes one neoflow op (``lowering.Lowering``): its nodes
   are statements (a neoflow op's node its own statements, ``inlining``),
   which the op's passes fuse, schedule and compile like any op's, and it
   runs as one native call; a subgraph the compiler refuses runs in eager,
   with a warning;
3. the other nodes run in eager PyTorch, as they would without the backend;
4. the compiled graph and Dynamo's graph as eager runs it are timed in turns
   over the first calls, and the faster runs from then on (``choice``).

``report()`` (and ``explain=True``, which also logs each graph's report on
the ``neoflow.compile`` logger at INFO and prints it) says per graph how
many nodes were lowered, into how many subgraphs, and which operators fell
back and why. Shapes are static: a new shape recompiles through Dynamo's
guards (``dynamic=True`` graphs have symbolic shapes, which fall back).
"""

from __future__ import annotations

import functools
import hashlib
import logging
import operator
import sys
import threading
import time

import torch
from torch.fx.passes.operator_support import OperatorSupport

from ..errors import Error
from . import aten_support, choice, decompose, lowering, mmsum

log = logging.getLogger("neoflow.compile")

_reports: list[dict] = []
_lock = threading.Lock()


def report(clear: bool = False) -> list[dict]:
    """The reports of the graphs compiled so far in this process, oldest first:
    ``graph`` ("forward", "backward" or "inference"), ``nodes`` (operator
    calls), ``lowered`` (of those, run by neoflow), ``subgraphs`` (neoflow
    ops made), ``eager_views`` (views of a subgraph's tensors that eager
    users take, made in eager), ``merged_products`` (matrix products
    merged into others, mmsum), ``fallback`` ({operator: reason} for those
    left in eager), ``choice`` (None until measured, then ``kept``: "neoflow"
    or "eager", by ``neoflow_ms`` and ``eager_ms``, the medians of
    ``samples`` calls each; see ``choice``), ``measured`` (per subgraph whose
    own choice is made: ``calls``, ``kept``, ``neoflow_us``, ``eager_us``).
    ``clear=True`` empties the list after returning it."""
    with _lock:
        out = list(_reports)
        if clear:
            _reports.clear()
    return out


class _Support(OperatorSupport):
    def __init__(self, contractions: str):
        super().__init__()
        self.contractions = contractions
        self.reasons: dict[str, str] = {}
        self.views: set = set()  # decomposable operators that only make views, left to eager (not a fallback)

    def is_node_supported(self, submodules, node) -> bool:
        if node.op != "call_function":
            return False
        if decompose.decomposable(node):
            why = decompose.unsupported(node, self.contractions)
        else:
            why = aten_support.unsupported(node, self.contractions)
        if why is decompose.VIEW:
            self.views.add(node)
        elif why is not None:
            self.reasons.setdefault(str(node.target), why)
        return why is None


class _ConstantsOnly(ValueError):
    pass


class _Subgraph(torch.nn.Module):
    """One lowered subgraph: a neoflow op's kernel launched on the subgraph's
    inputs, returning what the subgraph returned (a tuple when it returned
    several).

    A call goes straight to the kernel of its inputs' shapes and dtypes
    (``Kernel.run``), not through the op's user-facing call: the graph is
    already past autocast and autograd (AOT Autograd traced the backward;
    the op is forward only), so the op's checks of those would be work
    without effect, and at 20-60 subgraph calls a training step of a
    recurrent cell they were most of the backend's time outside kernels."""

    def __init__(self, gm: torch.fx.GraphModule, name: str, measure: bool = False):
        super().__init__()
        # its fused operators as their parts, which lower, but for the empty tensors they return (made here)
        self.parts, self.empties = decompose.decompose(gm)
        low = lowering.Lowering(self.parts)
        if not low.inputs:
            raise _ConstantsOnly("it reads no tensor (constants only, which eager makes as cheaply)")
        self.name = name
        self.source = low.source
        self.op = self._define(low)
        self.used = low.used  # the positions of the arguments the op reads
        # the op's inputs that the graph passes as 0-dimensional tensors: the op reads them as shape (1,)
        self.scalars = [i for i, k in enumerate(low.used) if not low.in_shapes[k]]
        # inputs that come as views with other strides than row-major (an unfold's windows, a permutation,
        # whatever eager operator made them): the op variant for their strides reads them in place
        # (_strided); by the positions and strides of such inputs, () for none
        self.variants: dict = {(): self.op}
        self.out_shapes = low.out_shapes
        self.bools = [k for k, dt in enumerate(low.out_dtypes) if dt == torch.bool]  # comparisons' results
        # outputs eager lays out otherwise than row-major: some eager operators after the subgraph rely on the
        # strides they were traced with (the CPU attention backward reads its saved output's), so those outputs
        # are copied into that layout
        self.relaid = [
            (k, stride)
            for k, (shape, stride) in enumerate(zip(low.out_shapes, low.out_strides))
            if shape and stride != _row_major(shape) and _dense(shape, stride)
        ]
        self.zero_dim = [k for k, shape in enumerate(low.out_shapes) if not shape]  # returned 0-dimensional
        self.mended = bool(self.bools or self.relaid or self.zero_dim or self.empties)
        out = next(n for n in gm.graph.nodes if n.op == "output").args[0]
        self.many = isinstance(out, (tuple, list))
        self.eager = gm  # runs the subgraph if its first call fails to compile, or if measured faster
        self.kernels: dict = {}  # by the inputs' shapes and dtypes
        self.calls = sum(1 for n in gm.graph.nodes if n.op == "call_function")
        # the measured choice between the kernel and the eager operators (choice.Turns; None once made)
        self.turns = choice.Turns() if measure else None
        self.report: dict | None = None  # the graph's, which gets the choice
        self.tuning = False  # whether the background tuner was busy with its kernels when last asked
        self.tuner_checked = -TUNER_POLL

    def _define(self, low: lowering.Lowering):
        from ..op import Op

        digest = hashlib.sha1(low.source.encode()).hexdigest()[:12]
        # forward only: AOT Autograd traced the backward, so the kernels keep no temporaries for a gradient
        return Op(
            low.source,
            name=f"{self.name}_{digest}",
            inputs=low.inputs,
            outputs=low.outputs,
            sizes=low.sizes,
            forward_only=True,
        )

    def __call__(self, *args):  # straight to forward: a subgraph has no hooks (nn.Module's call checks them)
        return self.forward(*args)

    def forward(self, *args):
        if self.turns is not None:
            return self._turn(args)
        if self.op is None:
            return self.eager(*args)
        return self._run(args)

    def _turn(self, args):
        """A call of the measured choice: the kernel or the eager operators, timed; on a GPU (where the host
        does not wait for the kernels) the kernel, untimed."""
        if self.op is None or any(a.is_cuda for a in args if isinstance(a, torch.Tensor)):
            self.turns = None
            return self.forward(*args)
        if self.turns.calls == 1 and self._tuner_busy():  # kernel built: its schedules come first
            return self._run(args)
        variant = self.turns.next()
        start = time.perf_counter_ns()
        out = self._run(args) if variant == "neoflow" else self.eager(*args)
        self.turns.record(variant, time.perf_counter_ns() - start)
        if self.turns.kept:
            figures, self.turns = self.turns.figures, None
            if figures["kept"] == "eager":
                self.op = None
            if self.report is not None:
                self.report["measured"].append(dict(figures, calls=self.calls))
        return out

    def _tuner_busy(self) -> bool:
        """Whether the background tuner (or picker) still works on this subgraph's kernels, asked at most
        every TUNER_POLL seconds: until it is done, the kernels run untimed (``tuning`` is True)."""
        from .. import tuning

        now = time.monotonic()
        if now >= self.tuner_checked + TUNER_POLL:
            self.tuner_checked = now
            self.tuning = tuning.tuner_busy(op.name for op in self.variants.values() if op is not None)
        return self.tuning

    def _run(self, args):
        flat = [args[k] for k in self.used]
        for i in self.scalars:
            flat[i] = flat[i].reshape(1)
        sig = ()
        if not all(map(_contiguous, flat)):
            sig, flat = self._strided(flat)
        key = (sig, tuple([(a.shape, a.dtype) for a in flat]))
        kernel = self.kernels.get(key)
        if kernel is None:
            kernel = self._kernel(flat, sig, key)
            if kernel is None:
                return self.eager(*args)
        bufs = kernel.run(flat)
        outs = [bufs[i] for i in kernel.outputs]
        if self.mended:
            outs = self._mend(outs)
        return tuple(outs) if self.many else outs[0]

    def _strided(self, flat: list) -> tuple:
        """For inputs of which some are not contiguous: the signature of the op variant that reads those in
        place, and the inputs as it takes them (each such view as the flat memory it spans). Without a
        variant (its lowering failed), () and the inputs as they are: Kernel.run copies the views."""
        sig = tuple((i, a.stride()) for i, a in enumerate(flat) if not a.is_contiguous())
        if any(0 in flat[i].shape or min(st) < 0 for i, st in sig):
            return (), flat
        if sig not in self.variants:
            try:
                low = lowering.Lowering(self.parts, strided={self.used[i]: st for i, st in sig})
                self.variants[sig] = self._define(low)
            except (Error, ValueError) as e:
                log.debug("neoflow: a subgraph's strided inputs are copied: %s", e)
                self.variants[sig] = None
        if self.variants[sig] is None:
            return (), flat
        flat = list(flat)
        for i, st in sig:
            extent = 1 + sum((n - 1) * s for n, s in zip(flat[i].shape, st))
            flat[i] = flat[i].as_strided((extent,), (1,))
        return sig, flat

    def _kernel(self, flat, sig: tuple, key):
        """The kernel for these inputs, built now; None when the build fails: the first build (the subgraph
        then runs in eager from now on) or a strided variant's (this call runs in eager, later ones copy
        their views)."""
        try:
            kernel = self.variants[sig].specialize(*flat)
        except Error as e:
            if sig:
                log.debug("neoflow: a subgraph's strided variant failed to build; its views are copied: %s", e)
                self.variants[sig] = None
                return None
            if self.kernels:
                raise
            log.warning("neoflow: a lowered subgraph failed to compile and runs in eager instead: %s", e)
            self.op = None
            return None
        self.kernels[key] = kernel
        return kernel

    def _mend(self, outs: list) -> list:
        """The outputs as the graph returned them: 0-dimensional ones reshaped, comparisons as bool tensors,
        the layouts eager gave them (relaid), and the empty tensors of the decompositions put back (empties)."""
        for k in self.zero_dim:
            outs[k] = outs[k].reshape(())
        for k in self.bools:
            outs[k] = outs[k] != 0
        for k, stride in self.relaid:
            o = outs[k]
            outs[k] = torch.empty_strided(o.shape, stride, dtype=o.dtype, device=o.device).copy_(o)
        for k, (shape, dtype) in sorted(self.empties.items()):
            outs.insert(k, torch.empty(shape, dtype=dtype, device=outs[0].device))
        return outs


_contiguous = torch.Tensor.is_contiguous


def _row_major(shape) -> tuple:
    strides, n = [], 1
    for d in reversed(shape):
        strides.append(n)
        n *= d
    return tuple(reversed(strides))


def _dense(shape, stride) -> bool:
    """Whether stride lays shape out without gaps or overlaps (a permutation
    of a row-major layout; an expanded view's zero strides are not)."""
    dims = sorted((st, n) for n, st in zip(shape, stride) if n != 1)
    expect = 1
    for st, n in dims:
        if st != expect:
            return False
        expect *= n
    return True


def _chunks(gm, parts, max_nodes: int) -> list:
    """The partitions cut into runs of at most max_nodes nodes, in graph order. A cut never makes a
    cycle: the graph's order is topological, so what a later run feeds an eager node can only reach
    later runs. Compiling an op takes more than linear time in its statements: an unrolled LLTM
    sequence of 907 operator calls in one op took minutes to build."""
    from torch.fx.passes.infra.partitioner import Partition

    order = {n: i for i, n in enumerate(gm.graph.nodes)}
    out = []
    for p in parts:
        runs, run = [], []
        for n in sorted(p.nodes, key=order.__getitem__):
            # a getitem stays with its multi-output producer (which it follows in graph order)
            if len(run) >= max_nodes and n.target is not operator.getitem:
                runs.append(run)
                run = []
            run.append(n)
        runs.append(run)
        views_only = [all(map(aten_support.is_view, r)) for r in runs]
        out += [Partition(id=len(out) + i, nodes=r) for i, r in enumerate(runs) if not views_only[i]]
    return out


# How often (seconds) a subgraph waiting to time its kernel asks whether the background tuner is done with it.
TUNER_POLL = 0.5

# The most operator calls one subgraph holds. The compiler's passes are
# near-linear in an op's statements (a 2,000-statement op builds in seconds),
# so this only bounds one op's C source; a longer run is cut in graph order.
MAX_NODES = 1000


def _views_outside(gm, part) -> int:
    """Gives the eager users of a view in part a view of their own, made in eager (where a view costs
    nothing), instead of one the subgraph would have to store: a weight's transpose feeding an eager
    matmul was copied whole on every call. A view no node in part reads any more leaves part. In
    reverse graph order, so that a chain of views moves out whole. Returns how many views left part."""
    moved = 0
    for v in [n for n in reversed(part.nodes) if aten_support.is_view(n) and n.target is not operator.getitem]:
        outside = [u for u in v.users if u not in part.nodes]
        if not outside:
            continue
        with gm.graph.inserting_after(v):
            twin = gm.graph.call_function(v.target, v.args, v.kwargs)
        twin.meta = dict(v.meta)
        for u in outside:
            u.replace_input_with(v, twin)
        if not v.users:
            part.remove_node(v)
            gm.graph.erase_node(v)
            moved += 1
    return moved


def compile_graph(
    gm: torch.fx.GraphModule,
    example_inputs,
    *,
    graph: str = "forward",
    explain: bool = False,
    contractions: str = "eager",
    max_nodes: int | None = None,
    measure: bool = False,
    into=None,
):
    """Lowers what it can of an ATen graph into neoflow ops, in place, and
    returns it (run it with boxed arguments through make_boxed_func); its
    report goes to ``report()`` and, with its subgraphs, to ``into`` (a
    ``choice.Graph``) when given; ``measure`` times each subgraph's kernel
    against its eager operators over its first calls (``choice.Turns``)."""
    from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner

    support = _Support(contractions)
    products = mmsum.merge(gm)  # sums of matrix products (a shared weight's gradient) as one product
    calls = [n for n in gm.graph.nodes if n.op == "call_function"]
    partitioner = CapabilityBasedPartitioner(gm, support, allows_single_node_partition=True)
    parts = [p for p in partitioner.propose_partitions() if not all(aten_support.is_view(n) for n in p.nodes)]
    parts = _chunks(gm, parts, max_nodes or MAX_NODES)
    eager_views = sum(_views_outside(gm, p) for p in parts)
    parts = [p for p in parts if p.nodes and not all(aten_support.is_view(n) for n in p.nodes)]
    lowered, made = sum(len(p.nodes) for p in parts), 0
    if parts:
        gm = partitioner.fuse_partitions(parts)
        for node in list(gm.graph.nodes):
            if node.op == "call_module" and node.target.startswith("fused_"):
                sub = getattr(gm, node.target)
                try:
                    made_sub = _Subgraph(sub, f"fx_{graph}", measure)
                    setattr(gm, node.target, made_sub)
                    # also an instance attribute, which the graph's code (self.fused_0(...)) finds without
                    # nn.Module.__getattr__
                    object.__setattr__(gm, node.target, made_sub)
                    made += 1
                except Exception as e:  # noqa: BLE001 - whatever went wrong, the subgraph stays an eager GraphModule
                    n = sum(1 for x in sub.graph.nodes if x.op == "call_function")
                    lowered -= n
                    why = str(e) if isinstance(e, (Error, ValueError)) else f"{type(e).__name__}: {e}"
                    support.reasons[f"a subgraph of {n} operator calls"] = f"not lowered: {why}"
                    level = logging.DEBUG if isinstance(e, _ConstantsOnly) else logging.WARNING
                    log.log(level, "neoflow: a subgraph of %d operator calls runs in eager: %s", n, why)
        gm.recompile()
    rep = {
        "graph": graph,
        "nodes": len(calls),
        "lowered": lowered,
        "subgraphs": made,
        "eager_views": eager_views + len(support.views),
        "merged_products": products,
        "fallback": dict(sorted(support.reasons.items())),
        "choice": None,
        "measured": [],
    }
    subgraphs = [m for m in gm.modules() if isinstance(m, _Subgraph)]
    for m in subgraphs:
        m.report = rep
    with _lock:
        _reports.append(rep)
        if into is not None:
            into.reports.append(rep)
            into.subgraphs += subgraphs
    if explain:
        text = explain_text(rep)
        log.info("%s", text)
        print(text, file=sys.stderr)
    return gm


def explain_text(rep: dict) -> str:
    lines = [
        f"neoflow: {rep['graph']} graph: {rep['lowered']} of {rep['nodes']} operator calls lowered into "
        f"{rep['subgraphs']} neoflow op(s)"
    ]
    if rep.get("merged_products"):
        lines.append(f"  {rep['merged_products']} matrix product(s) of sums merged into others (one product each)")
    for target, why in rep["fallback"].items():
        lines.append(f"  eager: {target}: {why}")
    for m in rep.get("measured", []):
        if m["kept"] == "eager":
            lines.append(
                f"  a subgraph of {m['calls']} operator calls runs in eager: {m['neoflow_us']:.1f} us a call lowered, "
                f"{m['eager_us']:.1f} us in eager (medians)"
            )
    if rep.get("choice"):
        lines.append("  " + choice.choice_text(rep["choice"], [rep["graph"]]))
    return "\n".join(lines)


def _compiler(graph: str, explain: bool, contractions: str, measure: bool, into):
    from functorch.compile import make_boxed_func

    def compile_(gm, example_inputs):
        gm = compile_graph(
            gm, example_inputs, graph=graph, explain=explain, contractions=contractions, measure=measure, into=into
        )
        # the graph's code itself, not the lazy first forward that compiles it and then calls the module
        lazy = getattr(getattr(torch.fx, "_lazy_graph_module", None), "_LazyGraphModule", None)
        if lazy is not None and hasattr(lazy, "force_recompile"):
            lazy.force_recompile(gm)
        return make_boxed_func(gm.forward)

    return compile_


def backend(
    gm: torch.fx.GraphModule,
    example_inputs,
    *,
    explain: bool = False,
    contractions="eager",
    measure=True,
    options: dict | None = None,
    mode: str | None = None,
    name: str | None = None,
    **more,
):
    """The Dynamo backend (``torch.compile(model, backend="neoflow")``, found
    through the ``torch_dynamo_backends`` entry point, or this function
    itself as ``backend=``). Options (``torch.compile(..., options={...})``):
    ``explain`` reports each graph; ``contractions`` is "eager" (the
    default: matrix products and convolutions run in PyTorch, but for
    grouped 1x1 and depthwise convolutions on the CPU (see
    convlowering.grouped_on_cpu), the rest of each subgraph in neoflow) or
    "neoflow" (they are lowered too, and fuse
    with their neighbours; on the 2-core Xeon an MI-LSTM training step took
    455 ms so against 121 ms with "eager", as untuned neoflow matrix
    products run several times slower than PyTorch's BLAS); ``measure``
    (default True) times the compiled graph against the graph's own eager
    operators over its first calls and keeps the faster (``choice``), False
    runs the compiled graph always."""
    from torch._dynamo.backends.common import aot_autograd

    if mode not in (None, "default"):
        raise ValueError(f"backend 'neoflow' has no mode {mode!r} (tuning is neoflow.configure(tune=...))")
    options = {**(options or {}), **more}  # torch.compile(..., options={...}) passes them as options
    explain = bool(options.pop("explain", explain))
    contractions = options.pop("contractions", contractions)
    measure = options.pop("measure", measure)
    if options:
        raise TypeError(
            f"backend 'neoflow' got unknown options {sorted(options)} (it takes explain, contractions and measure)"
        )
    _check_options(contractions, measure)
    made = choice.Graph()  # its forward's and backward's reports and subgraphs (backward: at its first call)
    aot = aot_autograd(
        fw_compiler=_compiler("forward", explain, contractions, measure, made),
        bw_compiler=_compiler("backward", explain, contractions, measure, made),
        inference_compiler=_compiler("inference", explain, contractions, measure, made),
        # no decompositions: the fused operators whose parts lower are decomposed inside their subgraphs
        # (decompose), the others run whole in eager
    )
    compiled = aot(gm, example_inputs)
    if not measure:
        return compiled
    return torch._dynamo.disable(choice.Chosen(compiled, gm, made, explain))


def _check_options(contractions, measure) -> None:
    if contractions not in ("eager", "neoflow"):
        raise ValueError(f"contractions={contractions!r}: expected 'eager' or 'neoflow'")
    if not isinstance(measure, bool):
        raise TypeError(f"measure={measure!r}: expected True or False")


def compile(model=None, *, explain: bool = False, contractions: str = "eager", measure: bool = True, **kwargs):
    """``torch.compile(model, backend=neoflow's, **kwargs)``; ``explain=True``
    prints (and logs) what each compiled graph lowered and what stayed in
    eager; ``contractions`` and ``measure`` as for ``backend``. Usable as a
    decorator, with or without arguments."""
    if "backend" in kwargs:
        raise TypeError("neoflow.compile chooses the backend; use torch.compile for another one")
    _check_options(contractions, measure)
    be = functools.partial(backend, explain=explain, contractions=contractions, measure=measure)
    if model is None:
        return lambda m: torch.compile(m, backend=be, **kwargs)
    return torch.compile(model, backend=be, **kwargs)
