"""out_shapes: the shapes of outputs (and temporaries) that an op writes through index tensors (scatters).

An op such as ``Y[Dst[e], f] += X[Src[e], f] * Norm[e]`` writes Y's first dimension through the index tensor Dst,
so nothing bounds it; ``out_shapes={"Y": (V, F)}`` (at the definition or the call) gives it. The extents of the
scattered dimensions become the sizes of the variables the compiler made for them; the other dimensions must
equal what the input shapes give, and are checked against the outputs. A temporary the op scatters into
(``H[Dst[e], f] += X[e, f]`` read by a later statement) takes its scattered dimensions from out_shapes the same
way; its other dimensions are inferred.
"""

from __future__ import annotations

from collections.abc import Mapping


def out_sizes(axes, outputs, ranks, out_shapes) -> tuple[dict[str, int], list[tuple[int, int, int]]]:
    """The sizes out_shapes gives (scattered dimensions), and (output position, dimension, extent) for each other
    dimension it names, to check against the outputs. ``axes`` are the op's ScatterAxis entries."""
    if out_shapes is None:
        return {}, []
    if not isinstance(out_shapes, Mapping):
        raise TypeError(f"out_shapes must be a dict of output name to shape, got {type(out_shapes).__name__}")
    sizes, checks = {}, []
    scattered = {a.tensor for a in axes}
    for name, shape in out_shapes.items():
        if name not in outputs and name not in scattered:
            raise ValueError(
                f"out_shapes names {name!r}, which is neither an output of the op (its outputs: {', '.join(outputs)}) "
                "nor a tensor it writes through an index tensor"
            )
        pos = outputs.index(name) if name in outputs else None
        try:
            dims = tuple(shape)
        except TypeError:
            raise TypeError(
                f"out_shapes[{name!r}] must be a shape (a tuple of ints), got {type(shape).__name__}"
            ) from None
        if pos is not None and len(dims) != ranks[pos]:
            raise ValueError(f"out_shapes[{name!r}] has {len(dims)} dimensions, but {name} has {ranks[pos]}")
        last = max((a.dim for a in axes if a.tensor == name), default=-1)
        if len(dims) <= last:
            raise ValueError(
                f"out_shapes[{name!r}] has {len(dims)} dimensions, too few for {name}, which the op writes through "
                f"an index tensor in dimension {last}"
            )
        for d, n in enumerate(dims):
            if isinstance(n, bool) or not isinstance(n, int) or n < 1:
                raise ValueError(f"out_shapes[{name!r}] dimension {d} must be an int of at least 1, got {n!r}")
            var = next((a.var for a in axes if a.tensor == name and a.dim == d), None)
            if var is not None:
                sizes[var] = n
            elif pos is not None:  # a temporary's other dimensions are inferred
                checks.append((pos, d, n))
    return sizes, checks


def check_outputs(outs, checks, outputs) -> None:
    """Raises ValueError where an output's dimension differs from the extent out_shapes gave it."""
    for pos, d, n in checks:
        got = outs[pos].shape[d]
        if got != n:
            raise ValueError(
                f"out_shapes gives {outputs[pos]} size {n} in dimension {d}, but the inputs give it {got}: only the "
                "dimensions the op writes through an index tensor take their size from out_shapes"
            )


def scatter_hint(axes) -> str:
    """Names the dimensions out_shapes must give, for messages: "Y dimension 0 (through Dst[e])"."""
    return ", ".join(f"{a.tensor} dimension {a.dim} (through {a.via})" for a in axes)
