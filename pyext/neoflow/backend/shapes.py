"""Graphs with symbolic shapes: lowered once, for every size (``Symbols``).

Dynamo hands a backend a graph with symbolic sizes under ``torch.compile(..., dynamic=True)``, and by
default once a graph is called with a second shape (automatic dynamic shapes): a training loop over
sequences of varying length, or an epoch's smaller last batch. AOT Autograd traces such a graph once, and
its forward and backward come to the backend with sizes that are symbols (``s0``, ``s27 * s52``). They are
lowered once, as static graphs are: a statement's text names no size (its index variables' extents are
given at each call), so one neoflow op per subgraph serves every shape, and from the op's second shape on
one kernel for every size of the dimensions that vary (neoflow.dynamic).

A subgraph keeps its extents as expressions in the symbols (``Symbols``), each symbol read at a call from a
dimension of one of its inputs, and evaluates them once per new shape of its inputs. A node whose lowering
needs a size as a value (a mean's 1/N over a dimension that varies, a slice's bounds) is left to eager.
What the lowering's comparisons of sizes decided beyond what Dynamo's guards already ensure is not added
to Dynamo's guards (``assuming``): those facts are checked at each new shape of the graph's arguments, and
a shape that breaks one runs the graph in eager (``Guarded``)."""

from __future__ import annotations

import contextlib
import logging

import sympy
import torch

from .aten_support import val_of

log = logging.getLogger("neoflow.compile")


def shape_env(gm: torch.fx.GraphModule):
    """The shape environment of gm's symbolic sizes, or None for a graph of static shapes."""
    for node in gm.graph.nodes:
        v = val_of(node)
        for d in (*v.shape, *v.stride()) if isinstance(v, torch.Tensor) else (v,):
            if isinstance(d, torch.SymInt):
                return d.node.shape_env
    return None


def shape_env_of(e, env):
    """env, the shape environment of size e (a sympy expression), when it knows e's sizes; else None."""
    return env if env is not None and e.free_symbols <= env.var_to_range.keys() else None


@contextlib.contextmanager
def assuming(env):
    """Within: what comparisons of env's symbolic sizes decide is not added to env's guards, which Dynamo
    would install (a fact such as ``s0 == 5`` would recompile the graph for every size), but collected into
    the list yielded (sympy expressions in the sizes), for ``Guarded`` to check. Without env, or with a
    PyTorch whose shape environment cannot say what it suppressed, nothing is collected and the guards are
    added as usual."""
    facts: list = []
    # the cache of decisions made before (which are not logged again): cleared, so that each is made again
    cached = getattr(type(env), "_inner_evaluate_expr", None) if env is not None else None
    cache = getattr(cached, "cache_clear", None)
    if cache is None or not hasattr(env, "_log_guard") or not hasattr(env, "suppress_guards"):
        yield facts
        return
    original = env._log_guard

    def log_guard(prefix, g, forcing_spec):
        if "suppressed" in prefix:
            facts.append(g)
        return original(prefix, g, forcing_spec=forcing_spec)

    cache()
    env._log_guard = log_guard
    try:
        with env.suppress_guards():
            yield facts
    finally:
        del env._log_guard
        cache()


class Symbols:
    """The symbolic sizes of a graph or subgraph: where a call's arguments hold each (``where``: a symbol, or
    the expression of a dimension that is no symbol alone, such as a convolution's ``(s1 - 1) // 2 + 1`` ->
    (argument position, its dimension, or None for an argument that is the size itself))."""

    def __init__(self, gm: torch.fx.GraphModule):
        self.where: dict = {}
        placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
        for pos, node in enumerate(placeholders):
            v = val_of(node)
            dims = enumerate(v.shape) if isinstance(v, torch.Tensor) else [(None, v)]
            for d, n in dims:
                if isinstance(n, torch.SymInt):
                    self.where.setdefault(n.node.expr, (pos, d))

    def readable(self, x) -> bool:
        """Whether every size of x (a size, a sympy expression, or nested tuples, lists and dicts of them) is
        read from the arguments: an expression in the symbols and dimensions' expressions they hold."""
        held = {e: sympy.Integer(1) for e in self.where}
        return all(not e.xreplace(held).free_symbols for e in _exprs(x))

    def values(self, args) -> dict:
        """The values of the symbols and dimensions' expressions (``where``) at a call with these arguments."""
        return {e: sympy.Integer(args[pos] if d is None else args[pos].shape[d]) for e, (pos, d) in self.where.items()}

    def at(self, x, values: dict):
        """x (a size, or nested tuples, lists and dicts of sizes) with each symbolic size evaluated."""
        if isinstance(x, (torch.SymInt, sympy.Basic)):
            e = x.node.expr if isinstance(x, torch.SymInt) else x
            return int(values[e] if e in values else e.xreplace(values))
        if isinstance(x, dict):
            return {k: self.at(v, values) for k, v in x.items()}
        if isinstance(x, (tuple, list)):
            return type(x)(self.at(v, values) for v in x)
        return x


class Guarded:
    """A lowered graph whose lowering assumed facts of its symbolic sizes (``assuming``): each new shape of
    its arguments runs it where the facts hold and the graph as eager runs it where they do not."""

    def __init__(self, lowered, eager, symbols: Symbols, facts: list):
        self.lowered, self.eager, self.symbols, self.facts = lowered, eager, symbols, facts
        self.holds: dict = {}  # by the arguments' shapes and numbers

    def __call__(self, *args):
        key = tuple([a.shape if isinstance(a, torch.Tensor) else a for a in args])
        ok = self.holds.get(key)
        if ok is None:
            values = self.symbols.values(args)
            ok = self.holds[key] = all(bool(f.xreplace(values)) for f in self.facts)
            if not ok:
                log.info(
                    "neoflow: a graph runs in eager at sizes %s, where its lowering's assumptions %s break",
                    values,
                    self.facts,
                )
        return self.lowered(*args) if ok else self.eager(*args)


def _exprs(x) -> list:
    """The sympy expressions of the symbolic sizes in x (nested tuples, lists and dicts of them)."""
    if isinstance(x, torch.SymInt):
        return [x.node.expr]
    if isinstance(x, sympy.Basic):
        return [x]
    if isinstance(x, dict):
        x = list(x.values())
    if isinstance(x, (tuple, list)):
        return [e for v in x for e in _exprs(v)]
    return []
