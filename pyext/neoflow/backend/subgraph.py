"""One lowered subgraph of a graph under ``backend="neoflow"``: the neoflow op its nodes become, the kernel
of its inputs' shapes launched on each call, the outputs mended into the layouts eager gave them, and its
measured choice between the kernel and its own eager operators (``choice.Turns``)."""

from __future__ import annotations

import functools
import hashlib
import logging
import threading
import time
import weakref

import torch

from .._lib import _MissingExtension, launcher
from ..errors import Error
from . import choice, decompose, layout, lowering, shapes

log = logging.getLogger("neoflow.compile")

# How often (seconds) a subgraph waiting to time its kernel asks whether the background tuner is done with it.
TUNER_POLL = 0.5


class ConstantsOnly(ValueError):
    """A subgraph that reads no tensor: eager makes its constants as cheaply."""


class Subgraph(torch.nn.Module):
    """One lowered subgraph: a neoflow op's kernel launched on the subgraph's
    inputs, returning what the subgraph returned (a tuple when it returned
    several).

    A call goes straight to the kernel of its inputs' shapes and dtypes
    (``Kernel.run``), not through the op's user-facing call: the graph is
    already past autocast and autograd (AOT Autograd traced the backward;
    the op is forward only), so the op's checks of those would be work
    without effect, and at 20-60 subgraph calls a training step of a
    recurrent cell they were most of the backend's time outside kernels."""

    def __init__(self, gm: torch.fx.GraphModule, name: str, measure: bool = False):
        super().__init__()
        # its fused operators as their parts, which lower, but for the empty tensors they return (made here)
        self.parts, self.empties = decompose.decompose(gm)
        low = lowering.Lowering(self.parts)
        # the sizes of a graph with symbolic shapes, evaluated at each new shape of the inputs (shapes)
        self.symbols = shapes.Symbols(gm) if shapes.shape_env(gm) is not None else None
        if self.symbols is not None and not self.symbols.readable(
            (low.sizes, low.out_shapes, low.out_strides, self.empties)
        ):
            raise ValueError("a symbolic size that no input's dimension holds")
        if not low.inputs:
            raise ConstantsOnly("it reads no tensor (constants only, which eager makes as cheaply)")
        self.name = name
        self.source = low.source
        self.extents: dict = {}  # each op variant's extents (of every index variable), by its source
        self.op = self._define(low)
        self.used = low.used  # the positions of the arguments the op reads
        # the op's inputs that the graph passes as 0-dimensional tensors: the op reads them as shape (1,)
        self.scalars = [i for i, k in enumerate(low.used) if not low.in_shapes[k]]
        # inputs that come as views with other strides than row-major (an unfold's windows, a permutation,
        # whatever eager operator made them): the op variant for their strides reads them in place
        # (_strided); by the positions and strides of such inputs, () for none
        self.variants: dict = {(): self.op}
        self.takes: dict = {}  # by the same signatures: (position, memory order or None, extent) per strided input
        self.out_shapes = low.out_shapes
        self.bools = [k for k, dt in enumerate(low.out_dtypes) if dt == torch.bool]  # comparisons' results
        # outputs eager lays out densely otherwise than row-major (channels-last): some eager operators after
        # the subgraph rely on the strides they were traced with (the CPU attention backward reads its saved
        # output's), so the op stores them in that layout and they are returned as views at those strides
        self.physical = [(k, low.out_shapes[k], low.out_strides[k]) for k in low.out_physical]
        self.mending: dict = {}  # by the inputs' shapes and dtypes: (physical, empties) at those shapes
        self.zero_dim = [k for k, shape in enumerate(low.out_shapes) if not shape]  # returned 0-dimensional
        self.mended = bool(self.bools or self.physical or self.zero_dim or self.empties)
        out = next(n for n in gm.graph.nodes if n.op == "output").args[0]
        self.many = isinstance(out, (tuple, list))
        self.eager = gm  # runs the subgraph if its first call fails to compile, or if measured faster
        self.kernels: dict = {}  # by the inputs' shapes and dtypes
        self.calls = sum(1 for n in gm.graph.nodes if n.op == "call_function")
        # the measured choice between the kernel and the eager operators (choice.Turns; None once made)
        self.turns = choice.Turns() if measure else None
        self.report: dict | None = None  # the graph's, which gets the choice
        self.tuning = False  # whether the background tuner was busy with its kernels when last asked
        self.tuner_checked = -TUNER_POLL
        # its one kernel as the C call takes it (entry, _arm): (spec, used, shapes, dtypes, outputs, many); None
        # while anything else applies (several shapes, symbolic sizes, strided or 0-dimensional inputs, mended
        # outputs, a choice being measured, no C launch), and the call goes to forward
        self.fast = None

    def _define(self, low: lowering.Lowering):
        """The op of a lowering: one op per text, inputs, outputs and scattered shapes, shared by the subgraphs
        of the graphs compiled for other shapes (Dynamo's dynamic shapes: backend/shapes.py), so that one
        kernel of the op serves every size of a dimension that varies (neoflow.dynamic). Its extents are
        given at each call (``extents``)."""
        from ..op import Op

        key = (low.source, tuple(low.inputs), tuple(low.outputs), tuple(sorted(low.scattered.items())))
        self.extents[low.source] = dict(low.sizes)
        with _ops_lock:
            op = _ops.get(key)
            if op is None:
                digest = hashlib.sha1(low.source.encode()).hexdigest()[:12]
                # forward only: AOT Autograd traced the backward, so the kernels keep no temporaries for a gradient
                op = Op(
                    low.source,
                    name=f"{self.name}_{digest}",
                    inputs=low.inputs,
                    outputs=low.outputs,
                    out_shapes=low.scattered or None,
                    forward_only=True,
                )
                _ops[key] = op
        return op

    def __call__(self, *args):  # straight to forward: a subgraph has no hooks (nn.Module's call checks them)
        return self.forward(*args)

    def entry(self):
        """What the graph's code calls: the C call (neoflow._launch.subgraph, which launches the kernel of
        ``fast`` where the arguments fit it and calls forward otherwise), or the subgraph itself where the
        extension module is not built."""
        if isinstance(launcher, _MissingExtension):
            return self
        return functools.partial(launcher.subgraph, self)

    def _arm(self) -> None:
        """Sets ``fast`` from the one kernel built, where the C call can launch it as _run would."""
        self.fast = None
        if self.turns is not None or self.op is None or self.symbols is not None or self.scalars or self.mended:
            return
        if len(self.kernels) != 1:
            return
        ((sig, inputs), kernel) = next(iter(self.kernels.items()))
        if sig or not kernel or kernel.spec is None:
            return
        shapes = tuple(shape for shape, _ in inputs)
        dtypes = tuple(dtype for _, dtype in inputs)
        self.fast = (kernel.spec, tuple(self.used), shapes, dtypes, tuple(kernel.outputs), self.many)

    def forward(self, *args):
        if self.turns is not None:
            return self._turn(args)
        if self.op is None:
            return self.eager(*args)
        return self._run(args)

    def _turn(self, args):
        """A call of the measured choice: the kernel or the eager operators, timed; on a GPU (where the host
        does not wait for the kernels) the kernel, untimed."""
        if self.op is None or any(a.is_cuda for a in args if isinstance(a, torch.Tensor)):
            self.turns = None
            return self.forward(*args)
        if self.turns.calls == 1 and self._tuner_busy():  # kernel built: its schedules come first
            return self._run(args)
        variant = self.turns.next()
        start = time.perf_counter_ns()
        out = self._run(args) if variant == "neoflow" else self.eager(*args)
        self.turns.record(variant, time.perf_counter_ns() - start)
        if self.turns.kept:
            figures, self.turns = self.turns.figures, None
            if figures["kept"] == "eager":
                self.op = None
            self._arm()
            if self.report is not None:
                ops = [str(n.target) for n in self.eager.graph.nodes if n.op == "call_function"]
                self.report["measured"].append(dict(figures, calls=self.calls, ops=ops, source=self.source))
        return out

    def _tuner_busy(self) -> bool:
        """Whether the background tuner (or picker) still works on this subgraph's kernels, asked at most
        every TUNER_POLL seconds: until it is done, the kernels run untimed (``tuning`` is True)."""
        from .. import tuning

        now = time.monotonic()
        if now >= self.tuner_checked + TUNER_POLL:
            self.tuner_checked = now
            self.tuning = tuning.tuner_busy(op.name for op in self.variants.values() if op is not None)
        return self.tuning

    def _run(self, args):
        flat = [args[k] for k in self.used]
        for i in self.scalars:
            flat[i] = flat[i].reshape(1)
        sig = ()
        if not all(map(_contiguous, flat)):
            sig, flat = self._strided(flat)
        key = (sig, tuple([(a.shape, a.dtype) for a in flat]))
        kernel = self.kernels.get(key)
        if kernel is None:
            kernel = self._kernel(flat, sig, key, args)
        if kernel is False:
            return self.eager(*args)
        try:
            bufs = kernel.run(flat)
        except IndexError:  # an index out of range: eager's operators raise PyTorch's own error for it
            return self.eager(*args)
        outs = [bufs[i] for i in kernel.outputs]
        if self.mended:
            outs = self._mend(outs, key)
        return tuple(outs) if self.many else outs[0]

    def _strided(self, flat: list) -> tuple:
        """For inputs of which some are not contiguous: the signature of the op variant that reads those in
        place, and the inputs as it takes them (each such view as the flat memory it spans). Without a
        variant (its lowering failed), () and the inputs as they are: Kernel.run copies the views."""
        sig = tuple((i, a.stride()) for i, a in enumerate(flat) if not a.is_contiguous())
        # with symbolic shapes, a variant's lowering would compare the sizes outside the graph's compile, where
        # what it decides is checked by nothing (shapes.assuming)
        if self.symbols is not None or any(0 in flat[i].shape or min(st) < 0 for i, st in sig):
            return (), flat
        if sig not in self.variants:
            try:
                low = lowering.Lowering(self.parts, strided={self.used[i]: st for i, st in sig})
                self.variants[sig] = self._define(low)
            except (Error, ValueError) as e:
                log.debug("neoflow: a subgraph's strided inputs are copied: %s", e)
                self.variants[sig] = None
            # how the variant takes each such input (the subgraph's shapes are static): a dense layout as the
            # tensor of its dimensions in memory order (a permutation), any other as the flat memory it spans
            self.takes[sig] = [
                (i, layout.physical_order(flat[i].shape, st), 1 + sum((n - 1) * s for n, s in zip(flat[i].shape, st)))
                for i, st in sig
            ]
        if self.variants[sig] is None:
            return (), flat
        flat = list(flat)
        for i, order, extent in self.takes[sig]:
            flat[i] = flat[i].permute(order) if order is not None else flat[i].as_strided((extent,), (1,))
        return sig, flat

    def _kernel(self, flat, sig: tuple, key, args):
        """The kernel for these inputs, built now; False when this call runs in eager: the first build failed
        (the subgraph then runs in eager from now on) or a strided variant's did (later calls copy their
        views)."""
        op = self.variants[sig]
        sizes = self.extents[op.source]
        if self.symbols is not None:
            values = self.symbols.values(args)
            sizes = self.symbols.at(sizes, values)
            self.mending[key] = self.symbols.at((self.physical, self.empties), values)
        before = op.kernel_shapes()
        try:
            kernel = op.specialize(*flat, sizes=sizes, symbolic=True)
        except Error as e:
            if sig:
                log.debug("neoflow: a subgraph's strided variant failed to build; its views are copied: %s", e)
                self.variants[sig] = None
                return False
            if any(self.kernels.values()):
                raise
            log.warning("neoflow: a lowered subgraph failed to compile and runs in eager instead: %s", e)
            self.op = None
            return False
        self.kernels[key] = kernel
        self._arm()
        if self.report is not None:
            built = op.kernel_shapes()[len(before) :]
            kernels = self.report["kernels"]
            kernels["built"] += len(built)
            kernels["every_size"] += sum(1 for shapes in built if any(isinstance(n, str) for s in shapes for n in s))
            kernels["reused"] += not built
        return kernel

    def _mend(self, outs: list, key) -> list:
        """The outputs as the graph returned them: 0-dimensional ones reshaped, comparisons as bool tensors,
        the layouts eager gave them (physical), and the empty tensors of the decompositions put back (empties),
        at the inputs' shapes (key)."""
        physical, empties = self.mending.get(key, (self.physical, self.empties))
        for k in self.zero_dim:
            outs[k] = outs[k].reshape(())
        for k in self.bools:
            outs[k] = outs[k] != 0
        for k, shape, stride in physical:
            outs[k] = outs[k].as_strided(shape, stride)
        for k, (shape, dtype) in sorted(empties.items()):
            outs.insert(k, torch.empty(shape, dtype=dtype, device=outs[0].device))
        return outs


_contiguous = torch.Tensor.is_contiguous

# The ops of the subgraphs, by lowering (Subgraph._define); an op goes when no subgraph holds it.
_ops: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
_ops_lock = threading.Lock()
