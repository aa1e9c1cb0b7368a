"""Registers neoflow ops with PyTorch: torch.library custom ops with a fake
implementation and an autograd formula, and torch.autograd.Function
classes. The gradient formula is the gradient op the Go core derives from
the expression; it is itself an op, so double backward works the same way.
"""

from __future__ import annotations

import torch

from .op import Op, parse_sizes_text

_registered: dict[str, object] = {}


def _zeros_for_missing(op: Op, inputs, sizes: dict, grads) -> list[torch.Tensor]:
    if all(g is not None for g in grads):
        return [g.contiguous() for g in grads]
    shapes = op.output_shapes(*inputs, sizes=sizes)
    ref = inputs[0]
    return [
        g.contiguous() if g is not None else torch.zeros(shape, dtype=ref.dtype, device=ref.device)
        for g, shape in zip(grads, shapes)
    ]


def _backward(op: Op, inputs, sizes: dict, grads, needs) -> list[torch.Tensor | None]:
    """Gradients of op's inputs: runs the derived gradient op."""
    wrt = [bool(n) for n in needs[: len(op.inputs)]]
    if not any(wrt):
        return [None] * len(op.inputs)
    gop, gsizes = op.grad_op(*inputs, sizes=sizes, wrt=wrt)
    outs = gop(*inputs, *_zeros_for_missing(op, inputs, sizes, grads), sizes=gsizes)
    outs = list(outs) if isinstance(outs, tuple) else [outs]
    it = iter(outs)
    return [next(it) if w else None for w in wrt]


def register(op: Op):
    """The torch.library custom op for op (one per distinct op)."""
    name = f"neoflow::{op._custom_name}"
    # A registration made inside a scoped library (torch.library.opcheck does
    # that) is gone when the scope ends: check the dispatcher still has it.
    if name in _registered and hasattr(torch.ops.neoflow, op._custom_name):
        return _registered[name]
    params = ", ".join(f"Tensor x{i}" for i in range(len(op.inputs)))
    schema = f"({params}, str sizes) -> Tensor[]"

    def impl(*args):
        return op._launch(args[:-1], parse_sizes_text(args[-1]))

    custom = torch.library.custom_op(name, impl, mutates_args=(), schema=schema)

    @custom.register_fake
    def _(*args):
        tensors, sizes = args[:-1], parse_sizes_text(args[-1])
        ref = tensors[0]
        return [ref.new_empty(shape) for shape in op.output_shapes(*tensors, sizes=sizes)]

    def setup_context(ctx, inputs, output):
        tensors = inputs[:-1]
        ctx.save_for_backward(*tensors)
        ctx.sizes = parse_sizes_text(inputs[-1])
        wrt = [bool(n) for n in ctx.needs_input_grad[: len(tensors)]]
        if any(wrt):
            # Register the gradient op now, while tracing: a compiled backward
            # loaded from torch.compile's on-disk cache calls it by name
            # without running this module's backward.
            _ = op.grad_op(*tensors, sizes=ctx.sizes, wrt=wrt)[0].custom_op

    def backward(ctx, grads):
        grads = grads if isinstance(grads, (list, tuple)) else [grads]
        return (*_backward(op, ctx.saved_tensors, ctx.sizes, grads, ctx.needs_input_grad), None)

    custom.register_autograd(backward, setup_context=setup_context)
    _registered[name] = custom
    return custom


def make_function(op: Op):
    """A torch.autograd.Function running op; apply(sizes_dict_or_None, *tensors)."""

    class Function(torch.autograd.Function):
        @staticmethod
        def forward(ctx, sizes, *tensors):
            sizes = dict(sizes or {})
            outs = op._launch(tensors, sizes)
            ctx.save_for_backward(*tensors)
            ctx.sizes = sizes
            return outs[0] if len(outs) == 1 else tuple(outs)

        @staticmethod
        def backward(ctx, *grads):
            needs = ctx.needs_input_grad[1:]
            return (None, *_backward(op, ctx.saved_tensors, ctx.sizes, list(grads), needs))

    Function.__name__ = Function.__qualname__ = f"{op.name or 'op'}_Function"
    return Function
