"""Graphs with symbolic shapes: compiled once per concrete shape (``PerShape``).

Dynamo hands a backend a graph with symbolic sizes under ``torch.compile(..., dynamic=True)``, and by
default once a graph is called with a second shape (automatic dynamic shapes): a training loop over
sequences of varying length, or an epoch's smaller last batch. Such a graph is compiled again, as the
static graphs are, for each set of input shapes it is called with (the graph's code computes its sizes
from its inputs, so it traces to a static graph for each). The subgraphs of those graphs share their
neoflow ops (subgraph.Subgraph._define), and an op whose dimensions vary builds one kernel for every size
(neoflow.dynamic): from the second shape on, a new shape costs its graph's compile but builds no kernel.
Up to ``max_shapes()`` shapes are compiled per graph (``MAX_SHAPES``; ``MAX_SHAPES_STATIC`` when ops build
a kernel per shape, ``configure(dynamic="static")``), after which further shapes run the graph in eager
PyTorch (its operators without the backend), with one warning."""

from __future__ import annotations

import copy
import logging
import threading

import torch

log = logging.getLogger("neoflow.compile")

# Shapes compiled per graph before further ones run in eager: each costs a graph compile (seconds for a
# transformer); with a kernel per shape also its kernels' builds (then as Dynamo's own recompile limit, 8).
MAX_SHAPES = 64
MAX_SHAPES_STATIC = 8


def max_shapes() -> int:
    """How many shapes a graph with dynamic shapes is compiled for (see the module's doc)."""
    from .. import config

    return MAX_SHAPES if config.dynamic_mode() == "auto" else min(MAX_SHAPES, MAX_SHAPES_STATIC)


def symbolic(example_inputs) -> bool:
    """Whether Dynamo's example inputs carry symbolic sizes (a SymInt input, or a tensor with a symbolic size,
    stride or offset)."""
    for a in example_inputs:
        if isinstance(a, torch.SymInt):
            return True
        if isinstance(a, torch.Tensor):
            if any(isinstance(d, torch.SymInt) for d in (*a.shape, *a.stride(), a.storage_offset())):
                return True
    return False


class PerShape:
    """A graph with symbolic shapes, called as the static graph compiled (by ``compile_static(gm, args)``) for
    its arguments' shapes, strides, dtypes and numbers; ``shapes`` counts those compiled."""

    def __init__(self, gm: torch.fx.GraphModule, compile_static):
        self.gm = gm
        self.compile_static = compile_static
        # the positions of inputs whose value the graph reads as a number (``item()``: a float attribute
        # under dynamic=True, such as a layer norm's eps): each compiled graph takes its value as a constant
        self.values = _read_as_numbers(gm)
        self.compiled: dict = {}  # key -> the compiled graph (or the graph itself: eager)
        self.shapes = 0  # of the keys, those compiled
        self.lock = threading.Lock()

    def __call__(self, *args):
        key = tuple([_key(a) for a in args])
        if self.values:
            key += tuple([args[i].item() for i in self.values])
        fn = self.compiled.get(key)
        if fn is None:
            fn = self._new(key, args)
        return fn(*args)

    def _new(self, key, args):
        with self.lock:
            fn = self.compiled.get(key)
            if fn is not None:
                return fn
            limit = max_shapes()
            if self.shapes >= limit:
                if len(self.compiled) == self.shapes:  # the first shape past the limit
                    log.warning(
                        "neoflow: a graph with dynamic shapes was compiled for %d shapes; further shapes run it "
                        "in eager (mark the varying dimensions static, or pad them to a few sizes)",
                        limit,
                    )
                fn = self.gm.forward
            else:
                shapes = [tuple(a.shape) for a in args if isinstance(a, torch.Tensor)]
                log.info("neoflow: compiling a graph with dynamic shapes for the inputs' shapes %s", shapes)
                fn = self.compile_static(_constants(self.gm, {i: args[i].item() for i in self.values}), list(args))
                self.shapes += 1
            self.compiled[key] = fn
            return fn


def _key(a):
    if isinstance(a, torch.Tensor):
        return (a.shape, a.stride(), a.storage_offset(), a.dtype, a.device, a.requires_grad)
    if isinstance(a, (int, float, bool)):
        return (type(a), a)
    return type(a)


def _read_as_numbers(gm: torch.fx.GraphModule) -> list[int]:
    """The positions of gm's inputs that some node reads as a number (``x.item()``)."""
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    return [i for i, p in enumerate(placeholders) if any(_is_item(u) for u in p.users)]


def _is_item(node) -> bool:
    return (node.op == "call_method" and node.target == "item") or (
        node.op == "call_function" and node.target in (torch.Tensor.item, torch.ops.aten._local_scalar_dense.default)
    )


def _constants(gm: torch.fx.GraphModule, values: dict) -> torch.fx.GraphModule:
    """A copy of gm in which the numbers read from the inputs at these positions are these constants."""
    if not values:
        return gm
    graph = copy.deepcopy(gm.graph)
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    for i, value in values.items():
        for item in [u for u in placeholders[i].users if _is_item(u)]:
            for user in list(item.users):
                user.args = torch.fx.map_arg(user.args, lambda n, item=item, v=value: v if n is item else n)
                user.kwargs = torch.fx.map_arg(user.kwargs, lambda n, item=item, v=value: v if n is item else n)
            graph.erase_node(item)
    return torch.fx.GraphModule(gm, graph)
