"""The view operators a compiled graph runs in eager, made reinterpretations of their input's memory.

After lowering, a graph's code still calls the operators that stayed in
eager (matrix products, attention, and the views between them and the
subgraphs: ``view``, ``t``, ``transpose``, ``permute``, ``expand``, ...),
each through its ``torch.ops.aten`` overload. For a view that costs 3-5 us
of host time on the 2-core Xeon of bench/results (the overload's Python
call and its schema-driven parsing, then the dispatcher), and a transformer's
training step runs a hundred or more of them: on GPT-2 at the zoo's size,
the views of AOT Autograd's graphs took more time than every lowered kernel
saved. A view's result is fixed by its input's sizes and strides, which the
graph was traced with: so where those are static, the node calls
``view``, which checks the input's strides against the traced ones and
makes the result's sizes, strides and storage offset directly (Inductor
does the same with its ``reinterpret_tensor``), under 1.5 us. An input laid
out otherwise (a lowered subgraph may return a tensor in another layout
than eager's) takes the operator as before: the result is the same either
way.

A node qualifies when its operator is a view by its schema (its result
aliases its first argument, which it does not write) or is
``_unsafe_view`` (a reshape's view that autograd does not track), it returns one
tensor of its input's dtype, and both its input's and its result's traced
sizes, strides and offsets are plain integers (symbolic shapes keep their
operators).
"""

from __future__ import annotations

import torch

try:  # PyTorch's own (Dynamo's guards): the tensor at other sizes, strides and offset, no dispatch
    from torch._C._dynamo.guards import _reinterpret_tensor as _reinterpret
except ImportError:  # pragma: no cover - older or trimmed builds

    def _reinterpret(x, size, stride, delta):
        return x.as_strided(size, stride, x.storage_offset() + delta)


# a view that autograd does not see as one (a reshape's on a tensor of its own): its result shares the input's
# memory all the same, as a reinterpretation's does (which is not a view to autograd either)
_UNSAFE_VIEW = torch.ops.aten._unsafe_view.default


def view(strides: tuple, size: tuple, stride: tuple, delta: int, op, x, *args, **kwargs):
    """op(x, *args, **kwargs), a view, made from x's memory at the traced size, stride and offset (delta, from
    x's) when x has the traced strides, else by op."""
    if x.stride() == strides:
        return _reinterpret(x, size, stride, delta)
    return op(x, *args, **kwargs)


def reinterpret(gm: torch.fx.GraphModule) -> int:
    """Makes gm's qualifying view nodes (see the module's doc) call ``view``, in place; returns how many."""
    made = 0
    for node in gm.graph.nodes:
        plan = _plan(node)
        if plan is not None:
            node.target = view
            node.args = (*plan, *node.args)
            made += 1
    if made:
        gm.recompile()
    return made


def _plan(node: torch.fx.Node):
    """(input's strides, size, stride, offset from the input's, operator) for a qualifying node, else None."""
    op = node.target
    if node.op != "call_function" or not isinstance(op, torch._ops.OpOverload):
        return None
    if not op.is_view and op is not _UNSAFE_VIEW:
        return None
    returns = op._schema.returns
    if len(returns) != 1 or str(returns[0].type) != "Tensor" or not node.args:
        return None
    src = node.args[0]
    if not isinstance(src, torch.fx.Node):
        return None
    a, out = src.meta.get("val"), node.meta.get("val")
    if not (isinstance(a, torch.Tensor) and isinstance(out, torch.Tensor)):
        return None
    if a.dtype != out.dtype or a.layout != torch.strided or out.layout != torch.strided or a.device != out.device:
        return None
    strides, size, stride = tuple(a.stride()), tuple(out.shape), tuple(out.stride())
    offset_in, offset_out = a.storage_offset(), out.storage_offset()
    if not all(type(v) is int for v in (*strides, *size, *stride, offset_in, offset_out)):
        return None
    return strides, size, stride, offset_out - offset_in, op
