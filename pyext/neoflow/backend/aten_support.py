"""Which core ATen operators the backend lowers into statements, and why a node that is not lowered runs in
eager PyTorch (``unsupported``): the operator tables ``lowering.Lowering`` writes statements from, and the
checks of a node's shapes, dtypes and arguments."""

from __future__ import annotations

import operator

import torch
from torch.fx.experimental.symbolic_shapes import free_unbacked_symbols

from .. import dsl
from . import convlowering, inlining

aten = torch.ops.aten

FLOATS = (torch.float32, torch.float64)

# one-argument functions: ATen operator -> the expression of the argument's (neoflow.dsl expressions)
UNARY = {
    aten.neg.default: operator.neg,
    aten.exp.default: dsl.exp,
    aten.log.default: dsl.log,
    aten.sqrt.default: dsl.sqrt,
    aten.rsqrt.default: dsl.rsqrt,
    aten.tanh.default: dsl.tanh,
    aten.sigmoid.default: dsl.sigmoid,
    aten.relu.default: dsl.relu,
    aten.abs.default: dsl.abs,
    aten.erf.default: dsl.erf,
    aten.sin.default: dsl.sin,
    aten.cos.default: dsl.cos,
    aten.log1p.default: dsl.log1p,
    aten.expm1.default: dsl.expm1,
    aten.reciprocal.default: lambda x: 1.0 / x,
    aten.clone.default: lambda x: x,
    aten.alias.default: lambda x: x,
}
BINARY = {
    aten.add.Tensor: operator.add,
    aten.sub.Tensor: operator.sub,
    aten.mul.Tensor: operator.mul,
    aten.div.Tensor: operator.truediv,
    aten.maximum.default: dsl.max,
    aten.minimum.default: dsl.min,
    aten.pow.Tensor_Scalar: dsl.pow,
    aten.pow.Tensor_Tensor: dsl.pow,
}
BINARY.update(
    {
        aten.add.Scalar: BINARY[aten.add.Tensor],
        aten.sub.Scalar: BINARY[aten.sub.Tensor],
        aten.mul.Scalar: BINARY[aten.mul.Tensor],
        aten.div.Scalar: BINARY[aten.div.Tensor],
        aten.rsub.Scalar: lambda a, b: b - a,
    }
)


def _compare(cmp):
    return lambda a, b: dsl.where(cmp(a, b), 1.0, 0.0)


# comparisons: a bool result, held as 1.0 or 0.0 inside a subgraph (and made bool where it leaves it)
COMPARE = {}
for _name, _cmp in (
    ("eq", operator.eq),
    ("ne", operator.ne),
    ("lt", operator.lt),
    ("le", operator.le),
    ("gt", operator.gt),
    ("ge", operator.ge),
):
    for _overload in ("Scalar", "Tensor"):
        COMPARE[getattr(getattr(aten, _name), _overload)] = _compare(_cmp)
COMPARE[aten.logical_not.default] = lambda x: dsl.where(x != 0.0, 0.0, 1.0)


def _truth(x):
    """1.0 where x is nonzero, else 0.0."""
    return dsl.where(x != 0.0, 1.0, 0.0)


# logic on truth values (nonzero is true; bitwise on bool tensors only: an integer's bitwise result is refused
# for its dtype): a bool result, held as 1.0 or 0.0
LOGIC = {
    aten.logical_and.default: lambda a, b: dsl.where(a != 0.0, _truth(b), 0.0),
    aten.logical_or.default: lambda a, b: dsl.where(a != 0.0, 1.0, _truth(b)),
    aten.logical_xor.default: lambda a, b: dsl.where(a != 0.0, 1.0 - _truth(b), _truth(b)),
}
LOGIC[aten.bitwise_and.Tensor] = LOGIC[aten.logical_and.default]
LOGIC[aten.bitwise_or.Tensor] = LOGIC[aten.logical_or.default]
LOGIC[aten.bitwise_xor.Tensor] = LOGIC[aten.logical_xor.default]
COMPARE.update(LOGIC)
# reductions: operator -> (assignment, whether the result is divided by the count of reduced elements)
REDUCE = {
    aten.sum.dim_IntList: ("+=", False),
    aten.sum.default: ("+=", False),
    aten.mean.dim: ("+=", True),
    aten.mean.default: ("+=", True),
    aten.amax.default: ("max=", False),
    aten.amin.default: ("min=", False),
}
CONSTANTS = {
    aten.full.default,
    aten.full_like.default,
    aten.scalar_tensor.default,
    aten.zeros_like.default,
    aten.ones_like.default,
}
# The views that only reshape their input, whatever its sizes: of a contiguous tensor, eager makes them
# contiguous views, free, and a subgraph that takes such a view reads it plainly (graphs._views_at_borders).
# Permutations are not among them: a subgraph would take their view as a strided input.
RESHAPING = {
    aten.view.default,
    aten._unsafe_view.default,
    aten.reshape.default,
    aten.unsqueeze.default,
    aten.squeeze.dim,
    aten.squeeze.dims,
    aten.squeeze.default,
    aten.alias.default,
}
_VIEWS = RESHAPING | {
    aten.permute.default,
    aten.transpose.int,
    aten.t.default,
    aten.expand.default,
    aten.select.int,
    aten.slice.Tensor,
}
_OTHER = {
    aten.mm.default,
    aten.bmm.default,
    aten.addmm.default,
    aten.gelu.default,
    aten.clamp.default,
    aten.where.self,
    aten.native_layer_norm.default,
    aten.var_mean.correction,
    aten._to_copy.default,
    aten.cat.default,
    aten.split_with_sizes.default,
    aten.split.Tensor,
    aten._softmax.default,
    aten._log_softmax.default,
    aten.elu.default,
    aten.convolution.default,
    aten.convolution_backward.default,
    aten.unfold_backward.default,
    aten.constant_pad_nd.default,
    aten.select_backward.default,
    aten.slice_backward.default,
    aten.embedding.default,
    aten.embedding_dense_backward.default,
    aten.gather.default,
    aten.nll_loss_forward.default,
    aten.nll_loss_backward.default,
    operator.getitem,
}
# gathers and the embedding's gradient (a scatter): operator -> the position of its index tensor argument
# (int32 or int64; a kernel checks its range before each launch)
INDEX_ARG = {
    aten.embedding.default: 1,
    aten.gather.default: 2,
    aten.embedding_dense_backward.default: 1,
    aten.nll_loss_forward.default: 1,
    aten.nll_loss_backward.default: 2,
}
SUPPORTED = set(UNARY) | set(BINARY) | set(COMPARE) | set(REDUCE) | CONSTANTS | _VIEWS | _OTHER
# operators that may read bool tensors (as 0 or 1)
_BOOL_IN = (
    {aten.where.self, aten._to_copy.default, aten.logical_not.default, aten.constant_pad_nd.default}
    | {k for k in COMPARE if k.overloadpacket in (aten.eq, aten.ne)}
    | set(LOGIC)
)


# operators with bool results (held as 1.0 or 0.0 inside a subgraph)
_BOOL_OUT = set(COMPARE) | {aten.constant_pad_nd.default}


def is_view(node) -> bool:
    """Whether node only rearranges its input (eager makes it a view, free)."""
    return node.target in _VIEWS or node.target is operator.getitem


def float_dtype(node):
    """The float dtype a supported node computes in: its float outputs', else its float inputs' (a comparison's);
    None when it has neither. ``unsupported`` refuses a node of two."""
    vals = val_of(node)
    for v in [*(vals if isinstance(vals, (tuple, list)) else [vals]), *map(val_of, _tensor_args(node))]:
        if isinstance(v, torch.Tensor) and v.dtype in FLOATS:
            return v.dtype
    return None


def val_of(node):
    return node.meta.get("val") if hasattr(node, "meta") else None


def _static(shape, symbolic: bool = False) -> bool:
    """Whether shape's sizes are numbers, or with symbolic, sizes of Dynamo's symbolic shapes that come from
    the graph's inputs (not from data: a ``nonzero``'s count)."""
    if symbolic:
        return not any(isinstance(d, torch.SymInt) and free_unbacked_symbols(d) for d in shape)
    return all(isinstance(d, int) for d in shape)


CONTRACTIONS = {
    aten.mm.default,
    aten.bmm.default,
    aten.addmm.default,
    aten.convolution.default,
    aten.convolution_backward.default,
}


# a graph pass that wants a node of its own making left to eager says why in node.meta[EAGER] (mmsum's
# concatenations)
EAGER = "neoflow_eager"


def unsupported(node, contractions: str = "neoflow", symbolic: bool = False) -> str | None:
    """Why node cannot be lowered, or None when it can; with contractions
    "eager", matrix products and convolutions are left to PyTorch, but for
    grouped 1x1 and depthwise convolutions on the CPU (grouped_on_cpu);
    symbolic accepts the symbolic sizes of a graph with dynamic shapes
    (backend/shapes.py)."""
    if why := node.meta.get(EAGER):
        return why
    user_op = inlining.op_of(node)
    if user_op is None and node.target not in SUPPORTED:
        return "no lowering for this operator"
    if user_op is not None and (why := inlining.unsupported(node, user_op)):
        return why
    if contractions == "eager" and node.target in CONTRACTIONS and not convlowering.grouped_on_cpu(node):
        return "a contraction, left to PyTorch's BLAS and oneDNN (contractions='eager')"
    vals = val_of(node)
    if vals is None:
        return "no shape information (node.meta['val'])"
    outs = vals if isinstance(vals, (tuple, list)) else [vals]
    if node.target is aten.convolution_backward.default:  # the gradients not asked for are None
        outs = [v for v in outs if v is not None]
    for v in outs:
        if not isinstance(v, torch.Tensor):
            return "an output that is not a tensor"
        if v.dtype not in FLOATS and not (v.dtype == torch.bool and node.target in _BOOL_OUT):
            return f"a {v.dtype} output (lowered graphs compute in float32 or float64)"
        if not _static(v.shape, symbolic):
            return "a size that depends on data" if symbolic else "a symbolic size in a graph of static shapes"
        if 0 in v.shape:
            return "an empty output"
    if node.target is operator.getitem:  # lowered with its producer
        return None
    dtypes = {v.dtype for v in outs if v.dtype in FLOATS}
    for a in _tensor_args(node):
        av = val_of(a)
        if symbolic and isinstance(av, (torch.SymInt, torch.SymFloat)) and node.target in _SIZES_READ:
            continue  # a size as an operand, counted (sizevalues.value), or an expand's: its output's shape
        if not isinstance(av, torch.Tensor):
            return "a size or number computed in the graph as an argument"
        if not _static(av.shape, symbolic):
            return "an input whose size depends on data" if symbolic else "an input of a symbolic size"
        if 0 in av.shape and node.target is not aten.cat.default:  # cat skips its empty parts
            return "an empty input"
        if av.dtype in FLOATS:
            dtypes.add(av.dtype)
        elif node.target in INDEX_ARG and a is node.args[INDEX_ARG[node.target]]:
            if av.dtype not in (torch.int32, torch.int64):
                return f"a {av.dtype} index tensor"
        elif not (node.target in _BOOL_IN and av.dtype == torch.bool):
            return f"a {av.dtype} input"
    if len(dtypes) > 1:
        return "inputs of mixed float dtypes"
    devices = {v.device for v in outs} | {
        val_of(a).device for a in _tensor_args(node) if isinstance(val_of(a), torch.Tensor)
    }
    if len(devices) > 1:
        return "tensors on several devices"
    return _argument_problem(node)


# the operators whose arguments may be sizes of a graph with symbolic shapes: elementwise operands (counted:
# sizevalues.value) and the sizes of an expand (its output's shape, which the lowering reads instead)
_SIZES_READ = {*BINARY, *COMPARE, aten.expand.default}


def _argument_problem(node) -> str | None:
    t, kw = node.target, node.kwargs
    if t in (aten.add.Tensor, aten.sub.Tensor) and kw.get("alpha", 1) != 1:
        return "alpha other than 1"
    if t is aten.div.Tensor and kw.get("rounding_mode") is not None:
        return "a rounding mode"
    if t is aten.addmm.default and (kw.get("beta", 1) != 1 or kw.get("alpha", 1) != 1):
        return "beta or alpha other than 1"
    if t in (aten.convolution.default, aten.convolution_backward.default):
        return convlowering.unsupported(node)
    if t in (aten._softmax.default, aten._log_softmax.default) and node.args[2]:
        return "half_to_float"
    if t is aten._to_copy.default and set(kw) - {"dtype", "layout", "device", "memory_format"}:
        return "a copy with other options"
    if t is aten.clamp.default and any(isinstance(a, torch.fx.Node) for a in node.args[1:]):
        return "tensor bounds"
    if t in (aten.pow.Tensor_Scalar,) and not isinstance(node.args[1], (int, float)):
        return "a non-numeric exponent"
    if t is aten.gather.default and node.kwargs.get("sparse_grad", False):
        return "a sparse gradient"
    if t is aten.embedding_dense_backward.default and node.args[4]:
        return "gradients scaled by frequency"
    if t in (aten.nll_loss_forward.default, aten.nll_loss_backward.default):
        forward = t is aten.nll_loss_forward.default
        x, reduction = node.args[0 if forward else 1], node.args[3 if forward else 4]
        if len(shape_of(x)) != 2 or reduction not in (1, 2):
            return "a loss over other than (batch, classes), or without reduction"
    if t is aten.constant_pad_nd.default and not isinstance(pad_value(node), (int, float)):
        return "a padding value that is not a number"
    return None


def pad_value(node):
    return node.args[2] if len(node.args) > 2 else node.kwargs.get("value", 0)


def _tensor_args(node):
    flat = []
    for a in list(node.args) + list(node.kwargs.values()):
        flat.extend(a if isinstance(a, (list, tuple)) else [a])
    return [a for a in flat if isinstance(a, torch.fx.Node)]


def shape_of(node) -> tuple:
    v = val_of(node)
    return tuple(v.shape)


def num(x) -> dsl.Expr:
    """A Python number as a floating-point literal of the expression language."""
    return dsl.value(x)
