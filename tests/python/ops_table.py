"""The one table of test ops (internal/testops/ops.json), as neoflow ops
with their plain-PyTorch references.

Shared by the tests and the benchmark; the Go tests run the same table on
the interpreter, the C backend and the CUDA emulator. Each case gives the
op's definition, a function making inputs for a size ("test" or "bench";
an op without bench shapes uses its test shapes) and dtype, and the
PyTorch reference, evaluated from the table's expression with the input
names bound to the tensors.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import torch
import torch.nn.functional as F

TABLE = Path(__file__).resolve().parents[2] / "internal" / "testops" / "ops.json"


def idx(n: int, dim: int = 0, device=None) -> torch.Tensor:
    """arange(n) (int64) for references over index values: a row for
    dim 0, a column (n, 1) for dim 1, so idx(5, 1) and idx(21) span a grid.
    References make it on their inputs' device."""
    a = torch.arange(n, device=device)
    return a.view(n, 1) if dim == 1 else a


@dataclass
class Case:
    name: str
    source: str
    inputs: Callable  # (size, dtype) -> list of tensors
    reference: Callable  # (*tensors) -> tensor or tuple
    consts: dict = field(default_factory=dict)
    sizes: Callable | None = None  # (*tensors) -> sizes dict
    desc: str = ""
    input_names: list = field(default_factory=list)
    variants: dict = field(default_factory=dict)
    positive: bool = False
    outputs: list = field(default_factory=list)  # the table's "outputs", when a statement reads one

    def op(self, tensors, name: str | None = None):
        """The case as a neoflow op for tensors of one of its variants (``name`` defaults to the case's)."""
        import neoflow

        return neoflow.op(
            self.source, name=name or self.name, outputs=self.outputs or None, consts=consts_for(self, tensors)
        )

    def variant_for(self, tensors) -> dict:
        """The table's variant ("test" or "bench") whose shapes the tensors have."""
        shapes = [list(t.shape) for t in tensors]
        for v in self.variants.values():
            if v["shapes"] == shapes:
                return v
        return self.variants["test"]


_INT_DTYPES = {"int32": torch.int32, "int64": torch.int64, "bool": torch.bool}


def _make_inputs(entry: dict, positive: bool) -> Callable:
    ints = entry.get("ints", {})

    def make(size: str, dtype) -> list:
        variant = entry.get(size) or entry["test"]
        out = []
        for name, shape in zip(entry["inputs"], variant["shapes"]):
            if name in ints:  # an integer input: values in [0, high), an index tensor's within what it indexes
                it = ints[name]
                out.append(torch.randint(0, it["high"], shape).to(_INT_DTYPES[it["dtype"]]))
            elif positive:
                out.append(torch.rand(*shape, dtype=dtype) + 0.5)
            else:
                out.append(torch.randn(*shape, dtype=dtype))
        return out

    return make


def _make_reference(entry: dict) -> Callable:
    code = compile(entry["torch"], f"<ops.json {entry['name']}>", "eval")
    names = entry["inputs"]

    def reference(*tensors):
        device = tensors[0].device if tensors else None
        scope = {"torch": torch, "F": F, "idx": functools.partial(idx, device=device), **dict(zip(names, tensors))}
        dtype = next((t.dtype for t in tensors if t.is_floating_point()), torch.float32 if tensors else torch.float64)
        out = eval(code, scope)  # noqa: S307 - the repository's own table
        if isinstance(out, tuple):
            return tuple(o.to(dtype) for o in out)
        return out.to(dtype)

    return reference


def _case(entry: dict) -> Case:
    variants = {k: entry[k] for k in ("test", "bench") if k in entry}
    case = Case(
        name=entry["name"],
        source=entry["source"],
        inputs=_make_inputs(entry, entry.get("positive", False)),
        reference=_make_reference(entry),
        consts=dict(entry.get("consts", {})),
        desc=entry.get("desc", ""),
        input_names=list(entry["inputs"]),
        variants=variants,
        positive=entry.get("positive", False),
        outputs=list(entry.get("outputs", [])),
    )
    if any("sizes" in v for v in variants.values()):
        case.sizes = lambda *tensors, c=case: dict(c.variant_for(tensors).get("sizes", {}))
    return case


CASES = [_case(e) for e in json.loads(TABLE.read_text())]

# The ops with bench shapes: the spine's operators that bench/ measures.
BENCH_CASES = [c for c in CASES if "bench" in c.variants]


def float_leaves(tensors) -> list:
    """Copies of the tensors that require grad where they can have a gradient (the floating-point ones)."""
    return [t.detach().clone().requires_grad_(t.is_floating_point()) for t in tensors]


def half_inputs(case: Case, half, device="cpu") -> list:
    """The case's inputs rounded to a 16-bit type, on device, redrawn (at most 100 times) off the points where
    the op has a kink, since there neoflow and PyTorch may pick different subgradients:
    - for a min= or max= reduction, a tie: PyTorch's amin/amax split its gradient evenly where neoflow gives it
      to the first arg-extremum (as torch.max(dim) does); bfloat16 keeps 8 bits, so ties are common;
    - a clamp's bound: at x == bound torch 2.11 passes the gradient (CPU and CUDA alike, measured on an
      H100), torch 2.15 and neoflow pass none; bfloat16 rounds about one value in 500 of a unit normal onto
      0.5."""
    extremum = "min=" in case.source or "max=" in case.source
    bounds = [float(b) for pair in _CLAMP_BOUNDS.findall(case.source) for b in pair]
    for _ in range(100):
        tensors = [
            t.to(device, half) if t.is_floating_point() else t.to(device) for t in case.inputs("test", torch.float32)
        ]
        floats = [t for t in tensors if t.is_floating_point()]
        tie = extremum and any(t.unique().numel() != t.numel() for t in tensors)
        on_bound = any(bool((t == b).any()) for t in floats for b in bounds)
        if not tie and not on_bound:
            break
    return [t.requires_grad_(t.is_floating_point()) for t in tensors]


_CLAMP_BOUNDS = re.compile(r"clamp\([^,()]*(?:\[[^\]]*\])?[^,()]*,\s*(-?[\d.]+),\s*(-?[\d.]+)\)")


# A 16-bit op against PyTorch's float32 computation on the same 16-bit inputs.
HALF_TOL = {torch.float16: {"rtol": 1e-2, "atol": 1e-2}, torch.bfloat16: {"rtol": 6e-2, "atol": 6e-2}}


def check_half(case: Case, half, device) -> None:
    """The case in a 16-bit dtype on device, forward and backward: neoflow computes in float32 and rounds once
    per stored element, so it matches PyTorch's float32 computation on the same (16-bit) inputs within the
    16-bit type's precision, and its gradients come back in the 16-bit type."""
    tensors = half_inputs(case, half, device)
    op = case.op(tensors)
    sizes = case.sizes(*tensors) if case.sizes else None
    out = as_tuple(op(*tensors, sizes=sizes))
    assert all(o.dtype == half for o in out)
    g = [torch.randn_like(o) for o in out]
    got = torch.autograd.grad(out, [t for t in tensors if t.requires_grad], g)
    ref = [t.detach().float().requires_grad_(True) if t.is_floating_point() else t for t in tensors]
    want = as_tuple(case.reference(*ref))
    for o, w in zip(out, want):
        torch.testing.assert_close(o.float(), w, **HALF_TOL[half])
    for a, b in zip(got, torch.autograd.grad(want, [t for t in ref if t.requires_grad], [x.float() for x in g])):
        assert a.dtype == half
        torch.testing.assert_close(a.float(), b, **HALF_TOL[half])


def as_tuple(out) -> tuple:
    """An op's or a reference's result as a tuple of tensors (one output: a tuple of one)."""
    return tuple(out) if isinstance(out, (tuple, list)) else (out,)


def consts_for(case: Case, tensors) -> dict:
    """The op's constants, with those that depend on the input sizes (the
    padded conv's H, the concatenation's N) for the tensors' variant."""
    return {**case.consts, **case.variant_for(tensors).get("consts", {})}
