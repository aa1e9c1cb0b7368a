"""The public models of bench/zoo.py (torchvision, timm, transformers; nobody here tuned for them) train under
``neoflow.compile`` as in eager: the loss and every parameter's gradient of a training step, each as close to a
float64 run's as eager's float32 run is (float64 is the yardstick: float32 reorders sums differently in each)."""

from __future__ import annotations

import copy
import os
import sys
from pathlib import Path

import neoflow
import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import zoo  # noqa: E402

if zoo.missing() and os.environ.get("NEOFLOW_REQUIRE_ZOO") != "1":
    pytest.skip(f"not installed: {', '.join(zoo.missing())} (scripts/env.sh installs them)", allow_module_level=True)


def _step(name, model, inputs, compiled: bool):
    """The loss and the parameters' gradients of one forward and backward."""
    model.zero_grad(set_to_none=True)

    def fn():
        return zoo.loss(name, model, inputs)

    loss = (neoflow.compile(fn) if compiled else fn)()
    loss.backward()
    return [loss.detach()] + [p.grad for p in model.parameters() if p.grad is not None]


def _double(inputs: dict) -> dict:
    return {k: v.double() if v.is_floating_point() else v for k, v in inputs.items()}


@pytest.mark.parametrize("name", list(zoo.MODELS))
def test_zoo_model_trains_as_in_eager(name):
    torch._dynamo.reset()
    model, inputs = zoo.make(name)
    ref = _step(name, copy.deepcopy(model).double(), _double(inputs), compiled=False)
    eager = _step(name, copy.deepcopy(model), inputs, compiled=False)
    got = _step(name, copy.deepcopy(model), inputs, compiled=True)
    assert len(got) == len(eager) == len(ref), "a parameter got no gradient"
    for k, (g, e, r) in enumerate(zip(got, eager, ref)):
        r = r.float()
        scale = r.abs().max().item() + 1e-30
        bound = max(8 * (e - r).abs().max().item(), 1e-4 * scale)
        err = (g - r).abs().max().item()
        what = "the loss" if k == 0 else f"gradient {k}"
        assert err <= bound, f"{name}: {what} is off by {err:.3g} (eager's float32 by {bound / 8:.3g})"
    lowered = sum(r["lowered"] for r in neoflow.compile_report())
    assert lowered > 0, f"{name}: nothing was lowered"


def _resized(name: str, inputs: dict, k: int) -> dict:
    """The inputs at another shape: k fewer tokens, or k more images (repeated)."""
    if name in ("bert", "gpt2"):
        tokens = inputs["tokens"][:, : inputs["tokens"].shape[1] - k].contiguous()
        return {"tokens": tokens, "labels": inputs["labels"] if name == "bert" else tokens}
    images, labels = inputs["images"], inputs["labels"]
    return {"images": torch.cat([images, images[:k]]), "labels": torch.cat([labels, labels[:k]])}


@pytest.mark.parametrize("name", ["bert", "resnet18"])
def test_zoo_model_trains_on_varying_shapes(name):
    """dynamic=True: the graph with symbolic sizes is lowered once and trains at three shapes (sequence
    lengths, or batch and image sizes) as eager does; the third shape compiles nothing (Dynamo itself may
    compile the model twice: BERT's guards on its inputs' layout)."""
    torch._dynamo.reset()
    neoflow.compile_report(clear=True)
    model, inputs = zoo.make(name)
    compiled_model = copy.deepcopy(model)
    # once in eager: BERT's first call sets its config's problem_type, and the gradients exist from then on
    zoo.loss(name, compiled_model, inputs).backward()
    at, seen = {}, []
    compiled = neoflow.compile(lambda: zoo.loss(name, compiled_model, at["inputs"]), dynamic=True)
    for k in (0, 1, 2):
        at["inputs"] = x = _resized(name, inputs, k)
        ref = _step(name, copy.deepcopy(model).double(), _double(x), compiled=False)
        eager = _step(name, copy.deepcopy(model), x, compiled=False)
        compiled_model.zero_grad(set_to_none=False)
        loss = compiled()
        loss.backward()
        got = [loss.detach()] + [p.grad for p in compiled_model.parameters() if p.grad is not None]
        for j, (g, e, r) in enumerate(zip(got, eager, ref)):
            r = r.float()
            bound = max(8 * (e - r).abs().max().item(), 1e-4 * (r.abs().max().item() + 1e-30))
            assert (g - r).abs().max().item() <= bound, f"{name} at shape {k}: {j} is off"
        seen.append(len(neoflow.compile_report()))
    reps = neoflow.compile_report()
    assert all(r["lowered"] > 0 for r in reps), reps
    assert seen[1] == seen[2], seen  # the third shape compiled nothing
