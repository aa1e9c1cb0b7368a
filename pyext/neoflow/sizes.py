"""Sizes of index variables: checked dicts, and the text form the custom
ops take ("p=8,q=8")."""

from __future__ import annotations

from collections.abc import Mapping


def check_sizes(sizes) -> dict[str, int]:
    if sizes is None:
        return {}
    if not isinstance(sizes, Mapping):
        raise TypeError(f"sizes must be a dict of index name to extent, got {type(sizes).__name__}")
    out = {}
    for k, v in sizes.items():
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"size of index {k!r} must be a positive int, got {v!r}")
        out[str(k)] = v
    return out


def sizes_text(sizes: dict) -> str:
    """Sizes as the custom op's string argument: "p=8,q=8"."""
    return ",".join(f"{k}={v}" for k, v in sorted(sizes.items()))


def parse_sizes_text(text: str) -> dict[str, int]:
    """The custom op's sizes argument, "p=8,q=8" ("" for none), as a dict."""
    if not isinstance(text, str):
        raise TypeError(f"sizes must be a string like 'p=8,q=8', got {type(text).__name__}")
    if not text:
        return {}
    out = {}
    for item in text.split(","):
        k, eq, v = item.partition("=")
        k, v = k.strip(), v.strip()
        if not eq or not k.isidentifier() or not v.isdigit():
            raise ValueError(
                f"malformed sizes text {text!r}: expected comma-separated index=extent pairs such as 'p=8,q=8' "
                f"(the item {item!r} is not one)"
            )
        out[k] = int(v)
    return check_sizes(out)
