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

import concurrent.futures
import os
import threading
import weakref

import torch

from . import config
from ._lib import launcher
from .sizes import parse_sizes_text

# Registration happens when an op is defined (Op._setup), outside any traced
# code, under one lock: torch.compile cannot trace torch.library's
# registration, and two threads registering one name would each make a
# Library, the first of which is then destroyed under its users.
_lock = threading.RLock()
_registered: dict[str, object] = {}
# The Op each registered name runs: the one registered last, held weakly so
# that dropping every Op of an expression releases it. Two Op objects of the
# same expression share one custom op (the name is the expression's hash),
# and its kernels are those of the Op it dispatches to, so a later Op takes
# it over; neoflow.tune, which forgets an Op's kernels to rebuild them,
# would otherwise see an earlier Op's kernels and tune nothing.
_latest: dict[str, weakref.ref] = {}
# How to define the op again once every Op of a name is gone (a compiled
# graph may still call it), and the Op so rebuilt.
_definitions: dict[str, tuple] = {}
_rebuilt: dict[str, object] = {}


def op_for(name: str):
    """The Op a registered custom op runs."""
    ref = _latest.get(name)
    op = ref() if ref is not None else None
    if op is not None:
        return op
    with _lock:
        ref = _latest.get(name)
        op = ref() if ref is not None else None
        if op is None:
            op = _rebuilt.get(name)
        if op is None:
            rebuild, args = _definitions[name]
            op = _rebuilt[name] = rebuild(*args)
        return op


_forward_ad = torch.autograd.forward_ad


def dual(tensors) -> bool:
    """Whether a tensor carries a forward-mode tangent (torch.autograd.forward_ad)."""
    if getattr(_forward_ad, "_current_level", 0) < 0:  # no dual level entered: the common case, one read
        return False  # (a PyTorch without that private counter gets every tensor checked instead)
    return any(isinstance(t, torch.Tensor) and _forward_ad.unpack_dual(t).tangent is not None for t in tensors)


def _zeros_for_missing(op, inputs, sizes: dict, grads) -> list[torch.Tensor]:
    if all(g is not None for g in grads):
        return [g.contiguous() for g in grads]
    shapes = op.output_shapes(*inputs, sizes=sizes)
    ref = next((t for t in inputs if t.is_floating_point()), inputs[0])
    dtype = ref.dtype if ref.is_floating_point() else torch.float32  # the gradient op's dtype, for integer outputs too
    return [
        g.contiguous() if g is not None else torch.zeros(shape, dtype=dtype, device=ref.device)
        for g, shape in zip(grads, shapes)
    ]


def _backward(op, inputs, sizes: dict, grads, needs, kept: dict) -> list[torch.Tensor | None]:
    """Gradients of op's inputs: runs the derived gradient op. ``kept`` maps
    the forward tensors the saving gradient op reads to the forward run's
    values; the recomputing gradient op runs when a graph is being built,
    ``kept`` is None, or an input carries a forward-mode tangent (the kept
    temporaries' tangents are zeros: the gradient's own tangent must come
    through their recomputation)."""
    wrt = [bool(n) for n in needs[: len(op.inputs)]]
    if not any(wrt):
        return [None] * len(op.inputs)
    grads = _zeros_for_missing(op, inputs, sizes, grads[: len(op.outputs)])
    if torch.is_grad_enabled() or kept is None or dual(inputs):
        # create_graph: differentiate through the recomputation; kept is None
        # when the forward did not have what the saving gradient reads.
        gop, gsizes = op.grad_op(*inputs, sizes=sizes, wrt=wrt)
        outs = gop(*inputs, *grads, sizes=gsizes)
    else:
        gop, gsizes = op.grad_op(*inputs, sizes=sizes, wrt=wrt, saved=True)
        outs = gop(*inputs, *grads, *[kept[n] for n in gop.saved], sizes=gsizes)
    outs = list(outs) if isinstance(outs, tuple) else [outs]
    it = iter(outs)
    return [next(it) if w else None for w in wrt]


def _keep(ctx, op, tensors, sizes: dict, wrt, values) -> None:
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
    ctx.recompute = False
    if needed:
        names = list(op.outputs) + [n for n, _ in op.temporaries(*tensors, sizes=sizes)]
        by_name = dict(zip(names, values))
        if all(n in by_name for n in needed):
            kept = [by_name[n] for n in needed]
        else:
            # The kernel does not store one of them: fusion keeps none of a
            # saving gradient op's temporaries, since it runs without
            # autograd; differentiated anyway, it recomputes.
            needed, ctx.recompute = (), True
    ctx.save_for_backward(*tensors, *kept)
    ctx.kept_names = needed
    ctx.n_inputs = len(tensors)
    ctx.sizes = sizes


def _saved(ctx) -> tuple[list, dict | None]:
    saved = ctx.saved_tensors
    if ctx.recompute:
        return saved[: ctx.n_inputs], None
    return saved[: ctx.n_inputs], dict(zip(ctx.kept_names, saved[ctx.n_inputs :]))


def _flat_needs(needs) -> list:
    """ctx.needs_input_grad as one flag per input tensor: the custom op's
    context nests the list argument's flags in backward, and an
    autograd.Function's are flat."""
    if needs and isinstance(needs[0], (list, tuple)):
        return list(needs[0])
    return list(needs)


def register(op):
    """The torch.library custom op for op (one per distinct op), made on
    first use of its name; op becomes the Op that name runs."""
    name = f"neoflow::{op.custom_name}"
    with _lock:
        _latest[name] = weakref.ref(op)
        _definitions[name] = op.__reduce__()  # (rebuild, (definition,)): plain data
        _rebuilt.pop(name, None)
        # A registration made inside a scoped library (torch.library.opcheck
        # does that) is gone when the scope ends: check the dispatcher still has it.
        if name in _registered and hasattr(torch.ops.neoflow, op.custom_name):
            return _registered[name]
        custom = _make_custom_op(name)
        _registered[name] = custom
        return custom


def _make_custom_op(name: str):
    # The inputs are one Tensor[] argument: a schema takes at most 64
    # arguments, and an op (a gradient op above all) may have more inputs.
    schema = "(Tensor[] inputs, str sizes) -> Tensor[]"

    def impl(inputs, sizes):
        return op_for(name)._launch(tuple(inputs), parse_sizes_text(sizes), keep=True)

    custom = torch.library.custom_op(name, impl, mutates_args=(), schema=schema)

    @custom.register_fake
    def _(inputs, sizes):
        ref, current = inputs[0], op_for(name)
        outs, temps, dtypes = current.buffers(tuple(inputs), parse_sizes_text(sizes))  # one lookup
        shapes = outs + [shape for _, shape in temps]
        return [ref.new_empty(shape, dtype=dt) for shape, dt in zip(shapes, dtypes)]

    def setup_context(ctx, inputs, output):
        tensors, sizes = tuple(inputs[0]), parse_sizes_text(inputs[1])
        # Flat here (one flag per list element first), nested in backward.
        wrt = [bool(n) for n in _flat_needs(ctx.needs_input_grad)[: len(tensors)]]
        ctx.op = op_for(name)  # the backward runs the same Op, even if another takes the name over
        _keep(ctx, ctx.op, tensors, sizes, wrt, output)

    def backward(ctx, grads):
        grads = grads if isinstance(grads, (list, tuple)) else [grads]
        tensors, kept = _saved(ctx)
        needs = _flat_needs(ctx.needs_input_grad)
        return list(_backward(ctx.op, tensors, ctx.sizes, grads, needs, kept)), None

    custom.register_autograd(backward, setup_context=setup_context)

    def vmap_rule(info, in_dims, inputs, sizes):
        from .vmap import batch_rule

        return batch_rule(op_for(name), info, in_dims[0], inputs, sizes)

    custom.register_vmap(vmap_rule)

    class Transformable(torch.autograd.Function):
        """The custom op as an autograd.Function with setup_context, which
        torch.func's transforms require (the one register_autograd makes
        has none): the same forward, context and backward; vmap runs the
        batched op (vmap.py); jvp, forward mode (torch.func.jvp, jacfwd,
        hessian, torch.autograd.forward_ad), runs the derived tangent op."""

        @staticmethod
        def vmap(info, in_dims, *args):
            from .vmap import batched_call

            return batched_call(op_for(name), info, in_dims[:-1], args[:-1], args[-1])

        @staticmethod
        def forward(*args):
            return tuple(custom(list(args[:-1]), args[-1]))

        @staticmethod
        def setup_context(ctx, inputs, output):
            setup_context(ctx, (list(inputs[:-1]), inputs[-1]), list(output))
            ctx.save_for_forward(*inputs[:-1])
            ctx.returned = [(o.shape, o.dtype) for o in output]

        @staticmethod
        def backward(ctx, *grads):
            return (*backward(ctx, list(grads))[0], None)

        @staticmethod
        def jvp(ctx, *tangents):
            return _jvp(ctx.op, ctx.saved_tensors[: ctx.n_inputs], ctx.sizes, tangents[:-1], ctx.returned)

    custom.neoflow_transformable = Transformable
    return custom


def _jvp(op, inputs, sizes: dict, tangents, returned) -> tuple:
    """The tangents of a call's returned tensors, (shape, dtype) each (outputs, then temporaries), given its
    inputs' tangents (None for an input without one): the derived tangent op's outputs for the outputs, zeros for
    the temporaries (functorch takes no None for a floating-point output), None for integer tensors."""
    wrt = [t is not None and x.is_floating_point() for x, t in zip(inputs, tangents)]
    outs = ()
    if any(wrt):
        top, tsizes = op.tangent_op(*inputs, sizes=sizes, wrt=wrt)
        outs = top(*inputs, *[t for t, w in zip(tangents, wrt) if w], sizes=tsizes)
        outs = outs if isinstance(outs, tuple) else (outs,)
    device = inputs[0].device
    return tuple(
        None
        if not dtype.is_floating_point
        else outs[k]
        if k < len(outs)
        else torch.zeros(shape, dtype=dtype, device=device)
        for k, (shape, dtype) in enumerate(returned)
    )


# Gradient kernels are built ahead, on a helper thread, while the forward
# pass and the loss run (_Plan): the C compiler then works beside them and
# beside the other gradient kernels' builds instead of after them, at the
# first backward. Made on first use; a forked child makes its own.
_ahead: concurrent.futures.ThreadPoolExecutor | None = None
_ahead_lock = threading.Lock()


def _ahead_pool() -> concurrent.futures.ThreadPoolExecutor:
    global _ahead
    with _ahead_lock:
        if _ahead is None:
            workers = max(1, min(4, os.cpu_count() or 1))
            _ahead = concurrent.futures.ThreadPoolExecutor(workers, thread_name_prefix="neoflow-grad-ahead")
        return _ahead


def _forget_ahead_pool() -> None:
    global _ahead
    _ahead = None  # its threads did not survive the fork


os.register_at_fork(after_in_child=_forget_ahead_pool)


def _may_build_ahead(tensors) -> bool:
    """Whether a gradient kernel may be built on a helper thread: CPU tensors (a CUDA build stays on the
    calling thread and its device), outside torch.compile's tracing and any tuning (a build under
    neoflow.tune, tune_session or NEOFLOW_TUNE=full tunes the kernel, from the caller's thread)."""
    if config.tuning_now.is_set() or config.tune_mode() == "full" or torch.compiler.is_compiling():
        return False
    return all(t.is_cpu for t in tensors)


class _Plan:
    """What an eager autograd call of one specialization needs, looked up
    once (make_function's plans) instead of on every call: the forward kernel, the
    positions among its buffers (Kernel.run's list) of the tensors the
    saving gradient op reads (None: the kernel keeps one of them in no
    buffer, and the gradient recomputes), that gradient op with its sizes,
    and its kernel once the first backward has built it, with the positions
    of each input's gradient among that kernel's buffers; whether a
    backward may launch that kernel itself (direct). An input whose
    gradient is an output's gradient unchanged (passed: an add's) gets
    that tensor, as from PyTorch's add; the kernel computes the others,
    and there is none when no other is needed (then the forward keeps no
    tensor, and the backward returns, per input, the output gradient
    passed_grads names, in any grad mode). On the CPU that
    kernel's build starts when the plan is made (grad_future), on a helper
    thread, before the forward's own build (_build_ahead); the backward
    waits for it and then finds the kernel built."""

    __slots__ = (
        "kernel",
        "kept",
        "gop",
        "gsizes",
        "grad_kernel",
        "grad_future",
        "grad_at",
        "wrt",
        "sizes",
        "direct",
        "passed",
        "passed_grads",
        "saves",
    )

    def __init__(self, op, tensors, sizes: dict, wrt):
        op.check_inputs(tensors)  # what it checks, the plan's key fixes: calls that find the plan need no check
        self.wrt = [bool(w) for w in wrt]
        self.sizes = sizes  # the call's sizes: part of the plan's key
        self.kept, self.gop, self.gsizes, self.grad_kernel, self.grad_future = [], None, None, None, None
        self.grad_at, self.direct, self.passed, self.passed_grads = None, False, {}, None
        if any(wrt):
            # Derived (and registered) now, as _keep does, for the same reason.
            gop, gsizes = op.grad_op(*tensors, sizes=sizes, wrt=self.wrt, saved=True)
            _ = gop.custom_op
            self.passed = _passed_on(op, gop, tensors, sizes, self.wrt)
            rest = [w and k not in self.passed for k, w in enumerate(self.wrt)]
            if self.passed and any(rest):  # the kernel computes the other gradients only
                gop, gsizes = op.grad_op(*tensors, sizes=sizes, wrt=rest, saved=True)
                _ = gop.custom_op
            if any(rest):
                self.gop, self.gsizes = gop, gsizes
            if self.gop is not None and _may_build_ahead(tensors):
                # Before the forward's own build: the C compiler then builds both at once (a core stood idle
                # while the forward's kernel compiled alone).
                self.grad_future = _build_ahead(op, self.gop, self.gsizes, tensors, sizes)
        self.kernel = op.specialize(*tensors, sizes=sizes, symbolic=True)
        self.saves = ()  # the forward's buffers (Kernel.run's list) it saves for the backward
        if not any(wrt):
            return
        if self.gop is None:  # every gradient is an output's, passed on: no kernel, no tensor kept
            self.passed_grads = [self.passed.get(k) if w else None for k, w in enumerate(self.wrt)]
            self.direct = True
            return
        names = [self.kernel.buffers[i][0] for i in self.kernel.returned]
        self.saves = tuple(range(len(tensors)))  # the inputs, then what the saving gradient op reads
        if all(n in names for n in self.gop.saved):
            self.kept = [self.kernel.returned[names.index(n)] for n in self.gop.saved]
            self.saves += tuple(self.kept)
            self.direct = True  # a backward may launch the saving gradient op's kernel directly
        else:
            self.kept = None

    def _grad_positions(self, n_inputs: int, outputs) -> list[int | None]:
        """Where the backward finds each input's gradient among the gradient kernel's buffers (its arguments,
        then what it allocated; the arguments alone without a kernel): an output's gradient passed on is
        argument n_inputs + j, the kernel computes the others (outputs, in order)."""
        return [
            None if not w else n_inputs + self.passed[k] if k in self.passed else next(outputs)
            for k, w in enumerate(self.wrt)
        ]

    def grad_kernel_for(self, args):
        """The gradient op's kernel for the backward's arguments: built ahead, or now."""
        if self.grad_kernel is None:
            if self.grad_future is not None:
                try:
                    self.grad_future.result()
                except Exception:  # noqa: BLE001 - specialize below builds again and raises it
                    pass
            kernel = self.gop.specialize(*args, sizes=self.gsizes, symbolic=True)
            self.grad_at = self._grad_positions(len(self.wrt), iter(kernel.outputs))
            self.grad_kernel = kernel
        return self.grad_kernel


def _passed_on(op, gop, tensors, sizes: dict, wrt) -> dict[int, int]:
    """The inputs whose gradient is an output's gradient unchanged, {input position: output position}: the
    gradient op copies d_<output> into d_<input> element for element (Op.copies: an add's gradient) and the
    two tensors have one shape and dtype. PyTorch's own add passes its gradient on so; the backward then
    neither launches a kernel for it nor allocates it."""
    if not gop.copies:
        return {}
    outs, _, dtypes = op.buffers(tensors, sizes)
    n = len(op.inputs)
    names = iter(gop.outputs)  # the gradients of the inputs wrt selects, in order
    passed = {}
    for k, w in enumerate(wrt):
        source = gop.copies.get(next(names)) if w else None
        j = gop.inputs.index(source) - n if source in gop.inputs else -1
        if 0 <= j < len(op.outputs) and tuple(tensors[k].shape) == outs[j] and tensors[k].dtype == dtypes[j]:
            passed[k] = j
    return passed


def _build_ahead(op, gop, gsizes, tensors, sizes) -> concurrent.futures.Future | None:
    """Starts the build of the saving gradient op's kernel on a helper thread, for stand-in tensors of the shapes
    the backward will pass: the op's inputs, one gradient per output, then the forward's tensors that the gradient
    reads (their shapes inferred without building the forward). None where the forward keeps none of those."""
    outs, temps, dtypes = op.buffers(tensors, sizes)
    names = list(op.outputs) + [n for n, _ in temps]
    shapes = dict(zip(names, [*outs, *[s for _, s in temps]]))
    types = dict(zip(names, dtypes))
    if not all(n in shapes for n in gop.saved):
        return None
    dtype = next((t.dtype for t in tensors if t.is_floating_point()), None)
    if dtype is None:
        return None
    like = [(t.dtype, tuple(t.shape)) for t in tensors] + [(dtype, shape) for shape in outs]
    like += [(types[n], shapes[n]) for n in gop.saved]
    return _ahead_pool().submit(_build_grad, gop, like, gsizes)


def _build_grad(gop, like, sizes) -> None:
    """Builds gop's kernel for tensors of these (dtype, shape)s: its specialization cache then holds it."""
    gop.specialize(*[torch.empty(shape, dtype=dtype) for dtype, shape in like], sizes=sizes, symbolic=True)


def make_function(op):
    """A torch.autograd.Function running op; apply(sizes_dict_or_None, *tensors).

    Each call looks up its specialization's _Plan (by dtypes, shapes,
    devices, sizes and the inputs needing a gradient), so that a call on
    shapes seen before derives nothing: the forward launches the plan's
    kernel and keeps what the plan says, the backward launches the saving
    gradient op's kernel directly (a backward that builds a graph, one
    missing an output's gradient, or one whose forward kept nothing, goes
    the general way: _backward). Both are lean: eager training calls them
    for every op of every step."""
    n_inputs, n_outputs = len(op.inputs), len(op.outputs)
    plans: dict = {}  # the _Plans by key; dropped with the Function when the op forgets its kernels

    class Function(torch.autograd.Function):
        @staticmethod
        def forward(ctx, sizes, *tensors):
            if sizes is None:  # the plan's launch in C, once the plan exists and the inputs allow
                outs = launcher.forward(plans, ctx, tensors)
                if outs is not None:
                    return outs
            needs = ctx.needs_input_grad
            key = (launcher.signature(tensors), needs, *(sorted(sizes.items()) if sizes else ()))
            plan = plans.get(key)
            if plan is None:
                plan = plans.setdefault(key, _Plan(op, tensors, dict(sizes or {}), needs[1:]))
            bufs = plan.kernel.run(tensors)
            ctx.save_for_backward(*[bufs[j] for j in plan.saves])
            ctx.plan = plan
            if n_outputs == 1:
                return bufs[plan.kernel.outputs[0]]
            return tuple([bufs[i] for i in plan.kernel.outputs])

        @staticmethod
        def backward(ctx, *grads):
            plan = ctx.plan
            if plan.gop is None and plan.direct:  # every gradient an output's, passed on (None: no gradient)
                return (None, *[None if j is None else grads[j] for j in plan.passed_grads])
            saved = ctx.saved_tensors
            if not plan.direct or torch.is_grad_enabled() or _missing(grads, n_outputs):
                tensors = saved[:n_inputs]
                kept = None if plan.kept is None else dict(zip(plan.gop.saved if plan.gop else (), saved[n_inputs:]))
                sizes = dict(plan.sizes)
                return (None, *_backward(op, tensors, sizes, list(grads), ctx.needs_input_grad[1:], kept))
            # (grads holds one gradient per output)
            args = (*saved, *grads) if not plan.kept else (*saved[:n_inputs], *grads, *saved[n_inputs:])
            bufs = (plan.grad_kernel or plan.grad_kernel_for(args)).run(args)
            return (None, *[None if i is None else bufs[i] for i in plan.grad_at])

    Function.__name__ = Function.__qualname__ = f"{op.name or 'op'}_Function"
    Function.plans = plans
    return Function


def _missing(grads, n: int) -> bool:
    """Whether a backward lacks the gradient of one of the n outputs (autograd passes None for an output
    no loss depends on)."""
    for g in grads[:n]:
        if g is None:
            return True
    return False
