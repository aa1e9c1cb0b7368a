"""Registers neoflow ops with PyTorch: torch.library custom ops with a fake
implementation and an autograd formula, for torch.compile and tensor
subclasses, and torch.autograd.Function classes, which eager calls on plain
tensors use (they cost less than the dispatcher). The gradient formula is
the gradient op the Go core derives from the expression; it is itself an
op, so double backward works the same way.

Like PyTorch eager, the forward keeps what the gradient reads: the forward
kernel's temporaries and outputs that the saving gradient op
(``Op.grad_op(..., saved=True)``) takes instead of recomputing them. A
backward that builds a graph (``create_graph=True``) runs the recomputing
gradient op instead, so that second derivatives flow through those
tensors' dependence on the inputs.
"""

from __future__ import annotations

import torch

from .op import Op, parse_sizes_text

_registered: dict[str, object] = {}
# The Op each registered name runs: the one registered last. Two Op objects
# of the same expression share one custom op (the name is the expression's
# hash), and its kernels are those of the Op it dispatches to, so a later
# Op takes it over; neoflow.tune, which forgets an Op's kernels to rebuild
# them, would otherwise see an earlier Op's kernels and tune nothing.
_latest: dict[str, Op] = {}


def _zeros_for_missing(op: Op, inputs, sizes: dict, grads) -> list[torch.Tensor]:
    if all(g is not None for g in grads):
        return [g.contiguous() for g in grads]
    shapes = op.output_shapes(*inputs, sizes=sizes)
    ref = inputs[0]
    return [
        g.contiguous() if g is not None else torch.zeros(shape, dtype=ref.dtype, device=ref.device)
        for g, shape in zip(grads, shapes)
    ]


def _backward(op: Op, inputs, sizes: dict, grads, needs, kept: dict) -> list[torch.Tensor | None]:
    """Gradients of op's inputs: runs the derived gradient op. ``kept`` maps
    the forward tensors the saving gradient op reads to the forward run's
    values; the recomputing gradient op runs when a graph is being built."""
    wrt = [bool(n) for n in needs[: len(op.inputs)]]
    if not any(wrt):
        return [None] * len(op.inputs)
    grads = _zeros_for_missing(op, inputs, sizes, grads[: len(op.outputs)])
    if torch.is_grad_enabled():  # create_graph: differentiate through the recomputation
        gop, gsizes = op.grad_op(*inputs, sizes=sizes, wrt=wrt)
        outs = gop(*inputs, *grads, sizes=gsizes)
    else:
        gop, gsizes = op.grad_op(*inputs, sizes=sizes, wrt=wrt, saved=True)
        outs = gop(*inputs, *grads, *[kept[n] for n in gop.saved], sizes=gsizes)
    outs = list(outs) if isinstance(outs, tuple) else [outs]
    it = iter(outs)
    return [next(it) if w else None for w in wrt]


def _keep(ctx, op: Op, tensors, sizes: dict, wrt, values) -> None:
    """Saves the inputs and the forward tensors the saving gradient op reads;
    ``values`` are the forward run's outputs followed by its temporaries."""
    needed = ()
    if any(wrt):
        # Derive (and register) the gradient op now, while tracing: a
        # compiled backward loaded from torch.compile's on-disk cache calls
        # it by name without running this module's backward. (A compiled
        # backward runs with grad mode off, so it is the saving one.)
        gop = op.grad_op(*tensors, sizes=sizes, wrt=wrt, saved=True)[0]
        _ = gop.custom_op
        needed = gop.saved
    kept = []
    if needed:
        names = list(op.outputs) + [n for n, _ in op.temporaries(*tensors, sizes=sizes)]
        by_name = dict(zip(names, values))
        kept = [by_name[n] for n in needed]
    ctx.save_for_backward(*tensors, *kept)
    ctx.kept_names = needed
    ctx.n_inputs = len(tensors)
    ctx.sizes = sizes


def _saved(ctx) -> tuple[list, dict]:
    saved = ctx.saved_tensors
    return saved[: ctx.n_inputs], dict(zip(ctx.kept_names, saved[ctx.n_inputs :]))


def register(op: Op):
    """The torch.library custom op for op (one per distinct op)."""
    name = f"neoflow::{op._custom_name}"
    _latest[name] = op
    # A registration made inside a scoped library (torch.library.opcheck does
    # that) is gone when the scope ends: check the dispatcher still has it.
    if name in _registered and hasattr(torch.ops.neoflow, op._custom_name):
        return _registered[name]
    params = ", ".join(f"Tensor x{i}" for i in range(len(op.inputs)))
    schema = f"({params}, str sizes) -> Tensor[]"

    def impl(*args):
        return _latest[name]._launch(args[:-1], parse_sizes_text(args[-1]), keep=True)

    custom = torch.library.custom_op(name, impl, mutates_args=(), schema=schema)

    @custom.register_fake
    def _(*args):
        tensors, sizes = args[:-1], parse_sizes_text(args[-1])
        ref, current = tensors[0], _latest[name]
        outs = current.output_shapes(*tensors, sizes=sizes)
        temps = [shape for _, shape in current.temporaries(*tensors, sizes=sizes)]
        return [ref.new_empty(shape) for shape in outs + temps]

    def setup_context(ctx, inputs, output):
        tensors, sizes = inputs[:-1], parse_sizes_text(inputs[-1])
        wrt = [bool(n) for n in ctx.needs_input_grad[: len(tensors)]]
        _keep(ctx, _latest[name], tensors, sizes, wrt, output)

    def backward(ctx, grads):
        grads = grads if isinstance(grads, (list, tuple)) else [grads]
        tensors, kept = _saved(ctx)
        return (*_backward(_latest[name], tensors, ctx.sizes, grads, ctx.needs_input_grad, kept), None)

    custom.register_autograd(backward, setup_context=setup_context)
    _registered[name] = custom
    return custom


def make_function(op: Op):
    """A torch.autograd.Function running op; apply(sizes_dict_or_None, *tensors)."""

    class Function(torch.autograd.Function):
        @staticmethod
        def forward(ctx, sizes, *tensors):
            sizes = dict(sizes or {})
            outs = op._launch(tensors, sizes, keep=True)
            wrt = [bool(n) for n in ctx.needs_input_grad[1:]]
            _keep(ctx, op, tensors, sizes, wrt, outs)
            outs = outs[: len(op.outputs)]
            return outs[0] if len(outs) == 1 else tuple(outs)

        @staticmethod
        def backward(ctx, *grads):
            tensors, kept = _saved(ctx)
            return (None, *_backward(op, tensors, ctx.sizes, list(grads), ctx.needs_input_grad[1:], kept))

    Function.__name__ = Function.__qualname__ = f"{op.name or 'op'}_Function"
    return Function
