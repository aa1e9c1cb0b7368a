"""The lowering of the operators that read or write through index tensors: embedding and gather (gathers),
the embedding's gradient (a scatter), and the negative log-likelihood loss and its gradient (a gather of
each sample's target class). ``LOWER`` maps each operator to the function that writes its statements into
a ``lowering.Lowering``. Every index tensor becomes an op input whose range the kernel checks before each
launch; an index outside it (a loss target at ignore_index, say) sends that call to the subgraph's eager
operators (``subgraph.Subgraph._run``)."""

from __future__ import annotations

import torch

from .. import dsl
from .aten_support import num, shape_of

aten = torch.ops.aten


def embedding(low, k: int, node) -> None:
    """The rows of the weight the indices pick."""
    w, ind = node.args[:2]
    low.emit_node(k, node, lambda i, s: low.at(w, [low.at(ind, i[:-1]), i[-1]]))


def gather(low, k: int, node) -> None:
    """Along dim, at the index tensor's element."""
    x, dim, ind = node.args[:3]
    dim %= len(shape_of(node))
    low.emit_node(k, node, lambda i, s: low.at(x, [*i[:dim], low.at(ind, i), *i[dim + 1 :]]))


def embedding_backward(low, k: int, node) -> None:
    """The embedding's gradient: each gradient row added into the row its index picked (but for
    padding_idx's), a scatter into E<k>, whose shape the op is given (``Lowering.scattered``)."""
    g, ind, _, pad = node.args[:4]
    idx = low.index_vars(k, shape_of(g))
    at = low.at(ind, idx[:-1])
    rhs = low.at(g, idx)
    if pad >= 0:
        rhs = dsl.where(at != pad, rhs, 0.0)
    name = f"E{k}"  # not T<k>: written through an index tensor, it keeps row-major order
    low.emit(name, [at, idx[-1]], "+=", rhs)
    low.bind(node, name, shape_of(node))
    low.scattered[name] = tuple(shape_of(node))


def nll_loss(low, k: int, node) -> None:
    """nll_loss_forward over (batch, classes), mean or sum: the loss T<k> and the total weight N<k>. A
    target equal to ignore_index (-100 by default) is out of the index range: the launch's range check
    sends that call to eager."""
    x, t, w, reduction, ignore = node.args[:5]
    n = low.index_vars(k, shape_of(t))
    tn = low.at(t, n)
    wt = low.at(w, [tn]) if w is not None else num(1.0)
    valid = tn != num(float(ignore))
    o, p, q = (low.index_vars(k, (), prefix=c) for c in "opq")
    low.emit(f"S{k}", o, "+=", dsl.where(valid, -low.at(x, [*n, tn]) * wt, 0.0))
    low.emit(f"N{k}", p, "+=", dsl.where(valid, wt, 0.0))
    total = dsl.Tensor(f"S{k}")[tuple(q)]
    low.emit(f"T{k}", q, "=", total / dsl.Tensor(f"N{k}")[tuple(q)] if reduction == 1 else total)
    low.names[node] = (f"T{k}", f"N{k}")
    low.shapes[f"T{k}"] = low.shapes[f"N{k}"] = (1,)


def nll_loss_backward(low, k: int, node) -> None:
    """Per (sample, class): minus the loss's gradient (over the total weight for a mean), times the
    class's weight, at the sample's target class; 0 elsewhere."""
    g, _, t, w, reduction, ignore, total = node.args[:7]

    def grad(idx, shape):
        tn = low.at(t, idx[:1])
        d = -low.at(g, [])
        if w is not None:
            d = d * low.at(w, idx[1:])
        if reduction == 1:
            d = d / low.at(total, [])
        return dsl.where(tn != num(float(ignore)), dsl.where(idx[1] == tn, d, 0.0), 0.0)

    low.emit_node(k, node, grad)


LOWER = {
    aten.embedding.default: embedding,
    aten.gather.default: gather,
    aten.embedding_dense_backward.default: embedding_backward,
    aten.nll_loss_forward.default: nll_loss,
    aten.nll_loss_backward.default: nll_loss_backward,
}
