"""Convolutions as statements, for lowering.Lowering: ``aten.convolution``
(any number of spatial dimensions, stride, padding, dilation, groups; not
transposed) and its ``convolution_backward``.

For a 2-d convolution with stride S, padding P and dilation D, node k:

    Y[n, o, p, q] += where(guard, X[n, g*Ci + c, p*S + r*D - P, q*S + s*D - P] * W[o, c, r, s], 0.0)

where ``g = o / Co`` is the output channel's group (Ci and Co the channels
per group) and ``guard`` keeps the input position inside the image (no
guard without padding). The input's gradient gathers over the output
positions that read it, those where ``h + P - r*D`` is a multiple of S:

    dX[n, i, h, w] += where(guard, dY[n, (i / Ci)*Co + o, (h + P - r*D) / S, ...] * W[.., i % Ci, r, s], 0.0)

and the weight's gradient sums the products over the batch and the output
positions; the bias's sums dY.

``unfold_backward`` (the gradient of ``x.unfold(dim, size, step)``, which
PyTorch's core decompositions would make an accumulating index_put, 1.7 ms
a call at CapsNet's sizes, or its own kernel, 1.3 ms) gathers likewise,
over the windows that hold each position:

    dX[.., x, ..] += where(x - w*step in [0, size), dU[.., w, .., x - w*step], 0.0)
"""

from __future__ import annotations

import functools
import operator

import torch

from .. import dsl

aten = torch.ops.aten


def _conv_args(node):
    a = list(node.args) + [None] * 10
    return {
        "stride": list(a[3]),
        "padding": list(a[4]),
        "dilation": list(a[5]),
        "transposed": a[6],
        "output_padding": list(a[7] or []),
        "groups": a[8],
    }


def grouped_on_cpu(node) -> bool:
    """Whether node is a convolution (or its backward) on the CPU that neoflow lowers even where
    contractions are left to PyTorch (``contractions="eager"``): grouped 1x1 or depthwise (groups > 1). oneDNN
    runs those slowly on NCHW tensors (a ShuffleNet unit's 240 -> 60 channel 1x1 convolution in 3 groups:
    2.1 ms forward, 56 GFLOP/s; 0.8 ms on channels-last tensors, whose conversions cost more than that), and
    lowered they fuse with the batch norms, ReLUs and shuffles around them: ShuffleNet's training step went
    from 36 to 27 ms on the 2-core Xeon. Dense convolutions and grouped ones with wider kernels and several
    channels a group (ResNeXt's) stay with oneDNN, as does every convolution on CUDA (cuDNN; not measured)."""
    backward = node.target is not aten.convolution.default
    if node.target not in (aten.convolution.default, aten.convolution_backward.default):
        return False
    x, w = (node.args[1], node.args[2]) if backward else (node.args[0], node.args[1])
    groups = (_backward_args if backward else _conv_args)(node)["groups"]
    xv, wv = x.meta.get("val"), w.meta.get("val")
    if groups <= 1 or xv is None or wv is None or xv.device.type != "cpu":
        return False
    return all(k == 1 for k in wv.shape[2:]) or (groups == xv.shape[1] and wv.shape[1] == 1)


def unsupported(node) -> str | None:
    args = _conv_args(node) if "backward" not in str(node.target) else _backward_args(node)
    if args["transposed"]:
        return "a transposed convolution"
    image = node.args[1 if "backward" in str(node.target) else 0].meta.get("val")
    if isinstance(image, torch.Tensor) and any(isinstance(n, torch.SymInt) for n in image.shape[2:]):
        return "a convolution over an image of symbolic size (its padding's bounds would be sizes as values)"
    return None


def _backward_args(node):
    a = list(node.args)
    return {
        "stride": list(a[4]),
        "padding": list(a[5]),
        "dilation": list(a[6]),
        "transposed": a[7],
        "groups": a[9],
        "mask": list(a[10]),
    }


def _all(conds: list):
    """The conjunction of the conditions, in order; None for none."""
    return functools.reduce(operator.and_, conds) if conds else None


def _guard(pos: list, pads: list[int], sizes: list[int]):
    """In-bounds condition of input positions pos (before subtracting the padding); None without padding."""
    conds = []
    for p, pad, n in zip(pos, pads, sizes):
        if pad:
            conds += [p >= pad, p < n + pad]
    return _all(conds)


def _guarded(guard, prod):
    """prod where the guard holds, else 0.0 (prod itself without a guard)."""
    return prod if guard is None else dsl.where(guard, prod, 0.0)


def _image_read(low, a: dict, x, xs, batch, chan, pts: list, taps: list) -> tuple:
    """x's element that output position pts reads through taps, and the
    guard that keeps it inside the image (None without padding)."""
    pos = [pts[d] * a["stride"][d] + taps[d] * a["dilation"][d] for d in range(len(xs) - 2)]
    reads = [p - a["padding"][d] if a["padding"][d] else p for d, p in enumerate(pos)]
    return low.at(x, [batch, chan, *reads]), _guard(pos, a["padding"], xs[2:])


def convolution(low, k: int, node) -> None:
    x, w, b = node.args[0], node.args[1], node.args[2]
    a = _conv_args(node)
    xs, ws, out = low.shape_of(x), low.shape_of(w), low.shape_of(node)
    groups = a["groups"]
    ci, co = xs[1] // groups, ws[0] // groups
    idx = low.index_vars(k, out)
    (c,) = low.index_vars(k, [ci], prefix="c")
    taps = low.index_vars(k, ws[2:], prefix="r")
    chan = c if groups == 1 else idx[1] // co * ci + c
    xr, guard = _image_read(low, a, x, xs, idx[0], chan, idx[2:], taps)
    prod = xr * low.at(w, [idx[1], c, *taps])
    name = f"T{k}" if b is None else f"C{k}"
    low.emit(name, idx, "+=", _guarded(guard, prod))
    if b is not None:
        j = low.index_vars(k, out, prefix="j")
        low.emit(f"T{k}", j, "=", dsl.Tensor(f"C{k}")[tuple(j)] + low.at(b, [j[1]]))
    low.bind(node, f"T{k}", out)


def convolution_backward(low, k: int, node) -> None:
    dy, x, w = node.args[0], node.args[1], node.args[2]
    a = _backward_args(node)
    xs, ws, ys = low.shape_of(x), low.shape_of(w), low.shape_of(dy)
    nsp = len(xs) - 2
    groups = a["groups"]
    ci, co = xs[1] // groups, ws[0] // groups
    names = [None, None, None]
    if a["mask"][0]:  # the input's gradient
        idx = low.index_vars(k, xs, prefix="a")
        (o,) = low.index_vars(k, [co], prefix="o")
        taps = low.index_vars(k, ws[2:], prefix="t")
        nums = [
            idx[2 + d] + a["padding"][d] - taps[d] * a["dilation"][d]
            if a["padding"][d]
            else idx[2 + d] - taps[d] * a["dilation"][d]
            for d in range(nsp)
        ]
        conds = []
        for d, num in enumerate(nums):  # num / S < Ho written as num < Ho * S, the form the bounds proof follows
            conds += [num >= 0, num < ys[2 + d] * a["stride"][d]]
            if a["stride"][d] != 1:
                conds.append(num % a["stride"][d] == 0)
        # the proof of bounds does not carry the guard through the division: the read position is clamped
        # into the output, which changes nothing where the guard holds
        outs = [
            dsl.min(dsl.max(num // a["stride"][d], 0), ys[2 + d] - 1) if a["stride"][d] != 1 else num
            for d, num in enumerate(nums)
        ]
        och = o if groups == 1 else idx[1] // ci * co + o
        wch = 0 if ci == 1 else (idx[1] if groups == 1 else idx[1] % ci)
        prod = low.at(dy, [idx[0], och, *outs]) * low.at(w, [och, wch, *taps])
        low.emit(f"GX{k}", idx, "+=", dsl.where(_all(conds), prod, 0.0))
        low.shapes[f"GX{k}"] = tuple(xs)
        names[0] = f"GX{k}"
    if a["mask"][1]:  # the weight's gradient
        widx = low.index_vars(k, ws, prefix="b")
        (n,) = low.index_vars(k, [xs[0]], prefix="n")
        pts = low.index_vars(k, ys[2:], prefix="p")
        chan = widx[1] if groups == 1 else widx[0] // co * ci + widx[1]
        xr, guard = _image_read(low, a, x, xs, n, chan, pts, widx[2:])
        prod = low.at(dy, [n, widx[0], *pts]) * xr
        low.emit(f"GW{k}", widx, "+=", _guarded(guard, prod))
        low.shapes[f"GW{k}"] = tuple(ws)
        names[1] = f"GW{k}"
    if a["mask"][2]:  # the bias's gradient
        (bo,) = low.index_vars(k, [ws[0]], prefix="e")
        (bn,) = low.index_vars(k, [xs[0]], prefix="f")
        pts = low.index_vars(k, ys[2:], prefix="q")
        low.emit(f"GB{k}", [bo], "+=", low.at(dy, [bn, bo, *pts]))
        low.shapes[f"GB{k}"] = (ws[0],)
        names[2] = f"GB{k}"
    low.names[node] = tuple(names)


def unfold_backward(low, k: int, node) -> None:
    g, sizes, dim, size, step = node.args[:5]
    out = tuple(sizes)
    dim %= len(out)
    idx = low.index_vars(k, out)
    (w,) = low.index_vars(k, [low.shape_of(g)[dim]], prefix="w")
    num = idx[dim] - w * step if step != 1 else idx[dim] - w
    read = list(idx)
    read[dim] = w
    # clamped for the proof of bounds, which does not carry the guard into the read; the guard decides
    read.append(dsl.min(dsl.max(num, 0), size - 1))
    low.emit(f"T{k}", idx, "+=", dsl.where((num >= 0) & (num < size), low.at(g, read), 0.0))
    low.bind(node, f"T{k}", out)
