"""Fake quantization with a straight-through gradient, written as an expression: values rounded to the int8
grid of scale S (half to even, as torch.round) and clamped to [-128, 127], while the gradient passes straight
through inside the grid's range and is 0 outside, as torch.fake_quantize_per_tensor_affine does.

The straight-through estimator needs a value that does not carry the gradient; the op takes the input twice,
the second time detached (Xd), and derives its gradient only through the first:

    Y[i] = where(Xd[i] / S >= -128.5 && Xd[i] / S <= 127.5,
                 X[i] + (clamp(round(Xd[i] / S), -128.0, 127.0) * S - Xd[i]),
                 clamp(round(Xd[i] / S), -128.0, 127.0) * S)

    python examples/fake_quant.py
"""

import neoflow
import torch

SCALE = 0.05

fake_quant = neoflow.op(
    """
    Y[i] = where(Xd[i] / S >= -128.5 && Xd[i] / S <= 127.5,
                 X[i] + (clamp(round(Xd[i] / S), -128.0, 127.0) * S - Xd[i]),
                 clamp(round(Xd[i] / S), -128.0, 127.0) * S)
    """,
    name="fake_quant_int8",
    inputs=["X", "Xd"],
    S=SCALE,
)


def quantize(x: torch.Tensor) -> torch.Tensor:
    return fake_quant(x, x.detach())


def main() -> None:
    x = (torch.randn(4096) * 4).requires_grad_()
    y = quantize(x)
    want = torch.fake_quantize_per_tensor_affine(x, SCALE, 0, -128, 127)
    err = (y - want).abs().max().item()
    print(f"fake quantization of {x.numel()} values; max |neoflow - pytorch| = {err:.2e}")
    assert torch.allclose(y, want, rtol=0, atol=1e-6), "forward mismatch"
    g = torch.randn_like(y)
    (got,) = torch.autograd.grad(y, x, g)
    (ref,) = torch.autograd.grad(want, x, g)
    assert torch.equal(got, ref), "gradient mismatch"
    print(f"straight-through: {int((got != 0).sum())} of {x.numel()} gradients pass, as in PyTorch")
    print("OK: forward and straight-through gradient match PyTorch")


if __name__ == "__main__":
    main()
