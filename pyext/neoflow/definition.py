"""How an op was defined, as plain data: what ``rebuild`` needs to define it again (when it unpickles, in
this process or another, and when a compiled graph calls a custom op whose Ops are gone)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, eq=False)
class TextDefinition:
    """An op defined from its text: ``neoflow.op(source, ...)``'s arguments."""

    source: str
    name: str
    inputs: tuple
    outputs: tuple
    sizes: dict
    consts: dict
    forward_only: bool = False


@dataclass(frozen=True, eq=False)
class GradDefinition:
    """A gradient op: its forward op's definition and the serialized GradRequest that derived it."""

    parent: TextDefinition | GradDefinition
    request: bytes


def consts_of(definition: TextDefinition | GradDefinition) -> dict:
    """The named constants of an op's definition (a gradient op's are its forward op's)."""
    while isinstance(definition, GradDefinition):
        definition = definition.parent
    return dict(definition.consts)
