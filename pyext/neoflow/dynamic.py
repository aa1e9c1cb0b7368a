"""Kernels for every size of a dimension that varies (symbolic extents).

An op is built for the shapes of its first call, as fast as a kernel gets.
When a later call (same dtypes, ranks and device) brings other values of
some dimensions, the op asks the Go core for one kernel for every value of
those dimensions, built from the two calls' shapes: its loops run to sizes
passed at launch and every access is proven in bounds for every size. That
kernel then serves each further shape that differs from the first in those
dimensions only, with no build (a training loop over batches of varying
size, or sequences of varying length). An op whose kernel would depend on a
size some other way (an index such as ``N - 1 - i``) is refused such a
kernel, once per pattern of varying dimensions, and builds one kernel per
shape as before.

A C kernel's schedules are chosen per size bucket (each size rounded
up to a power of two): the first call of a bucket asks the Go core which
kernel runs it, one built with the tuning database's schedules for that
bucket, or the default one while the background picks them where the
kernel has enough work at the bucket's sizes (in every NEOFLOW_TUNE mode
but off, which runs the defaults), so that a new length reuses both the
kernel and its bucket's schedules.

The setting ``configure(dynamic=...)`` (NEOFLOW_DYNAMIC) chooses: ``"auto"``
(the default) as above, ``"static"`` one kernel per shape. Kernels with
symbolic extents are fused where the Go core's proof allows (else unfused);
on a GPU they are CUDA kernels whose grid-stride loops run to the sizes,
passed at launch, with their default schedules (not picked per bucket).
"""

from __future__ import annotations

import logging
import threading

from . import _lib, config
from ._proto import neoflow_pb2 as pb
from .errors import Error
from .kernel import DTYPES, Kernel, check_memory, cuda_device

log = logging.getLogger("neoflow")

# The kernels with symbolic extents an op keeps per signature, newest first.
MAX_PER_SIGNATURE = 4
# The shapes an op keeps such a kernel at (Kernel.at, one small object each) before it forgets them all.
MAX_SIZED = 1024
# The builds a pattern of varying dimensions is tried with, each from another pair of shapes, before it is
# refused for good: whether the core takes it can depend on the values (a launch guard that fails at them).
MAX_TRIES = 2


class Sizes:
    """What one op knows of the shapes it was called with: per signature (dtypes, ranks, device and the
    call's sizes), the first call's shapes (the anchor a kernel with symbolic extents is built from), its
    kernels with symbolic extents and the builds each pattern of varying dimensions was refused; and, per
    shape seen, the kernel that serves it."""

    __slots__ = ("first", "kernels", "refused", "sized", "buckets", "lock")

    def __init__(self):
        self.first: dict = {}
        self.kernels: dict = {}
        self.refused: dict = {}  # pattern -> builds refused
        self.sized: dict = {}  # specialization key -> a symbolic kernel at that shape (Kernel.at)
        self.buckets: dict = {}  # (template's kernel id, size bucket) -> the kernel that runs it there (_bucket)
        self.lock = threading.Lock()

    def clear(self) -> None:
        self.first.clear()
        self.kernels.clear()
        self.refused.clear()
        self.sized.clear()
        self.buckets.clear()


def signature(tensors, extents: dict) -> tuple:
    """A call's dtypes, ranks and device, and the names of its explicit extents."""
    return tuple((t.dtype, t.dim(), t.device) for t in tensors), tuple(sorted(extents))


def note_static(op, state: Sizes, tensors, sizes) -> None:
    """Records the shapes and explicit extents of a call built with a kernel of its own: the first of its
    signature is what a later call is compared with."""
    extents = op.call_sizes(sizes)
    state.first.setdefault(signature(tensors, extents), (tuple(tuple(t.shape) for t in tensors), extents))


def kernel_for(op, state: Sizes, tensors, sizes, key) -> Kernel | None:
    """A kernel with symbolic extents that serves these tensors' shapes, built now from the first call's
    shapes when none does yet; None where the signature has no earlier shape, its varying dimensions were
    refused, or the setting is static."""
    if not tensors or config.dynamic_mode() != "auto":
        return None
    extents = op.call_sizes(sizes)
    sig = signature(tensors, extents)
    shapes = tuple(tuple(t.shape) for t in tensors)
    kernel = _fitting(state, sig, shapes, extents)
    if kernel is not None:
        return _keep(op, state, key, kernel, tensors)
    first = state.first.get(sig)
    if first is None or first == (shapes, extents):
        return None
    varying = [(i, d) for i, s in enumerate(shapes) for d in range(len(s)) if s[d] != first[0][i][d]]
    # a size of 1 is no size's value (the core asks for two of at least 2): such a call gets a kernel of its
    # own, and an anchor with one gives way to these shapes
    if any(first[0][i][d] < 2 for i, d in varying):
        with state.lock:
            state.first[sig] = (shapes, extents)
        return None
    if any(shapes[i][d] < 2 for i, d in varying):
        return None
    pattern = (sig, tuple(varying), tuple(sorted(n for n in extents if extents[n] != first[1][n])))
    with state.lock:  # one build per pattern, however many threads meet it
        kernel = _fitting(state, sig, shapes, extents)
        if kernel is None:
            if state.refused.get(pattern, 0) >= MAX_TRIES or len(state.kernels.get(sig, ())) >= MAX_PER_SIGNATURE:
                return None
            template = _build(op, tensors, sizes, first)
            if template is None:
                # the next try starts from these shapes: shapes seen in another model (an op is shared by
                # its text) may be what the core refused
                state.refused[pattern] = state.refused.get(pattern, 0) + 1
                state.first[sig] = (shapes, extents)
                return None
            template.extents = extents
            state.kernels[sig] = (template, *state.kernels.get(sig, ()))
            kernel = _fitting(state, sig, shapes, extents)
    return None if kernel is None else _keep(op, state, key, kernel, tensors)


def _fitting(state: Sizes, sig, shapes, extents: dict) -> Kernel | None:
    """The newest of the signature's kernels with symbolic extents that fits these shapes and extents, at
    them, as its size bucket runs it (_bucket)."""
    for template in state.kernels.get(sig, ()):
        values = template.fit(shapes, extents)
        if values is not None:
            return _bucket(state, template, values).at(shapes, extents)
    return None


def _bucket(state: Sizes, template: Kernel, values: dict) -> Kernel:
    """The kernel that runs template for the size bucket of these sizes' values (each rounded up to a power
    of two), asked of the Go core once per bucket: built with the tuning database's schedules for the
    bucket, or the template's kernel while the background picks them (torchbridge/buckets.go); the
    template itself where the core says so or fails (logged at debug level)."""
    if template.cuda_source:  # a CUDA kernel's schedules are not picked per bucket
        return template
    ordered = [values[name] for name in template.size_names]
    key = (template.kernel_id, tuple(1 << (v - 1).bit_length() for v in ordered))
    kernel = state.buckets.get(key)
    if kernel is None:
        request = pb.SpecializeRequest(bucket_of=template.kernel_id, size_values=ordered)
        try:
            label = f"neoflow: loading the kernel of size bucket {key[1]}"
            kernel = Kernel(_lib.call_interruptible("nf_specialize", request, pb.SpecializeResponse, label=label), ())
            kernel.outputs, kernel.returned, kernel.temps = template.outputs, template.returned, template.temps
            kernel.extents = template.extents
        except Error as err:
            log.debug("neoflow: size bucket %s of kernel %d: %s", key[1], template.kernel_id, err)
            kernel = template
        kernel = state.buckets.setdefault(key, kernel)  # a thread that asked too keeps the first answer
    return kernel


def _build(op, tensors, sizes, first) -> Kernel | None:
    """The kernel for every value of the dimensions (and explicit extents) where this call differs from
    first's (shapes, extents), or None when the Go core refuses it (the reason is logged at debug level)."""
    request = op._request(tensors, sizes, cuda_device=cuda_device(tensors))
    request.like.extend(pb.TensorType(dtype=DTYPES[t.dtype], shape=list(s)) for t, s in zip(tensors, first[0]))
    request.like_sizes.update(first[1])
    label = f"neoflow: building {op.name or 'op'} for every size of {', '.join(str(s) for s in first[0])}"
    try:
        resp = _lib.call_interruptible("nf_specialize", request, pb.SpecializeResponse, label=label)
    except Error as err:
        log.debug("neoflow: %s gets a kernel per shape: %s", op.name or "op", err)
        return None
    return Kernel(resp, op.outputs, scratch=op.forward_only)


def _keep(op, state: Sizes, key, kernel: Kernel, tensors) -> Kernel:
    check_memory(op, kernel, tensors[0].device)
    if key is not None:
        if len(state.sized) >= MAX_SIZED:
            state.sized.clear()
        state.sized[key] = kernel
    return kernel


def kernel_shapes(state: Sizes) -> list[tuple]:
    """The input shapes of an op's kernels with symbolic extents, oldest first, each size by its name."""
    out = []
    for templates in state.kernels.values():
        for k in reversed(templates):
            n = sum(1 for _, role, _ in k.buffers if role == "input")
            out.append(
                tuple(
                    tuple(s or d for d, s in zip(shape, sizes))
                    for (_, _, shape), sizes in zip(k.buffers[:n], k.buffer_sizes[:n])
                )
            )
    return out
