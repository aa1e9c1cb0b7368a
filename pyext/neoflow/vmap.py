"""torch.vmap over ops: every op's custom op has a batching rule that adds a
batch index to the op's expression, first in every access of a batched input
and of every tensor the op writes, and runs that op once on the whole batch.
The index language makes this exact: the batched op is the op, per example."""

from __future__ import annotations

import re

from .definition import consts_of
from .sizes import parse_sizes_text, sizes_text

_ACCESS = re.compile(r"\b([A-Za-z_]\w*)\[(\s*\])?")
_LHS = re.compile(r"(?:^|[\n;])\s*([A-Za-z_]\w*)\s*\[")


def batched_source(source: str, names: set[str], var: str) -> str:
    """source with var first in every access of the tensors names and of every written tensor."""
    names = names | set(_LHS.findall(source))

    def add(m: re.Match) -> str:
        if m.group(1) not in names:
            return m.group(0)
        return f"{m.group(1)}[{var}]" if m.group(2) else f"{m.group(1)}[{var}, "

    return _ACCESS.sub(add, source)


def batched_op(op, flags: tuple[bool, ...]):
    """op with a batch index on the inputs flags marks (and on everything it writes), and that index's name."""
    cache = op.__dict__.setdefault("_vmapped", {})
    if flags not in cache:
        source = str(op)
        var = "vb"
        while re.search(rf"\b{var}\b", source):
            var += "_"
        names = {n for n, f in zip(op.inputs, flags) if f}
        text = batched_source(source, names, var)
        bop = type(op)(  # an Op, made without importing op.py (which imports this module's users)
            text,
            name=f"{op.name or 'op'}_vmap",
            inputs=list(op.inputs),
            outputs=list(op.outputs),
            sizes=op._sizes,
            consts=consts_of(op._definition),
        )
        cache[flags] = (bop, var)
    return cache[flags]


def batch_rule(op, info, dims, tensors, text):
    """The custom op's vmap rule: the batched op on the inputs with their batch dimension first."""
    flags = tuple(d is not None for d in dims)
    moved = [t.movedim(d, 0) if d is not None else t for t, d in zip(tensors, dims)]
    bop, var = batched_op(op, flags)
    sizes = parse_sizes_text(text)
    sizes[var] = info.batch_size
    outs = list(bop.custom_op(moved, sizes_text(bop._merged_sizes(sizes))))
    return outs, [0] * len(outs)
