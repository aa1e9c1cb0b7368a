"""Memory layouts of a lowered subgraph's tensors: dense layouts other than row-major (channels-last).

A tensor eager lays out densely in another order than row-major (an NCHW tensor in channels-last memory,
strides (HWC, 1, WC, C)) is, in memory, a row-major tensor of its dimensions in decreasing stride
(``physical_order``: N, H, W, C). A subgraph whose inputs or outputs are such tensors is lowered with
every tensor of their rank in that order (``preferred``): the op reads and writes them in the order they
lie in memory, its loops run over channels innermost, and the outputs come back as views at eager's
strides (no copy on the way in or out). Other tensors keep row-major order."""

from __future__ import annotations

import torch

from .aten_support import shape_of, val_of


def physical_order(shape, stride) -> list | None:
    """The dimensions of a dense layout other than row-major in decreasing stride (the dimensions of one
    element last); None for a row-major layout, one that is not dense (expanded, overlapping), or one with
    fewer than 2 dimensions of more than one element."""
    big = [d for d in range(len(shape)) if shape[d] > 1]
    if len(big) < 2 or any(n == 0 for n in shape):
        return None
    order = sorted(big, key=lambda d: -stride[d])
    expect = 1
    for d in reversed(order):
        if stride[d] != expect:
            return None
        expect *= shape[d]
    if order == big:
        return None
    return order + [d for d in range(len(shape)) if shape[d] == 1]


def preferred(gm: torch.fx.GraphModule, strided: dict) -> dict:
    """Rank -> the order every tensor of that rank of gm's subgraph is lowered in: the physical order of
    its first input (of those whose strides are in strided, by placeholder position) or output laid out
    densely other than row-major; empty when there is none."""
    prefer: dict = {}
    position = 0
    for node in gm.graph.nodes:
        if node.op == "placeholder":
            st = strided.get(position)
            position += 1
            order = physical_order(shape_of(node), st) if st is not None else None
            if order is not None:
                prefer.setdefault(len(order), order)
        elif node.op == "output":
            outs = node.args[0] if isinstance(node.args[0], (tuple, list)) else [node.args[0]]
            for o in outs:
                val = val_of(o)
                order = physical_order(tuple(val.shape), val.stride()) if isinstance(val, torch.Tensor) else None
                if order is not None:
                    prefer.setdefault(len(order), order)
    return prefer
