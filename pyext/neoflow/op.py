"""Op: an operator defined by an index expression, callable on torch tensors."""

from __future__ import annotations

import re
import warnings
import weakref
import zlib
from collections.abc import Mapping

import torch

from . import _lib, config, dynamic, outshapes, tuning
from ._lib import launcher
from ._proto import neoflow_pb2 as pb
from .autograd import dual as _dual
from .checks import check_devices, check_name, check_names, check_text, scalar_of  # noqa: F401 - check_devices: tests
from .definition import GradDefinition, TextDefinition, consts_of
from .kernel import DTYPES, TORCH_DTYPES, Kernel, any_autocast, autocast_inputs, check_memory, cuda_device
from .sizes import check_sizes as _sizes
from .sizes import parse_sizes_text, sizes_text  # noqa: F401 - part of this module's interface
from .version import __version__

# The custom ops' calling convention; bump it when what they take or return
# changes. 2: the outputs are followed by the temporaries autograd keeps.
# 3: those are the temporaries the saving gradient reads and does not
# recompute (the save-or-recompute reward). 4: the inputs are one Tensor[]
# argument.
_CUSTOM_OP_CONVENTION = 4


# Every Op alive, for settings that change what kernels are built from.
_live: weakref.WeakSet = weakref.WeakSet()


def _forget_all_built() -> None:
    for op in list(_live):
        op._forget_built()


config.on_rebuild(_forget_all_built)


class Op:
    """A tensor operator defined by index expressions.

    >>> matmul = Op("C[i,j] += A[i,k] * B[k,j]")
    >>> c = matmul(a, b)

    Named scalar constants are keyword arguments (``Op(src, S=2)``) or the
    ``consts`` dict. ``inputs`` fixes the order of the call's arguments
    (default: order of first appearance), ``outputs`` the order of the
    returned outputs (default: statement order); the Go core checks both and
    every other order (kernel buffers, the gradient op's incoming gradients,
    the custom op's results) follows them. ``sizes`` gives extents of index
    variables that cannot be inferred from the input shapes; they can also
    be passed, or overridden, at call time.

    ``forward_only=True`` says that no caller differentiates the op through
    neoflow (the torch.compile backend's lowered subgraphs, whose backward
    AOT Autograd traced): its kernels then store no temporaries for a
    gradient, which is fewer loads and stores. A gradient asked of it anyway
    recomputes them, with the same values.
    """

    def __init__(
        self,
        source: str,
        *,
        name: str | None = None,
        inputs=None,
        outputs=None,
        sizes=None,
        out_shapes=None,
        consts=None,
        forward_only: bool = False,
        **kw,
    ):
        check_text("an op's source", source)
        if name is not None:
            check_name(name)
        inputs, outputs = check_names("inputs", inputs), check_names("outputs", outputs)
        if consts is not None and not isinstance(consts, Mapping):
            raise TypeError(f"consts must be a dict of name to number, got {type(consts).__name__}")
        consts = dict(consts or {})
        consts.update(kw)
        request = pb.DefineRequest(
            source=source,
            name=name or "",
            inputs=inputs,
            outputs=outputs,
            consts={check_text("a constant's name", k): scalar_of(k, v) for k, v in consts.items()},
            forward_only=bool(forward_only),
        )
        config.ensure()
        resp = _lib.call("nf_define", request, pb.DefineResponse)
        if not resp.inputs:
            _release(resp.op_id)
            raise ValueError(
                "an op needs at least one input tensor: neoflow takes the dtype, device and shapes from its inputs"
            )
        try:
            scattered, checks = outshapes.out_sizes(
                resp.scatter_axes, list(resp.outputs), resp.output_ranks, out_shapes
            )
        except (TypeError, ValueError):
            _release(resp.op_id)
            raise
        sizes = {**_sizes(sizes), **scattered}
        definition = TextDefinition(
            source, name or "", tuple(inputs or ()), tuple(outputs or ()), sizes, consts, bool(forward_only)
        )
        self._setup(resp, source, name or "", sizes, definition)
        self._out_checks = checks

    def _setup(self, resp: pb.DefineResponse, source: str, name: str, sizes: dict, definition) -> None:
        self.source = source
        self.name = name
        self.op_id = resp.op_id
        self.inputs = tuple(resp.inputs)
        self.outputs = tuple(resp.outputs)
        self.input_ranks = tuple(resp.input_ranks)
        self.output_ranks = tuple(resp.output_ranks)
        self.scatter_axes = tuple(resp.scatter_axes)  # output dimensions written through index tensors
        self._out_checks = []  # (output, dimension, extent) that out_shapes gave at the definition
        self.hash = resp.hash
        self._printed = resp.printed
        self._sizes = sizes
        self._kernels: dict = {}
        self._dynamic = dynamic.Sizes()  # kernels with symbolic extents, for dimensions that vary
        self._shapes: dict = {}
        self._grads: dict = {}
        self._grads_by_text: dict = {}
        _live.add(self)
        self._function = None
        self._custom = None
        self.saved = ()  # for a gradient op derived with saved=True: the forward tensors it takes last
        self.copies = dict(resp.copies)  # output -> the input one statement copies into it element for element
        # The custom op's name is a Python identifier: a name such as "0" or
        # "1.5-x" (valid op names) gets a prefix.
        label = re.sub(r"[^A-Za-z0-9_]", "_", name or "op")[:40] or "op"
        if not label[0].isalpha():
            label = f"op_{label}"
        # The name also changes with the outputs' order (the decorated form may
        # reorder them), with the calling convention and with fusion on or off
        # (which decides the temporaries the op returns), as forward_only does,
        # so that a compiled graph cached on disk by an older neoflow, or under
        # the other fusion setting, never calls this op.
        convention = f"{__version__}|{_CUSTOM_OP_CONVENTION}|fusion={config.fusion_enabled()}"
        if isinstance(definition, TextDefinition) and definition.forward_only:  # other temporaries
            convention += "|forward_only"
        order = zlib.crc32(f"{','.join(self.outputs)}|{convention}".encode())
        self.custom_name = f"{label}_{resp.hash[:16]}_{order:08x}"
        # What rebuild() needs to define the op again: plain data, so that an
        # op pickles (into a spawn worker, say) and a custom op outlives its Ops.
        self._definition = definition
        weakref.finalize(self, _release, resp.op_id)
        # Registered now, outside any traced code, so that the first call may
        # come from inside torch.compile (which cannot trace registration).
        from .autograd import register

        self._custom = register(self)

    @classmethod
    def _from_response(cls, resp: pb.DefineResponse, name: str, sizes: dict, definition) -> Op:
        """An op the Go core defined itself, such as a gradient op."""
        op = cls.__new__(cls)
        op._setup(resp, resp.printed, name, dict(sizes), definition)
        return op

    def __reduce__(self):
        return rebuild, (self._definition,)

    def __str__(self) -> str:
        return self._printed

    def __repr__(self) -> str:
        label = f" {self.name}" if self.name else ""
        return f"<neoflow.Op{label}: {self._printed.strip()}>"

    # -- specialization ---------------------------------------------------

    @property
    def sizes(self) -> dict[str, int]:
        """The extents given at the definition (``sizes=``, and those ``out_shapes=`` fixes), by index variable."""
        return dict(self._sizes)

    @property
    def consts(self) -> dict:
        """The named constants the op was defined with (a gradient op's are its forward op's)."""
        return consts_of(self._definition)

    @property
    def scatters(self) -> bool:
        """Whether an output dimension is written through an index tensor (``Y[I[e], d] += ...``)."""
        return bool(self.scatter_axes)

    def check_inputs(self, tensors) -> None:
        """Raises a clear TypeError or ValueError unless tensors are this op's inputs: their number, types,
        devices, dtypes and ranks."""
        if len(tensors) != len(self.inputs):
            raise TypeError(
                f"op {self.name or '<anonymous>'} takes {len(self.inputs)} inputs "
                f"({', '.join(self.inputs)}), got {len(tensors)}"
            )
        for t, n in zip(tensors, self.inputs):
            if not isinstance(t, torch.Tensor):
                raise TypeError(f"input {n} must be a torch.Tensor, got {type(t).__name__}")
        check_devices([t.device for t in tensors], self.inputs)
        for t, n in zip(tensors, self.inputs):
            if t.dtype not in DTYPES:
                raise TypeError(
                    f"input {n} has dtype {t.dtype}; neoflow supports torch.float32 and torch.float64, "
                    "torch.float16 and torch.bfloat16 on CUDA, and torch.int32, torch.int64 and torch.bool inputs"
                )
        for t, n, r in zip(tensors, self.inputs, self.input_ranks):
            if t.dim() != r:
                raise ValueError(f"input {n} must have {r} dimensions, got shape {tuple(t.shape)}")

    def call_sizes(self, sizes) -> dict[str, int]:
        """The extents a call passes: the definition's, updated by the call's ``sizes`` (checked)."""
        merged = dict(self._sizes)
        merged.update(_sizes(sizes))
        return merged

    def _request(self, tensors, sizes, **flags) -> pb.SpecializeRequest:
        return pb.SpecializeRequest(
            op_id=self.op_id,
            inputs=[pb.TensorType(dtype=DTYPES[t.dtype], shape=[int(d) for d in t.shape]) for t in tensors],
            sizes=self.call_sizes(sizes),
            **flags,
        )

    def cuda_source(self, *tensors, sizes=None) -> str:
        """The generated CUDA source for these inputs' shapes and dtype under
        the GPU default schedules, without compiling it or needing a GPU: the
        tensors may be CPU tensors. ``op.specialize(*cuda_tensors).cuda_source``
        is the source of the kernel that runs."""
        self.check_inputs(tensors)
        config.ensure()
        request = self._request(tensors, sizes, source_only=True, cuda_device=1)
        return _lib.call("nf_specialize", request, pb.SpecializeResponse).cuda_source

    def output_shapes(self, *tensors, sizes=None) -> list[tuple[int, ...]]:
        """The shapes of the outputs for these inputs, without building anything."""
        return self.buffers(tensors, sizes)[0]

    def temporaries(self, *tensors, sizes=None) -> list[tuple[str, tuple[int, ...]]]:
        """The op's temporaries (tensors its statements write that are not
        outputs) for these inputs, as (name, shape) pairs in kernel order.
        Under autograd the forward keeps those the gradient reads."""
        return self.buffers(tensors, sizes)[1]

    def buffer_dtypes(self, *tensors, sizes=None) -> list[torch.dtype]:
        """The element types of the outputs, then of the temporaries, for these inputs: the floating-point
        inputs' dtype, or the integer type of a cast (``O[i] = int32(...)``)."""
        return self.buffers(tensors, sizes)[2]

    def buffers(self, tensors, sizes) -> tuple[list, list, list]:
        """For these inputs and sizes: the outputs' shapes, the kept temporaries as (name, shape), and the
        element types of the outputs then the temporaries; inferred without building, cached per shape."""
        key = _shape_key(tensors, sizes)
        shapes = self._shapes.get(key)
        if shapes is None:
            self.check_inputs(tensors)
            config.ensure()
            resp = _lib.call("nf_specialize", self._request(tensors, sizes, shapes_only=True), pb.SpecializeResponse)
            by_name = {b.name: b for b in resp.buffers}
            temps = [b for b in resp.buffers if b.role != "input" and b.name not in self.outputs]
            outs = [by_name[n] for n in self.outputs]
            dtypes = [TORCH_DTYPES[b.dtype or resp.dtype] for b in outs + temps]
            shapes = ([tuple(b.shape) for b in outs], [(b.name, tuple(b.shape)) for b in temps], dtypes)
            self._shapes[key] = shapes
        return shapes

    def grad_op(self, *tensors, sizes=None, wrt=None, saved=False) -> tuple[Op, dict]:
        """The derived gradient op for these inputs, and the sizes to call it with.

        It takes this op's inputs followed by one gradient per output, and
        returns the gradients of the inputs selected by ``wrt`` (default:
        every floating-point input; integer inputs have none).
        ``print(op.grad_op(x, w)[0])`` shows the derived expressions, guards included.

        With ``saved=True`` the gradient op reads the forward temporaries and
        outputs it needs instead of recomputing them: it takes, after the
        output gradients, the tensors a forward run wrote under the names in
        the gradient op's ``saved`` attribute (see ``temporaries``). This is
        what autograd runs; its values are those of the recomputing one.
        """
        return self._derived(tensors, sizes, wrt, saved=bool(saved), forward=False)

    def _derived(self, tensors, sizes, wrt, saved: bool, forward: bool) -> tuple[Op, dict]:
        """The gradient op (or with ``forward`` the tangent op) for these inputs, derived once per shapes and
        selection."""
        if wrt is None:  # every floating-point input: integer inputs have no derivative
            wrt = [not isinstance(t, torch.Tensor) or t.is_floating_point() for t in tensors]
        wrt = tuple(bool(w) for w in wrt)
        key = (_shape_key(tensors, sizes), wrt, "forward" if forward else saved)
        entry = self._grads.get(key)
        if entry is None:
            self.check_inputs(tensors)
            config.ensure()
            spec = self._request(tensors, sizes)
            request = pb.GradRequest(inputs=spec.inputs, sizes=spec.sizes, wrt=list(wrt), save=saved, forward=forward)
            gop, gsizes = self._derive_grad(request)
            # the op derived for other shapes when it reads the same (a batch size that varies): its kernels,
            # and the kernel with symbolic extents it builds once a dimension varies, serve these shapes too
            gop = self._grads_by_text.setdefault((gop.hash, gop.saved, gop.outputs), gop)
            entry = self._grads.setdefault(key, (gop, gsizes))
        return entry

    def _derive_grad(self, request: pb.GradRequest) -> tuple[Op, dict]:
        """Derives the gradient (or tangent) op the request (op_id aside) asks for."""
        prefix = "jvp" if request.forward else "grad"
        request.op_id = self.op_id
        resp = _lib.call("nf_grad", request, pb.GradResponse)
        request.op_id = 0  # the definition holds no process-local id
        definition = GradDefinition(self._definition, request.SerializeToString())
        gop = Op._from_response(resp.op, f"{prefix}_{self.name or 'op'}", dict(resp.sizes), definition)
        gop.explanation = resp.explain
        gop.saved = tuple(resp.saved)
        return gop, dict(resp.sizes)

    def tangent_op(self, *tensors, sizes=None, wrt=None) -> tuple[Op, dict]:
        """The derived tangent op (forward mode) for these inputs, and the sizes to call it with.

        It takes this op's inputs followed by one tangent per input selected
        by ``wrt`` (default: every floating-point input), and returns one
        tangent per output, ``t_Y = Σ ∂Y/∂X · t_X``: what ``torch.func.jvp``,
        ``jacfwd``, ``hessian`` and ``torch.autograd.forward_ad`` run.
        ``print(op.tangent_op(x, w)[0])`` shows the derived expressions.
        """
        return self._derived(tensors, sizes, wrt, saved=False, forward=True)

    def explain_jvp(self, *tensors, sizes=None) -> str:
        """The derived tangent expressions (forward mode) for these inputs, guards and sizes included."""
        return self.tangent_op(*tensors, sizes=sizes)[0].explanation

    def explain_fusion(self, *tensors, sizes=None) -> str:
        """What the compiler's fusion passes do to this op for these inputs'
        shapes: which temporaries stay whole for the gradient, each decision
        (a where decided, sums merged into one reduction, a statement split
        into parts, a temporary inlined into its readers, temporaries no
        longer stored), then the fused op that the kernel computes. The
        same text as the passes' dumps (``NEOFLOW_DUMP=fuse-split,...``)."""
        self.check_inputs(tensors)
        config.ensure()
        resp = _lib.call("nf_specialize", self._request(tensors, sizes, shapes_only=True), pb.SpecializeResponse)
        return resp.fusion

    def explain_grad(self, *tensors, sizes=None) -> str:
        """The derived gradient expressions for these inputs, guards and sizes included."""
        return self.grad_op(*tensors, sizes=sizes)[0].explanation

    def specialize(self, *tensors, sizes=None, symbolic=False) -> Kernel:
        """Builds (or finds) the kernel for these inputs' shapes and dtype. With ``symbolic``, a kernel with
        symbolic extents may serve them (neoflow.dynamic): a caller that keeps no temporaries, or reads the
        ones it keeps by name."""
        try:  # the fast path: a specialization seen before, already validated (the key names each device)
            skey = tuple(sorted(sizes.items())) if sizes else ()
            key = (launcher.signature(tensors), skey)
            kernel = self._kernels.get(key)
        except (AttributeError, TypeError):  # not tensors, or sizes not a dict: _check explains
            key, kernel = None, None
        if kernel is None and symbolic and key is not None:
            kernel = self._dynamic.sized.get(key)
        if kernel is None:
            self.check_inputs(tensors)
            if symbolic and key is not None:
                kernel = dynamic.kernel_for(self, self._dynamic, tensors, sizes, key)
        if kernel is None:
            config.ensure()
            request = self._request(tensors, sizes, cuda_device=cuda_device(tensors))
            tuning.before_build(request)
            label = f"neoflow: building {self.name or 'op'} for {', '.join(str(tuple(t.shape)) for t in tensors)}"
            resp = _lib.call_interruptible("nf_specialize", request, pb.SpecializeResponse, label=label)
            for w in resp.warnings:
                warnings.warn(w, RuntimeWarning, stacklevel=2)
            kernel = Kernel(resp, self.outputs, scratch=self.forward_only)
            check_memory(self, kernel, tensors[0].device)
            if key is not None:
                self._kernels[key] = kernel
                dynamic.note_static(self, self._dynamic, tensors, sizes)
        return kernel

    def _forget_built(self) -> None:
        """Drops the kernels and buffer shapes of this op (a change of the
        fusion setting changes both)."""
        self._kernels.clear()
        self._dynamic.clear()
        self._shapes.clear()
        self._function = None  # and with it autograd's call plans, which hold kernels

    def forget_kernels(self) -> None:
        """Drops the built kernels of this op and its gradient ops, so the next call rebuilds them."""
        self._kernels.clear()
        self._dynamic.clear()
        self._function = None  # and with it autograd's call plans, which hold kernels
        for gop, _ in self._grads.values():
            gop.forget_kernels()

    def kernel_shapes(self) -> list[tuple]:
        """The input shapes of the kernels this op has built, in the order built: one tuple of shapes per
        kernel, where a kernel built for every size of some dimensions (``configure(dynamic=...)``) names
        each such dimension by its size variable (``(("s0", 5), (3, 5))``: one kernel for every batch size)."""
        out = [tuple(tuple(t[1]) for t in key[0]) for key in self._kernels]
        return out + dynamic.kernel_shapes(self._dynamic)

    @property
    def forward_only(self) -> bool:
        """Whether the op was defined ``forward_only`` (no gradient: its kernels' temporaries are never kept)."""
        return bool(getattr(self._definition, "forward_only", False))

    def c_source(self, *tensors, sizes=None) -> str:
        """The generated C source for these inputs under the default schedules
        (with ``NEOFLOW_TUNE=off``, register tiles for contractions with
        enough work), without compiling it. ``op.specialize(*tensors).c_source``
        is the source of the kernel that runs, under the tuned schedules when
        the tuning database has a record for it."""
        self.check_inputs(tensors)
        config.ensure()
        resp = _lib.call("nf_specialize", self._request(tensors, sizes, source_only=True), pb.SpecializeResponse)
        return resp.c_source

    # -- calling ----------------------------------------------------------

    def _launch(self, tensors, sizes, keep=False, kernel=None) -> list[torch.Tensor]:
        """Runs the kernel directly on plain tensors: no autograd. Returns
        the outputs, followed by the temporaries when ``keep``. ``kernel``,
        when given, is this specialization's (a caller that looked it up
        already)."""
        if kernel is None:
            kernel = self.specialize(*tensors, sizes=sizes, symbolic=not keep)
        bufs = kernel.run(tensors, keep)
        return [bufs[i] for i in (kernel.returned if keep else kernel.outputs)]

    def __call__(self, *tensors, sizes=None, out_shapes=None):
        # the usual calls (plain tensors, no transform, no autocast, no sizes), in C: without autograd, one
        # lookup of a kernel built for them and its launch; under autograd, the op's autograd.Function
        if sizes is None and out_shapes is None and not _is_compiling():
            outs = launcher.op_call(self, tensors)
            if outs is not None:
                return outs
        if any_autocast():  # traced by torch.compile too
            tensors = autocast_inputs(tensors)
        checks = self._out_checks
        if out_shapes is not None:
            scattered, more = outshapes.out_sizes(self.scatter_axes, self.outputs, self.output_ranks, out_shapes)
            sizes, checks = {**_sizes(sizes), **scattered}, checks + more
        if checks:
            outs = self._call(tensors, sizes)
            outshapes.check_outputs(outs if isinstance(outs, tuple) else (outs,), checks, self.outputs)
            return outs
        return self._call(tensors, sizes)

    def _call(self, tensors, sizes):
        mode = _mode(tensors)
        if mode == _DIRECT:
            outs = self._launch(tensors, sizes)
        elif mode == _EAGER:  # autograd on plain tensors: an autograd.Function costs less than the dispatcher
            # (checked once per specialization: by autograd._Plan)
            return (self._function or self.function).apply(sizes and _sizes(sizes), *tensors)
        elif mode == _TRANSFORM:  # torch.func's grad and jacrev need an autograd.Function with setup_context;
            # forward-mode AD is refused there
            self.check_inputs(tensors)
            args = (*tensors, sizes_text(self.call_sizes(sizes)))
            outs = self.custom_op.neoflow_transformable.apply(*args)[: len(self.outputs)]
        elif any(isinstance(t, torch.fx.Proxy) for t in tensors):  # symbolic_trace: off the eager paths
            return self._traced(tensors, sizes)
        else:  # torch.compile or tensor subclasses: through the custom op, registered when the op was defined
            self.check_inputs(tensors)
            custom = self._custom if torch.compiler.is_compiling() and self._custom else self.custom_op
            outs = custom(list(tensors), sizes_text(self.call_sizes(sizes)))[: len(self.outputs)]
        return outs[0] if len(outs) == 1 else tuple(outs)

    def _traced(self, tensors, sizes):
        """The call under torch.fx.symbolic_trace: one call_function node of the custom op (which runs the
        op, with its gradient, when the traced module runs), and a getitem node per output."""
        tracer = next(t for t in tensors if isinstance(t, torch.fx.Proxy)).tracer
        _ = self.custom_op  # registered
        target = getattr(torch.ops.neoflow, self.custom_name).default
        args = (list(tensors), sizes_text(self.call_sizes(sizes)))
        outs = tracer.create_proxy("call_function", target, args, {})
        n = len(self.outputs)
        return outs[0] if n == 1 else tuple(outs[i] for i in range(n))

    @property
    def custom_op(self):
        """The op as a torch.library custom op, ``neoflow::<name>``.

        Its schema is ``(Tensor[] inputs, str sizes) -> Tensor[]``, where
        sizes is ``"p=8,q=8"`` (one list argument: a schema takes at most 64
        arguments, and an op may have more inputs); it has a fake (meta) implementation and an
        autograd formula, so it works under torch.compile and in autograd.
        It returns the op's outputs followed by its temporaries (see
        ``temporaries``), which autograd keeps for the gradient instead of
        recomputing them.
        """
        # Registered once; again if a scoped library (torch.library.opcheck
        # makes one) removed it. Cheap enough for Dynamo to trace.
        if self._custom is None or not hasattr(torch.ops.neoflow, self.custom_name):
            from .autograd import register

            self._custom = register(self)
        return self._custom

    def claim_custom_op(self) -> None:
        """Makes this Op the one its custom op runs (another Op of the same expression may have registered
        it last): the kernels this Op forgets are then the ones the custom op rebuilds."""
        from .autograd import register

        self._custom = register(self)

    @property
    def function(self):
        """The op as a torch.autograd.Function: ``op.function.apply(sizes, *tensors)``."""
        if self._function is None:
            from .autograd import make_function

            self._function = make_function(self)
        return self._function


def rebuild(definition: TextDefinition | GradDefinition) -> Op:
    """Defines an op again from ``Op._definition``: how ops unpickle, in this
    process or another."""
    if isinstance(definition, TextDefinition):
        d = definition
        return Op(
            d.source,
            name=d.name or None,
            inputs=d.inputs,
            outputs=d.outputs,
            sizes=d.sizes,
            consts=d.consts,
            forward_only=d.forward_only,
        )
    if isinstance(definition, GradDefinition):
        return rebuild(definition.parent)._derive_grad(pb.GradRequest.FromString(definition.request))[0]
    raise ValueError(f"not a neoflow op definition: {definition!r:.200}")


def _release(op_id: int) -> None:
    """Lets the Go core forget an op that Python no longer references."""
    try:
        _lib.call("nf_release", pb.ReleaseRequest(op_id=op_id), pb.Empty)
    except Exception:  # noqa: BLE001 - at interpreter exit or after fork, forgetting is moot
        pass


def _shape_key(tensors, sizes) -> tuple:
    """A specialization's key from shapes that may be symbolic (under torch.compile)."""
    return tuple((t.dtype, tuple(int(d) for d in t.shape)) for t in tensors), tuple(sorted(_sizes(sizes).items()))


# Plain tensors: a model's weights are nn.Parameter, a Tensor subclass that
# overrides no torch function, so they take the fast paths too.
_PLAIN = (torch.Tensor, torch.nn.Parameter)


_wrapped = torch._C._functorch.is_functorch_wrapped_tensor  # under vmap, grad, jacrev: the dispatcher's way
_transforms_active = getattr(torch._C, "_are_functorch_transforms_active", lambda: True)


_DIRECT, _EAGER, _DISPATCH, _TRANSFORM = 0, 1, 2, 3  # (_DIRECT and _EAGER: _launch_calls.c's too)
_is_compiling = torch.compiler.is_compiling
launcher.configure(any_autocast, _transforms_active, torch.autograd.forward_ad, torch.is_grad_enabled, _PLAIN)


def _mode(tensors) -> int:
    """How a call runs: _DIRECT (plain tensors, no autograd: the kernel alone), _EAGER (plain tensors under
    autograd: the op's autograd.Function), _TRANSFORM (a torch.func transform's tensors, or forward-mode AD's
    dual tensors: the custom op's autograd.Function with setup_context) or _DISPATCH (tracing, tensor
    subclasses or not tensors: the custom op, whose checks explain bad arguments)."""
    if torch.compiler.is_compiling():
        return _DISPATCH
    # A transform's wrapped tensors exist only while it runs: outside one (one check, 40 ns) no tensor is
    # asked (220 ns a tensor). They come before dual tensors: a batched tensor cannot be unpacked.
    if _transforms_active():
        for t in tensors:
            if type(t) not in _PLAIN or _wrapped(t):
                return _TRANSFORM if any(isinstance(u, torch.Tensor) and _wrapped(u) for u in tensors) else _DISPATCH
        if _dual(tensors):
            return _TRANSFORM
    else:
        if _dual(tensors):
            return _TRANSFORM
        for t in tensors:
            if type(t) not in _PLAIN:
                return _DISPATCH
    if torch.is_grad_enabled():
        for t in tensors:
            if t.requires_grad:
                return _EAGER
    return _DIRECT
