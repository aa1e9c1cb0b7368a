"""torch.vmap over ops: every op's custom op has a batching rule that adds a
batch index to the op's expression, first in every access of a batched input
and of every tensor the op writes, and runs that op once on the whole batch.
The index language makes this exact: the batched op is the op, per example.
The Go core makes the batched op's statements (``ir.Batched``, through the
``nf_transform`` request)."""

from __future__ import annotations

import weakref

from . import _lib
from ._proto import neoflow_pb2 as pb
from .sizes import parse_sizes_text, sizes_text

# op -> {flags: (batched op, batch index name)}
_batched: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def batched_op(op, flags: tuple[bool, ...]):
    """op with a batch index on the inputs flags marks (and on everything it writes), and that index's name."""
    cache = _batched.setdefault(op, {})
    if flags not in cache:
        names = [n for n, f in zip(op.inputs, flags) if f]
        request = pb.TransformRequest(op_id=op.op_id, batch=pb.BatchTransform(inputs=names))
        resp = _lib.call("nf_transform", request, pb.TransformResponse)
        bop = type(op)(  # an Op, made without importing op.py (which imports this module's users)
            resp.source,
            name=f"{op.name or 'op'}_vmap",
            inputs=list(op.inputs),
            outputs=list(op.outputs),
            sizes=op.sizes,
            consts=op.consts,
        )
        cache[flags] = (bop, resp.batch_index)
    return cache[flags]


def _batched_args(op, info, dims, tensors, text):
    """The batched op for a vmap level and its arguments: the inputs with their batch dimension first and the
    sizes text with the batch index's extent."""
    flags = tuple(d is not None for d in dims)
    moved = [t.movedim(d, 0) if d is not None else t for t, d in zip(tensors, dims)]
    bop, var = batched_op(op, flags)
    sizes = parse_sizes_text(text)
    sizes[var] = info.batch_size
    return bop, moved, sizes_text(bop.call_sizes(sizes))


def batch_rule(op, info, dims, tensors, text):
    """The custom op's vmap rule: the batched op on the inputs with their batch dimension first."""
    bop, moved, sizes = _batched_args(op, info, dims, tensors, text)
    outs = list(bop.custom_op(moved, sizes))
    return outs, [0] * len(outs)


def batched_call(op, info, dims, tensors, text):
    """The vmap rule of the op's autograd.Function (torch.func's transforms): the batched op through its own
    autograd.Function, so that the transforms below this vmap level (grad, jvp) differentiate it; its returned
    tensors (outputs, then temporaries) with their batch dimension first. (Letting torch.func derive the rule
    from the unbatched Function instead cost 2.4 times as long for a Hessian.)"""
    bop, moved, sizes = _batched_args(op, info, dims, tensors, text)
    outs = bop.custom_op.neoflow_transformable.apply(*moved, sizes)
    return tuple(outs), (0,) * len(outs)
