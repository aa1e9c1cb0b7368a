"""Rotary position embeddings (RoPE) as one neoflow op: the query's two halves
rotated by the angle t * base^(-2d/D), with sin and cos of the math library;
checked against plain PyTorch, forward and backward.

    python examples/rotary.py
"""

import neoflow
import torch


def make_rope(dim: int, base: float = 10000.0) -> neoflow.Op:
    """RoPE for feature width dim: Q[b, t, h, d] (batch, position, head, feature). Feature d < H = dim / 2
    pairs with d + H: (x1, x2) -> (x1 cos - x2 sin, x2 cos + x1 sin), at the angle t * base^(-2e/dim) of the
    pair's e (d or d - H)."""
    return neoflow.op(
        """
        Y[b, t, h, d] = where(d < H,
            Q[b, t, h, d] * cos(t * pow(Base, -2.0 * d / D)) - Q[b, t, h, d + H] * sin(t * pow(Base, -2.0 * d / D)),
            Q[b, t, h, d] * cos(t * pow(Base, -2.0 * (d - H) / D))
                + Q[b, t, h, d - H] * sin(t * pow(Base, -2.0 * (d - H) / D)))
        """,
        name=f"rope{dim}",
        D=dim,
        H=dim // 2,
        Base=base,
    )


def rope_torch(q: torch.Tensor, base: float = 10000.0) -> torch.Tensor:
    """The usual PyTorch formulation: rotate_half with cos/sin tables."""
    t, d = q.shape[1], q.shape[3]
    inv = base ** (-torch.arange(0, d // 2, dtype=q.dtype) * 2.0 / d)
    ang = torch.arange(t, dtype=q.dtype)[:, None] * inv[None, :]  # t, d/2
    cos = torch.cat([ang.cos(), ang.cos()], -1)[None, :, None, :]
    sin = torch.cat([ang.sin(), ang.sin()], -1)[None, :, None, :]
    x1, x2 = q[..., : d // 2], q[..., d // 2 :]
    return q * cos + torch.cat([-x2, x1], -1) * sin


def main() -> None:
    rope = make_rope(32)
    q = torch.randn(2, 16, 4, 32, requires_grad=True)
    y = rope(q)
    want = rope_torch(q)
    err = (y - want).abs().max().item()
    print(f"rope: output {tuple(y.shape)}; max |neoflow - pytorch| = {err:.2e}")
    assert torch.allclose(y, want, rtol=1e-4, atol=1e-5), "forward mismatch"
    g = torch.randn_like(y)
    (got,) = torch.autograd.grad(y, q, g)
    (ref,) = torch.autograd.grad(want, q, g)
    assert torch.allclose(got, ref, rtol=1e-4, atol=1e-5), "gradient mismatch"
    q64 = torch.randn(1, 5, 2, 8, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(make_rope(8), (q64,))
    print("OK: forward, gradient and gradcheck match PyTorch")


if __name__ == "__main__":
    main()
