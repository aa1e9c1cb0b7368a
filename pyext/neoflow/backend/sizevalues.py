"""Symbolic sizes used as values in a lowered subgraph of a graph with dynamic shapes (backend/shapes.py):
a mean's 1/N over a dimension that varies, batch norm's count of the elements it normalizes, a size the
graph computed and passes in. An op's text names no size (one op serves every shape), so the op counts
each size it needs by statements of its own, ``One[z] = 1.0`` and ``Cnt[o] += One[r]`` over loops that run
to that size (given at each call, as every extent is), and the value is an expression of those counts.
A float32 count is exact up to 2**24."""

from __future__ import annotations

import contextlib
import functools
import operator

import torch

from .. import dsl
from . import shapes
from .aten_support import num, val_of


class SizeAsValue(ValueError):
    """A node of a graph with symbolic shapes whose statement would hold a size as a value that is not
    counted (``N % 3``, a slice's bounds): ``node`` names it, for the backend to leave it to eager."""

    def __init__(self, node: str):
        super().__init__(f"{node}: its statement would hold a symbolic size as a value")
        self.node = node


@contextlib.contextmanager
def named(node):
    """Within: dsl's error for a symbolic size (a SymInt or SymFloat in an expression) is node's SizeAsValue."""
    try:
        yield
    except TypeError as e:
        if not str(e).startswith("cannot use Sym"):
            raise
        raise SizeAsValue(node.name) from e


def is_size(node) -> bool:
    """Whether node's value is a symbolic size (or a number computed from sizes) of a graph with dynamic
    shapes."""
    return isinstance(val_of(node), (torch.SymInt, torch.SymFloat))


def number(low, x) -> dsl.Expr:
    """A number of the graph as an expression in lowering low: a Python number's literal, or a symbolic
    size's value."""
    if isinstance(x, (torch.SymInt, torch.SymFloat)):
        return value(low, x.node.expr)
    return num(x)


def value(low, e) -> dsl.Expr:
    """The value of symbolic size e (a sympy expression) in lowering low: numbers as literals, products,
    integer powers, true divisions and sums of sizes as such, and each size among them, or integer
    expression that is no polynomial in its sizes (a dimension's ``(s - 1) // 2 + 1``), as its count. Any
    other expression raises the TypeError that makes its node a lowering.SizeAsValue."""
    if e.is_Integer or e.is_Rational or e.is_Float:
        return num(float(e))
    name = type(e).__name__
    if name in ("FloatTrueDiv", "IntTrueDiv"):  # PyTorch's true division of sizes
        return value(low, e.args[0]) / value(low, e.args[1])
    if name == "ToFloat":
        return value(low, e.args[0])
    whole = e.is_integer and e.free_symbols and not e.is_polynomial(*e.free_symbols)
    if e.is_Mul or (e.is_Add and not whole):
        parts = [value(low, a) for a in e.args]
        return functools.reduce(operator.add if e.is_Add else operator.mul, parts)
    if e.is_Pow and e.exp.is_Integer and e.exp != 0:
        base = functools.reduce(operator.mul, [value(low, e.base)] * abs(int(e.exp)))
        return base if e.exp > 0 else 1.0 / base
    if (e.is_Symbol or whole) and _positive(low, e):
        return dsl.Tensor(_count(low, e))[0]
    raise TypeError(f"cannot use SymInt in a neoflow expression ({e}: a size that is not counted)")


def _positive(low, e) -> bool:
    """Whether size e is at least 1 for every value of its sizes the graph allows (a count runs a loop to it)."""
    env = shapes.shape_env_of(e, low.env)
    return env is not None and env.bound_sympy(e).lower >= 1


def _count(low, e) -> str:
    """The tensor that holds size e's value in lowering low, counted once per lowering."""
    name = low.counts.get(e)
    if name is None:
        k = len(low.counts)
        name = low.counts[e] = f"Cnt{k}"
        (z,) = low.index_vars(k, [e], prefix="zc")
        (r,) = low.index_vars(k, [e], prefix="rc")
        (o,) = low.index_vars(k, [1], prefix="oc")
        low.lines.append(dsl.statement(dsl.Tensor(f"One{k}")[z], "=", num(1.0)))
        low.lines.append(dsl.statement(dsl.Tensor(name)[o], "+=", dsl.Tensor(f"One{k}")[r]))
    return name
