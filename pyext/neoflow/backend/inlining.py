"""A neoflow op inside a compiled model, inlined as its statements.

Under torch.compile a neoflow op is a custom op (``neoflow::<name>``, its
gradient another); in the ATen graph it is one node returning the op's
outputs and then the temporaries its gradient reads. ``lowering.Lowering``
writes such a node as the op's own statements (``str(op)``, the compiler's
printed form) so that they fuse with the statements around them: every
tensor the op writes becomes ``U<k>_<name>``, every index variable
``u<k>_<name>``, named constants their values, and every read of an input
the read of the node that feeds it (an input that is a view is stored
first, so that the op's accesses stay plain). Index ranges the op infers are inferred again from the
same accesses; the sizes it was given, at its definition or at the call,
are given.
"""

from __future__ import annotations

import re

import torch

_IDENT = re.compile(r"(?<![\w.])[A-Za-z_]\w*")  # not the exponent of 1e-05


def op_of(node):
    """The neoflow Op a custom-op node runs, or None for any other node."""
    target = node.target
    if not isinstance(target, torch._ops.OpOverload) or target.namespace != "neoflow":
        return None
    from ..autograd import _op_for

    try:
        return _op_for(target.name())
    except KeyError:
        return None


def unsupported(node, op) -> str | None:
    if op._scatter_axes:
        return "a neoflow op that scatters through an index tensor"
    if not isinstance(node.args[-1], str):
        return "a neoflow op call without its sizes"
    return None


def _split_top(text: str) -> list[str]:
    """text split at the commas outside parentheses."""
    parts, depth, cur = [], 0, []
    for ch in text:
        if ch == "," and depth == 0:
            parts.append("".join(cur).strip())
            cur = []
            continue
        depth += ch == "("
        depth -= ch == ")"
        cur.append(ch)
    parts.append("".join(cur).strip())
    return parts


def inline(low, k: int, node, op) -> None:
    """Appends op's statements for node to low (a lowering.Lowering)."""
    from ..definition import consts_of
    from ..sizes import parse_sizes_text

    args = list(node.args[0])  # the custom op's Tensor[] argument
    sizes = {**op._sizes, **parse_sizes_text(node.args[-1])}
    consts = consts_of(op._definition)
    fakes = [a.meta["val"] for a in args]
    temps = [name for name, _ in op.temporaries(*fakes, sizes=sizes)]
    written = list(op.outputs) + temps
    feeds = dict(zip(op.inputs, args))
    prefix = f"U{k}_"
    # an input that is a view is stored first: the op infers its index ranges from plain accesses of its
    # inputs, which a view's index map would make composite
    for j, (name, a) in enumerate(list(feeds.items())):
        if a in low.views:
            shape = tuple(a.meta["val"].shape)
            v = low._vars(k, shape, prefix=f"m{j}_")
            feeds[name] = f"V{k}_{j}"
            low.lines.append(f"{feeds[name]}[{', '.join(v)}] = {low.at(a, v)}")
            low.shapes[feeds[name]] = shape or (1,)

    def index(expr: str) -> str:
        def one(m: re.Match) -> str:
            word, rest = m.group(0), expr[m.end() :].lstrip()
            if rest.startswith("(") or (word in ("max", "min") and rest.startswith("=")):
                return word  # a function, or the reduction of max= and min=
            if word in consts:
                return repr(float(consts[word])) if not float(consts[word]).is_integer() else str(int(consts[word]))
            return f"u{k}_{word}"

        return _IDENT.sub(one, expr)

    def access(m: re.Match) -> str:
        name, inner = m.group(1), m.group(2)
        parts = [index(p) for p in _split_top(inner)] if inner.strip() else []
        if name in feeds:
            feed = feeds[name]
            return f"{feed}[{', '.join(parts)}]" if isinstance(feed, str) else low.at(feed, parts)
        return f"{prefix}{name}[{', '.join(parts)}]"

    for line in str(op).splitlines():
        line = line.strip()
        if not line:
            continue
        # accesses first (their names are tensors), then the index variables and constants left outside them
        out, pos = [], 0
        for m in re.finditer(r"\b([A-Za-z_]\w*)\[([^\[\]]*)\]", line):
            out.append(index(line[pos : m.start()]))
            out.append(access(m))
            pos = m.end()
        out.append(index(line[pos:]))
        low.lines.append("".join(out))
    for v, n in sizes.items():
        low.sizes[f"u{k}_{v}"] = n
    vals = node.meta["val"]
    for name, v in zip(written, vals):
        low.shapes[prefix + name] = tuple(v.shape) or (1,)
    low.names[node] = tuple(prefix + name for name in written)
