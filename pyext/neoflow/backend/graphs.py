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
import logging
import operator
import sys
import threading

import torch
from torch.fx.passes.operator_support import OperatorSupport

from ..errors import Error
from . import aten_support, choice, decompose, mmsum, shapes, sizevalues, views
from .sizevalues import SizeAsValue
from .subgraph import ConstantsOnly, Subgraph

log = logging.getLogger("neoflow.compile")

_reports: list[dict] = []
_lock = threading.Lock()


def report(clear: bool = False) -> list[dict]:
    """The reports of the graphs compiled so far in this process, oldest first:
    ``graph`` ("forward", "backward" or "inference"), ``nodes`` (operator
    calls), ``lowered`` (of those, run by neoflow), ``subgraphs`` (neoflow
    ops made), ``eager_views`` (views of a subgraph's tensors that eager
    users take, made in eager), ``reinterpreted_views`` (of the views left
    in eager, those made from their input's memory directly: ``views``),
    ``merged_products`` (matrix products
    merged into others, mmsum), ``fallback`` ({operator: reason} for those
    left in eager), ``choice`` (None until measured, then ``kept``: "neoflow"
    or "eager", by ``neoflow_ms`` and ``eager_ms``, the medians of
    ``samples`` calls each; see ``choice``), ``measured`` (per subgraph whose
    own choice is made: ``calls``, ``kept``, ``neoflow_us``, ``eager_us``,
    ``ops``, the operators it replaces, and ``source``, its statements),
    ``kernels`` (``built``: the kernels its subgraphs' first calls built,
    ``every_size``: of those, the ones for every size of the dimensions that
    vary between the shapes a graph with dynamic shapes was called with, and
    ``reused``: the subgraphs whose first call found a kernel built before,
    for another shape). ``clear=True`` empties the list after returning it."""
    with _lock:
        out = list(_reports)
        if clear:
            _reports.clear()
    return out


class _Support(OperatorSupport):
    def __init__(self, contractions: str, symbolic: bool):
        super().__init__()
        self.contractions = contractions
        self.symbolic = symbolic
        self.reasons: dict[str, str] = {}
        self.views: set = set()  # decomposable operators that only make views, left to eager (not a fallback)

    def is_node_supported(self, submodules, node) -> bool:
        if node.op != "call_function" or sizevalues.is_size(node):  # a size: computed in eager, read where used
            return False
        if decompose.decomposable(node):
            why = decompose.unsupported(node, self.contractions, self.symbolic)
        else:
            why = aten_support.unsupported(node, self.contractions, self.symbolic)
        if why is decompose.VIEW:
            self.views.add(node)
        elif why is not None:
            self.reasons.setdefault(str(node.target), why)
        return why is None


def _chunks(gm, parts, max_nodes: int) -> list:
    """The partitions cut into runs in graph order: of at most max_nodes nodes, and where the float dtype
    their nodes compute in changes. A cut never makes a cycle: the graph's order is topological, so what a
    later run feeds an eager node can only reach later runs. Compiling an op takes more than linear time in
    its statements: an unrolled LLTM sequence of 907 operator calls in one op took minutes to build. An op
    computes in one float dtype: a graph of symbolic sizes computes a size's square root in float64 beside
    float32 work (GPT-2's attention scale), which the partitioner, checking nodes one by one, would put in
    one subgraph that then failed to build."""
    from torch.fx.passes.infra.partitioner import Partition

    order = {n: i for i, n in enumerate(gm.graph.nodes)}
    out = []
    for p in parts:
        runs, run, dtype = [], [], None
        for n in sorted(p.nodes, key=order.__getitem__):
            # a getitem stays with its multi-output producer (which it follows in graph order)
            dt = aten_support.float_dtype(n) if n.target is not operator.getitem else None
            full = len(run) >= max_nodes and n.target is not operator.getitem
            if full or dt is not None and dtype is not None and dt != dtype:
                runs.append(run)
                run = []
            dtype = dt or dtype
            run.append(n)
        runs.append(run)
        views_only = [all(map(aten_support.is_view, r)) for r in runs]
        out += [Partition(id=len(out) + i, nodes=r) for i, r in enumerate(runs) if not views_only[i]]
    return out


# The most operator calls one subgraph holds. The compiler's passes are
# near-linear in an op's statements (a 2,000-statement op builds in seconds),
# so this only bounds one op's C source; a longer run is cut in graph order.
MAX_NODES = 1000


def _views_at_borders(gm, part) -> int:
    """Leaves to eager the views in part that reshape a tensor part does not make (a graph input, an eager
    matmul's result): part then takes the view as its input, read plainly, where it read the tensor through
    index arithmetic with the view's extents (``X[i * L + j, k]`` for a (B*L, H) -> (B, L, H) reshape). Its
    op's text then does not name those extents, so that one op, and one kernel for every size
    (neoflow.dynamic), serves every sequence length of a graph with dynamic shapes. In graph order, so
    that a chain of such views leaves whole. Returns how many views left part."""
    moved = 0
    for v in [n for n in gm.graph.nodes if n in part.nodes and n.target in aten_support.RESHAPING]:
        source = v.args[0] if v.args else None
        if isinstance(source, torch.fx.Node) and source not in part.nodes:
            part.remove_node(v)
            moved += 1
    return moved


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
    """Lowers what it can of an ATen graph into neoflow ops, in place (a graph
    with symbolic shapes: a copy of it), and returns it (run it with boxed
    arguments through make_boxed_func); its report goes to ``report()`` and,
    with its subgraphs, to ``into`` (a ``choice.Graph``) when given;
    ``measure`` times each subgraph's kernel against its eager operators over
    its first calls (``choice.Turns``)."""
    env = shapes.shape_env(gm)  # None: static shapes
    left: dict = {}  # nodes whose statement would hold a symbolic size as a value -> why (shapes)
    while True:
        work = gm if env is None else _copy(gm)
        for node in work.graph.nodes:
            if node.name in left:
                node.meta[aten_support.EAGER] = left[node.name]
        support = _Support(contractions, env is not None)
        with shapes.assuming(env) as facts:
            work, rep, sized = _lower_graph(work, support, graph, max_nodes or MAX_NODES, measure)
        if not sized.keys() - left.keys():
            break
        left.update(sized)
    work.neoflow_assumed = facts  # checked at each new shape (shapes.Guarded)
    rep["reinterpreted_views"] = views.reinterpret(work)
    subgraphs = [m for m in work.modules() if isinstance(m, Subgraph)]
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
    return work


def _copy(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    """A copy of gm's graph (its nodes' names and metadata kept) that lowering can change."""
    graph = torch.fx.Graph()
    graph.output(graph.graph_copy(gm.graph, {}))
    return torch.fx.GraphModule(gm, graph)


def _lower_graph(gm, support: _Support, graph: str, max_nodes: int, measure: bool):
    """gm with its supported nodes partitioned into subgraphs, each a Subgraph; its report; and the nodes
    whose statements would hold a symbolic size as a value ({name: why}: compile_graph leaves them to eager
    and lowers the graph again)."""
    from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner

    products = mmsum.merge(gm)  # sums of matrix products (a shared weight's gradient) as one product
    calls = [n for n in gm.graph.nodes if n.op == "call_function"]
    names = {n.name for n in calls}
    partitioner = CapabilityBasedPartitioner(gm, support, allows_single_node_partition=True)
    parts = [p for p in partitioner.propose_partitions() if not all(aten_support.is_view(n) for n in p.nodes)]
    parts = _chunks(gm, parts, max_nodes)
    eager_views = sum(_views_at_borders(gm, p) + _views_outside(gm, p) for p in parts)
    parts = [p for p in parts if p.nodes and not all(aten_support.is_view(n) for n in p.nodes)]
    lowered, made, sized = sum(len(p.nodes) for p in parts), 0, {}
    if parts:
        gm = partitioner.fuse_partitions(parts)
        for node in list(gm.graph.nodes):
            if node.op == "call_module" and node.target.startswith("fused_"):
                sub = getattr(gm, node.target)
                try:
                    made_sub = Subgraph(sub, f"fx_{graph}", measure)
                    setattr(gm, node.target, made_sub)
                    # and its entry (the C call) as an instance attribute, which the graph's code
                    # (self.fused_0(...)) finds without nn.Module.__getattr__
                    object.__setattr__(gm, node.target, made_sub.entry())
                    made += 1
                except Exception as e:  # noqa: BLE001 - whatever went wrong, the subgraph stays an eager GraphModule
                    n = sum(1 for x in sub.graph.nodes if x.op == "call_function")
                    lowered -= n
                    why = str(e) if isinstance(e, (Error, ValueError)) else f"{type(e).__name__}: {e}"
                    if isinstance(e, SizeAsValue) and e.node in names:
                        sized[e.node] = "its statement would hold a symbolic size as a value"
                    support.reasons[f"a subgraph of {n} operator calls"] = f"not lowered: {why}"
                    level = logging.DEBUG if isinstance(e, ConstantsOnly) else logging.WARNING
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
        # the kernels its subgraphs' first calls built (and of those, the ones for every size of a dimension
        # that varies), and the subgraphs that found one built before (for another shape: neoflow.dynamic)
        "kernels": {"built": 0, "every_size": 0, "reused": 0},
    }
    return gm, rep, sized


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
    k = rep.get("kernels")
    if k and (k["built"] or k["reused"]):
        lines.append(
            f"  kernels: {k['built']} built ({k['every_size']} for every size of the dimensions that vary), "
            f"{k['reused']} subgraph(s) ran one built before"
        )
    if rep.get("choice"):
        lines.append("  " + choice.choice_text(rep["choice"], [rep["graph"]]))
    return "\n".join(lines)


def _compiler(graph: str, explain: bool, contractions: str, measure: bool, into):
    from functorch.compile import make_boxed_func

    def compile_(gm, example_inputs):
        lowered = compile_graph(
            gm, example_inputs, graph=graph, explain=explain, contractions=contractions, measure=measure, into=into
        )
        fn = _code(lowered)
        facts = getattr(lowered, "neoflow_assumed", None)
        if facts:  # a graph with symbolic shapes whose lowering assumed facts of its sizes
            symbols = shapes.Symbols(gm)
            fn = shapes.Guarded(fn, _code(gm), symbols, facts) if symbols.readable(facts) else _code(gm)
        return make_boxed_func(fn)

    return compile_


def _code(gm: torch.fx.GraphModule):
    """gm's code itself, not the lazy first forward that compiles it and then calls the module."""
    lazy = getattr(getattr(torch.fx, "_lazy_graph_module", None), "_LazyGraphModule", None)
    if lazy is not None and hasattr(lazy, "force_recompile"):
        lazy.force_recompile(gm)
    return gm.forward


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
    return _compiled(gm, example_inputs, explain=explain, contractions=contractions, measure=measure)


def _compiled(gm: torch.fx.GraphModule, example_inputs, *, explain: bool, contractions: str, measure: bool):
    """gm compiled for its example inputs, static or symbolic shapes (shapes): through AOT Autograd, each
    of its graphs lowered (compile_graph), with the measured choice (choice.Chosen) unless measure is
    False."""
    from torch._dynamo.backends.common import aot_autograd

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
