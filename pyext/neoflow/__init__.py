"""neoflow: new tensor operators for PyTorch, written as index expressions.

    import neoflow
    matmul = neoflow.op("C[i,j] += A[i,k] * B[k,j]")
    c = matmul(a, b)

See ``neoflow.op`` for the two ways to define an op.
"""

from __future__ import annotations

import re

import torch as _torch

from . import bundle, dsl, nn
from .config import configure
from .dsl import (
    abs,
    acos,
    asin,
    atan,
    atan2,
    ceil,
    clamp,
    cos,
    cosh,
    erf,
    exp,
    exp2,
    expm1,
    floor,
    indices,
    int32,
    int64,
    log,
    log1p,
    log2,
    max,
    min,
    pow,
    reduce_max,
    reduce_min,
    reduce_prod,
    reduce_sum,
    relu,
    round,
    rsqrt,
    sigmoid,
    sign,
    sin,
    sinh,
    softplus,
    sqrt,
    tan,
    tanh,
    tensor,
    to_float,
    trunc,
    where,
)
from .errors import Error, ForkError
from .memory import empty_cache, memory_stats
from .op import Op
from .tuning import BackgroundKernel, KernelResult, TuneReport, background_status, tune, tune_session, wait_background
from .version import __version__
from .version import check_torch as _check_torch

_check_torch(_torch.__version__)

__all__ = [
    "BackgroundKernel",
    "Error",
    "ForkError",
    "KernelResult",
    "Op",
    "TuneReport",
    "__version__",
    "abs",
    "acos",
    "asin",
    "atan",
    "atan2",
    "background_status",
    "bundle",
    "nn",
    "ceil",
    "clamp",
    "compile",
    "compile_report",
    "configure",
    "cos",
    "cosh",
    "empty_cache",
    "erf",
    "exp",
    "exp2",
    "expm1",
    "floor",
    "indices",
    "log",
    "log1p",
    "log2",
    "max",
    "memory_stats",
    "min",
    "int32",
    "int64",
    "op",
    "pow",
    "reduce_max",
    "reduce_min",
    "reduce_prod",
    "reduce_sum",
    "relu",
    "round",
    "rsqrt",
    "sigmoid",
    "sign",
    "sin",
    "sinh",
    "softplus",
    "sqrt",
    "tan",
    "tanh",
    "tensor",
    "to_float",
    "trunc",
    "tune",
    "tune_session",
    "wait_background",
    "where",
]


def compile(model=None, *, explain: bool = False, contractions: str = "eager", measure: bool = True, **kwargs):
    """``torch.compile(model, backend="neoflow", **kwargs)``: the model's graphs
    lowered into neoflow ops where neoflow has a lowering, the rest in eager
    PyTorch; ``explain=True`` prints what each graph lowered and what fell
    back, and why; ``contractions="neoflow"`` lowers matrix products and
    convolutions too (by default PyTorch runs them; see neoflow.backend.graphs);
    with ``measure=True`` (the default) each graph is timed compiled and in
    eager over its first calls, and the faster runs from then on (see
    neoflow.backend.choice)."""
    from . import backend

    return backend.compile(model, explain=explain, contractions=contractions, measure=measure, **kwargs)


def compile_report(clear: bool = False) -> list[dict]:
    """Per graph compiled by ``backend="neoflow"``: operator calls, how many
    were lowered, into how many neoflow ops, what fell back and why, and
    whether the graph runs compiled or in eager (``choice``)."""
    from . import backend

    return backend.report(clear)


def __getattr__(name):
    # neoflow.tunedb is imported on first use: importing it here would make
    # `python -m neoflow.tunedb` warn that runpy found it already imported.
    if name == "tunedb":
        import importlib

        return importlib.import_module(f"{__name__}.tunedb")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def op(
    source=None,
    /,
    *,
    name=None,
    inputs=None,
    outputs=None,
    sizes=None,
    out_shapes=None,
    consts=None,
    forward_only=False,
    **kw,
):
    """Defines an op from text, or from a decorated function.

    Text: ``neoflow.op("Y[n,k,p,q] += X[n,c,p*S+r,q*S+s] * W[k,c,r,s]", S=2)``.
    Statements are separated by newlines or ';'; the assignment operators are
    ``=``, ``+=``, ``*=``, ``max=`` and ``min=``; an index that appears only on
    the right is reduced over. ``inputs=[...]`` fixes the order of the call's
    arguments (default: first appearance), ``outputs=[...]`` the order of the
    returned outputs (default: statement order). ``out_shapes={"Y": (V, F)}``
    gives the shape of an output the op writes through an index tensor
    (``Y[Dst[e], f] += ...``), which nothing else bounds.

    Decorated: ``@neoflow.op`` or ``@neoflow.op(S=2)`` on a function whose
    positional parameters are the inputs and whose keyword-only parameters
    are constants; see ``neoflow.dsl``. It returns its outputs in the order
    the function returns them.

    ``forward_only=True``: no caller differentiates the op through neoflow,
    so its kernels store no temporaries for a gradient (see ``Op``).
    """
    given = dict(name=name, inputs=inputs, outputs=outputs, sizes=sizes, out_shapes=out_shapes, consts=consts)
    if isinstance(source, str):
        return Op(source, forward_only=forward_only, **given, **kw)
    if source is None:
        return lambda fn: op(fn, forward_only=forward_only, **given, **kw)
    if callable(source):
        if inputs is not None:
            raise TypeError("a decorated op's inputs are its positional parameters; do not pass inputs=")
        if outputs is not None:
            raise TypeError("a decorated op's outputs are the tensors it returns, in that order; do not pass outputs=")
        bound = dict(consts or {})
        bound.update(kw)
        text, params, returned = dsl.trace(source, bound)
        # The returned order is the op's output order: the Go core checks it
        # and everything downstream (gradients included) follows it.
        label = name if name is not None else re.sub(r"[^A-Za-z0-9_.\-]", "_", source.__name__)[:128] or "op"
        result = Op(
            text,
            name=label,
            inputs=params,
            outputs=returned,
            sizes=sizes,
            out_shapes=out_shapes,
            consts=bound,
            forward_only=forward_only,
        )
        result.__doc__ = source.__doc__
        return result
    raise TypeError(f"neoflow.op takes an expression string or a function, got {type(source).__name__}")
