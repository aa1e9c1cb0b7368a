"""The checks of what a user passes when defining and calling an op: names, text, constants and devices."""

from __future__ import annotations

import re

import torch

from . import config
from ._proto import neoflow_pb2 as pb

_NAME = re.compile(r"[A-Za-z0-9_.\-]{1,128}")


def check_name(name) -> str:
    """An op's name: up to 128 of A-Z a-z 0-9 _ . - (it labels kernels, C
    symbols and messages)."""
    if not isinstance(name, str):
        raise TypeError(f"an op's name must be a str, got {type(name).__name__}")
    if not _NAME.fullmatch(name):
        raise ValueError(f"op name {name!r:.80} is not allowed: a name is 1 to 128 characters from A-Z a-z 0-9 _ . -")
    return name


def check_text(what: str, text) -> str:
    """Raises for text the Go core cannot take: not a str, or not encodable
    as UTF-8 (a lone surrogate)."""
    if not isinstance(text, str):
        raise TypeError(f"{what} must be a string, got {type(text).__name__}")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as e:
        raise ValueError(
            f"{what} is not valid text: character {text[e.start]!r} at position {e.start} "
            "(a lone surrogate) cannot be encoded as UTF-8"
        ) from None
    return text


def check_names(what: str, names) -> list[str]:
    if names is None:
        return []
    if isinstance(names, str):
        raise TypeError(f"{what} must be a list of tensor names, got the string {names!r}")
    return [check_text(f"a name in {what}", n) for n in names]


def scalar_of(name: str, value) -> pb.Scalar:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"constant {name} must be an int or a float, got {type(value).__name__}")
    if isinstance(value, int):
        return pb.Scalar(int=value)
    return pb.Scalar(float=value)


def check_devices(devices, names) -> None:
    """Raises for devices neoflow cannot run on, or for inputs on mixed devices."""
    first = devices[0]
    for dev, name in zip(devices, names):
        if dev != first:
            raise ValueError(f"inputs are on different devices: {names[0]} is on {first} but {name} is on {dev}")
    if first.type == "cuda":
        if not torch.cuda.is_available():
            raise RuntimeError(f"input {names[0]} is on {first}, but torch.cuda.is_available() is False")
        if not config.cuda_enabled():
            raise NotImplementedError(
                f"input {names[0]} is on {first}, but this neoflow was installed without its CUDA build "
                "(libneoflow_cuda.so): reinstall it where CUDA headers are found (see the README's CUDA section), "
                "or move the inputs with .cpu()"
            )
        return
    if first.type != "cpu":
        raise NotImplementedError(f"device {first} is not supported: neoflow runs on CPU and CUDA tensors")
