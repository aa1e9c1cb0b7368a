"""Fused ATen operators decomposed inside the subgraphs that lower them, and nowhere else.

AOT Autograd hands the backend graphs of ATen operators as autograd dispatched them: fused ones among them
(``native_layer_norm_backward``, ``gelu_backward``, ``_softmax_backward_data``, ``threshold_backward``, batch
norm's forward and backward, ``nll_loss2d_forward``, ``max_pool2d_with_indices_backward``, ...). Decomposing the whole
graph into core ATen operators (as Inductor does) lets neoflow lower the parts, but every part it cannot
lower (the integer indexing of a loss or an embedding, a mask) then runs in eager as a string of small
operators where the fused kernel ran once: on small transformers on the CPU that made AOT's graph 1.4x as
slow as the same graph undecomposed, more than the lowered parts won back.

So a fused operator is decomposed only where its decomposition lowers whole (``unsupported``: every operator
of it lowers; traced once per operator and argument signature): it then joins a subgraph, inside which it is
replaced by its parts (``decompose``), which fuse with their neighbours. Otherwise it stays whole, in eager,
as one fused kernel. Operators the lowering writes statements for directly (``aten_support.SUPPORTED``) are
never decomposed.
"""

from __future__ import annotations

import functools
import operator

import torch

from . import aten_support, sizevalues

aten = torch.ops.aten


@functools.cache
def table() -> dict:
    """PyTorch's core ATen decompositions, less those of operators lowered whole and of fused attention
    (with the CPU flash attention's forward decomposed, AOT Autograd's backward still calls the fused
    backward with the decomposition's outputs, and the gradients of everything before it came out wrong,
    measured with torch 2.15 on nn.MultiheadAttention), plus batch norm's in training and in eval mode
    (core ATen operators, so not in that table; decomposed: mean, variance or the running ones, and the
    affine map)."""
    from torch._decomp import core_aten_decompositions, get_decompositions

    out = {
        k: v
        for k, v in core_aten_decompositions().items()
        if "scaled_dot_product" not in str(k) and k not in aten_support.SUPPORTED
    }
    out.update(
        get_decompositions(
            [
                aten._native_batch_norm_legit_functional,
                aten._native_batch_norm_legit,
                aten._native_batch_norm_legit_no_training,
            ]
        )
    )
    # unfold's gradient stays whole: neoflow gathers it over the windows (convlowering.unfold_backward), where
    # the decomposition's accumulating index_put ran in eager at 1.7 ms a call (CapsNet)
    out.pop(aten.unfold_backward.default, None)
    return out


# why a decomposable operator whose parts only rearrange its input (detach, unbind) is left to eager, where
# its views cost nothing (not a fallback: the report does not list it)
VIEW = "a view (its decomposition only rearranges its input), made in eager"


def decomposable(node) -> bool:
    return node.op == "call_function" and node.target in table()


def unsupported(node, contractions: str, symbolic: bool = False) -> str | None:
    """Why node's decomposition does not lower whole, or None when it does (node is decomposable); symbolic
    as for aten_support.unsupported."""
    args = [_val(a) for a in node.args]
    kwargs = {k: _val(a) for k, a in node.kwargs.items()}
    used = None  # of several outputs, those read (the others' parts are dead code, and not checked)
    if isinstance(node.meta.get("val"), (tuple, list)):
        used = tuple(sorted({u.args[1] for u in node.users if u.target is operator.getitem}))
    try:
        key = (node.target, _signature(args), _signature(kwargs), used, contractions, symbolic)
        hash(key)
    except TypeError:  # an argument that cannot be a key: traced every time
        return _check(node.target, args, kwargs, used, contractions, symbolic)
    if key not in _cache:
        _cache[key] = _check(node.target, args, kwargs, used, contractions, symbolic)
    return _cache[key]


_cache: dict = {}


def _check(target, args, kwargs, used, contractions: str, symbolic: bool) -> str | None:
    flat, spec = torch.utils._pytree.tree_flatten((args, kwargs))
    tensors = [a for a in flat if isinstance(a, torch.Tensor)]
    if not tensors:
        return "no tensor argument"

    def call(*ts):
        it = iter(ts)
        a, kw = torch.utils._pytree.tree_unflatten([next(it) if isinstance(x, torch.Tensor) else x for x in flat], spec)
        out = target(*a, **kw)
        return out if used is None else tuple(out[i] for i in used)

    try:
        parts = _trace(call, tensors)
    except Exception as e:  # noqa: BLE001 - a decomposition that does not trace stays whole
        return f"its decomposition does not trace ({type(e).__name__})"
    parts.graph.eliminate_dead_code()
    calls = [n for n in parts.graph.nodes if n.op == "call_function"]
    if all(map(aten_support.is_view, calls)):  # unbind, say: lowered, the views would be copies
        return VIEW
    for n in calls:
        if _empty_constant(n):  # made by the subgraph's call (decompose)
            continue
        if symbolic and sizevalues.is_size(n):
            continue  # a size computed from the inputs' (sym_numel): read as a value where used (sizevalues.value)
        if why := aten_support.unsupported(n, contractions, symbolic):
            return f"its decomposition holds {n.target}: {why}"
    return None


def _trace(fn, values: list) -> torch.fx.GraphModule:
    """fn traced with the decompositions on fake tensors of values' shapes, strides, dtypes and devices, made
    in a fake mode of its own: values are the graph's fake tensors, whose mode (AOT Autograd's) make_fx
    cannot always take as its own (torch 2.6 crashed converting them)."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.proxy_tensor import make_fx

    with FakeTensorMode() as mode:
        inputs = [
            torch.empty_strided(v.shape, v.stride(), dtype=v.dtype, device=v.device)
            if isinstance(v, torch.Tensor)
            else v
            for v in values
        ]
    with mode:
        return make_fx(fn, decomposition_table=table())(*inputs)


def _empty_constant(node) -> bool:
    """Whether node makes an empty tensor that only leaves the graph (batch norm in eval mode returns its
    saved statistics so)."""
    v = node.meta.get("val")
    return (
        node.target in aten_support.CONSTANTS
        and isinstance(v, torch.Tensor)
        and 0 in v.shape
        and all(u.op == "output" for u in node.users)
    )


def _val(a):
    if isinstance(a, torch.fx.Node):
        return a.meta.get("val")
    if isinstance(a, (list, tuple)):
        return type(a)(_val(x) for x in a)
    return a


def _signature(x):
    if isinstance(x, torch.Tensor):
        return ("T", _signature(tuple(x.shape)), _signature(tuple(x.stride())), x.dtype, x.device.type)
    if isinstance(x, (torch.SymInt, torch.SymFloat)):  # a symbolic size, by its expression in the sizes
        return ("S", str(x.node.expr))
    if isinstance(x, (list, tuple)):
        return tuple(_signature(y) for y in x)
    if isinstance(x, dict):
        return tuple(sorted((k, _signature(v)) for k, v in x.items()))
    return x


def decompose(gm: torch.fx.GraphModule) -> tuple[torch.fx.GraphModule, dict]:
    """gm with its decomposable operators replaced by their parts (traced again on its inputs' fake
    values; gm itself unchanged), or gm itself when it has none; and the empty tensors the parts return,
    taken out of its outputs: {position among the outputs: (shape, dtype)}, for the caller to make."""
    if not any(decomposable(n) for n in gm.graph.nodes):
        return gm, {}
    parts = _trace(gm, [n.meta["val"] for n in gm.graph.nodes if n.op == "placeholder"])
    out = next(n for n in parts.graph.nodes if n.op == "output")
    empties = {}
    if isinstance(out.args[0], (tuple, list)):
        kept = []
        for k, o in enumerate(out.args[0]):
            if isinstance(o, torch.fx.Node) and _empty_constant(o):
                v = o.meta["val"]
                empties[k] = (tuple(v.shape), v.dtype)
            else:
                kept.append(o)
        out.args = (tuple(kept),)
    parts.graph.eliminate_dead_code()  # parts of outputs not asked for (a gradient of output_mask False)
    parts.recompile()
    return parts, empties
