"""A neoflow op inside a compiled model, inlined as its statements.

Under torch.compile a neoflow op is a custom op (``neoflow::<name>``, its
gradient another); in the ATen graph it is one node returning the op's
outputs and then the temporaries its gradient reads. ``lowering.Lowering``
writes such a node as the op's own statements so that they fuse with the
statements around them. The Go core makes them (``ir.Instance``, through
the ``nf_transform`` request): every tensor the op writes becomes
``U<k>_<name>``, every index variable ``u<k>_<name>``, named constants
their values, and every read of an input the read of the node that feeds
it, given here as an expression over ``_0, _1, ...`` (the read's indices;
an input that is a view is stored first, so that the op's accesses stay
plain). Index ranges the op infers are inferred again from the same
accesses; the sizes it was given, at its definition or at the call, are
given.
"""

from __future__ import annotations

import torch

from .. import _lib, dsl
from .._proto import neoflow_pb2 as pb


def op_of(node):
    """The neoflow Op a custom-op node runs, or None for any other node."""
    target = node.target
    if not isinstance(target, torch._ops.OpOverload) or target.namespace != "neoflow":
        return None
    from ..autograd import op_for

    try:
        return op_for(target.name())
    except KeyError:
        return None


def unsupported(node, op) -> str | None:
    if op.scatters:
        return "a neoflow op that scatters through an index tensor"
    if not isinstance(node.args[-1], str):
        return "a neoflow op call without its sizes"
    return None


def inline(low, k: int, node, op) -> None:
    """Appends op's statements for node to low (a lowering.Lowering)."""
    from ..sizes import parse_sizes_text

    args = list(node.args[0])  # the custom op's Tensor[] argument
    sizes = op.call_sizes(parse_sizes_text(node.args[-1]))
    fakes = [a.meta["val"] for a in args]
    temps = [name for name, _ in op.temporaries(*fakes, sizes=sizes)]
    written = list(op.outputs) + temps
    reads = {}
    for j, (name, a) in enumerate(zip(op.inputs, args)):
        shape = tuple(a.meta["val"].shape)
        at = [dsl.Expr(f"_{d}") for d in range(len(shape))]  # the template's placeholders for the read's indices
        if a in low.views:
            # an input that is a view is stored first: the op infers its index ranges from plain accesses of
            # its inputs, which a view's index map would make composite
            v = low.index_vars(k, shape, prefix=f"m{j}_")
            stored = f"V{k}_{j}"
            low.emit(stored, v, "=", low.at(a, v))
            low.shapes[stored] = shape or (1,)
            reads[name] = str(dsl.Tensor(stored)[tuple(at) or (0,)])
        else:
            reads[name] = str(low.at(a, at))
    prefix = f"U{k}_"
    request = pb.TransformRequest(
        op_id=op.op_id, inline=pb.InlineTransform(tensor_prefix=prefix, index_prefix=f"u{k}_", reads=reads)
    )
    low.lines.extend(_lib.call("nf_transform", request, pb.TransformResponse).source.strip().splitlines())
    for v, n in sizes.items():
        low.sizes[f"u{k}_{v}"] = n
    for name, v in zip(written, node.meta["val"]):
        low.shapes[prefix + name] = tuple(v.shape) or (1,)
    low.names[node] = tuple(prefix + name for name in written)
