"""Sums of matrix products as one matrix product: a graph pass of the backend.

A weight used at every step of an unrolled recurrent cell gets its gradient
as a sum of one matrix product per step, ``sum_t dY_t^T X_t``: AOT Autograd
traces ``add(add(mm(a_1, b_1), mm(a_2, b_2)), ...)`` (each product maybe
transposed). Each product is thin (its inner dimension is the batch), writes
a whole weight-sized output, and the adds read them all again: at LLTM's
bench size 16 products of 768x16 by 16x512 and 15 adds of 1.5 MB tensors.
The sum equals one product over the concatenated inner dimension,

    sum_t a_t @ b_t  ==  cat([a_1, ..., a_n], 1) @ cat([b_1, ..., b_n], 0)

which BLAS runs at a higher rate, writing the output once (LLTM's training
step: about 10 ms before, 8 after, on the 2-core Xeon). ``merge`` rewrites
such add trees of an FX graph in place (IR to IR), before the graph is
partitioned, where the concatenations copy less than the merge saves
(_worth); the concatenations run in eager (see CAT_REASON).
The sum's order of additions changes: within float32 tolerances, as any
BLAS blocking of the inner dimension.
"""

from __future__ import annotations

import torch
import torch.fx

from .aten_support import EAGER, val_of

aten = torch.ops.aten

MIN_TERMS = 3  # fewer products are not worth the concatenations


def _is_add(n) -> bool:
    """A plain elementwise sum of two tensors of its own shape and dtype (no alpha, no broadcast)."""
    if not (isinstance(n, torch.fx.Node) and n.op == "call_function" and n.target is aten.add.Tensor):
        return False
    if n.kwargs.get("alpha", 1) != 1 or len(n.args) != 2:
        return False
    out = val_of(n)
    return out is not None and all(
        val_of(a) is not None and val_of(a).shape == out.shape and val_of(a).dtype == out.dtype for a in n.args
    )


def _only_user(n) -> torch.fx.Node | None:
    return next(iter(n.users)) if len(n.users) == 1 else None


def _is_transpose(n) -> bool:
    """A 2-d transpose: permute(x, [1, 0]) as decompositions write it, or t(x)."""
    if not (isinstance(n, torch.fx.Node) and n.op == "call_function" and isinstance(n.args[0], torch.fx.Node)):
        return False
    if n.target is aten.t.default:
        return val_of(n) is not None and val_of(n).dim() == 2
    return n.target is aten.permute.default and list(n.args[1]) == [1, 0]


def _product(leaf) -> tuple | None:
    """(the mm node, transposed) when leaf is mm(a, b) under any number of transposes (AOT Autograd makes
    two of a linear layer's weight gradient), each used by nothing else."""
    transposed = False
    while _is_transpose(leaf):
        if len(leaf.users) != 1:
            return None
        transposed, leaf = not transposed, leaf.args[0]
    if leaf.op != "call_function" or leaf.target is not aten.mm.default or len(leaf.users) != 1:
        return None
    return leaf, transposed


def _terms(root) -> list:
    """The leaves of the add tree rooted at root: operands of adds that only that tree uses."""
    out, stack = [], list(root.args)
    while stack:
        a = stack.pop()
        if _is_add(a) and _only_user(a) is not None:
            stack += a.args
        else:
            out.append(a)
    return out


# why the concatenations stay in eager (node.meta[EAGER], which aten_support.unsupported honours): a lowered
# cat of n parts reads each element through n nested wheres (measured: 368 us for LLTM's two of 16 parts,
# 1.3 MB, where eager copies at memory speed)
CAT_REASON = "a merged matrix product's operands, concatenated: eager copies them at memory speed"


def _cat(graph, mode, parts: list, dim: int):
    """A node concatenating 2-d parts along dim: of the parts' sources, transposed back, when every part is
    a transpose (the sources then lie contiguous, and the product takes the transpose as strides)."""
    if all(map(_is_transpose, parts)):
        inner = _node(graph, mode, aten.cat.default, ([p.args[0] for p in parts], 1 - dim))
        inner.meta[EAGER] = CAT_REASON
        return _node(graph, mode, aten.permute.default, (inner, [1, 0]))
    node = _node(graph, mode, aten.cat.default, (list(parts), dim))
    node.meta[EAGER] = CAT_REASON
    return node


def _node(graph, mode, target, args):
    node = graph.call_function(target, args)
    vals = torch.fx.node.map_arg(args, lambda a: a.meta["val"])
    with mode:
        node.meta["val"] = target(*vals)
    return node


def _worth(products) -> bool:
    """Whether merging saves memory traffic: the concatenations copy every operand once, the merge saves
    writing all outputs but one and the adds' reading them again. A weight's gradient over a sequence saves
    40x what it copies (LLTM: 16 outputs of 768x512 against operands of 16x768 and 16x512); a forward
    layer's x W1 + s W2 + h W3 would copy its three weights at every step to save two batch-sized outputs."""
    operands = [mm.args[k] for _, mm in products for k in (0, 1)]
    if any(not isinstance(val_of(a), torch.Tensor) for a in operands):
        return False  # an operand without a traced value: left as it is
    copied = sum(val_of(a).numel() for a in operands)
    saved = 2 * (len(products) - 1) * products[0][1].meta["val"].numel()
    return copied < saved


def merge(gm: torch.fx.GraphModule, min_terms: int = MIN_TERMS) -> int:
    """Rewrites every add tree of at least min_terms matrix products of one orientation (and any other
    terms) into one product of concatenations plus the other terms; returns how many products were merged
    away. Graph-order safe: the new nodes go just before the tree's root, after every operand."""
    from torch._guards import detect_fake_mode

    merged = 0
    roots = [n for n in gm.graph.nodes if _is_add(n) and not (_is_add(_only_user(n)) if _only_user(n) else False)]
    for root in roots:
        terms = _terms(root)
        if len(terms) < min_terms:
            continue
        groups: dict = {False: [], True: []}
        others = []
        for t in terms:
            p = _product(t) if isinstance(t, torch.fx.Node) else None
            (groups[p[1]] if p else others).append((t, p[0]) if p else t)
        transposed = len(groups[True]) > len(groups[False])
        products = groups[transposed]
        if len(products) < min_terms:
            continue
        if not _worth(products):
            continue
        others += [t for t, _ in groups[not transposed]]
        mode = detect_fake_mode([val_of(mm) for _, mm in products])
        if mode is None:
            continue
        g = gm.graph
        with g.inserting_before(root):
            a = _cat(g, mode, [mm.args[0] for _, mm in products], 1)
            b = _cat(g, mode, [mm.args[1] for _, mm in products], 0)
            total = _node(g, mode, aten.mm.default, (a, b))
            if transposed:
                total = _node(g, mode, aten.permute.default, (total, [1, 0]))
            for t in others:
                total = _node(g, mode, aten.add.Tensor, (total, t))
        root.replace_all_uses_with(total)
        merged += len(products) - 1
    if merged:
        gm.graph.eliminate_dead_code()
        gm.recompile()
    return merged
