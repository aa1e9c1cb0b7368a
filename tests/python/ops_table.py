"""The spine's operators: each as a neoflow op and a plain-PyTorch reference.

Shared by the tests and the benchmark. Each case gives the op's definition,
a function making inputs for a size ("test" or "bench") and dtype, and the
PyTorch reference.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F


@dataclass
class Case:
    name: str
    source: str
    inputs: Callable  # (size, dtype) -> list of tensors
    reference: Callable  # (*tensors) -> tensor or tuple
    consts: dict = field(default_factory=dict)
    sizes: Callable | None = None  # (*tensors) -> sizes dict


def _r(*shape, dtype):
    return torch.randn(*shape, dtype=dtype)


def _pick(size, small, large):
    return small if size == "test" else large


def _capsule_ref(a, b):
    r, s = b.shape[2], b.shape[3]
    patches = a.unfold(2, r, 2).unfold(3, s, 2)  # b c p q i t r s
    return torch.einsum("bcpqitrs,kcrstj->bkpqij", patches, b)


def _channel_shuffle_ref(x, groups=2):
    n, c, h, w = x.shape
    return x.view(n, groups, c // groups, h, w).transpose(1, 2).reshape(n, c, h, w)


def _layer_norm_ref(x, g, b):
    return F.layer_norm(x, (x.shape[-1],), g, b, eps=1e-5)


def _milstm_ref(w, x, u, h, bias):
    return torch.tanh((x @ w.T) * (h @ u.T) + bias)


CASES = [
    Case(
        "matmul",
        "C[i,j] += A[i,k] * B[k,j]",
        lambda z, d: [_r(*_pick(z, (7, 9), (256, 256)), dtype=d), _r(*_pick(z, (9, 11), (256, 256)), dtype=d)],
        lambda a, b: a @ b,
    ),
    Case(
        "bmm",
        "C[b,i,j] += A[b,i,k] * B[b,k,j]",
        lambda z, d: [_r(*_pick(z, (3, 5, 6), (16, 64, 64)), dtype=d), _r(*_pick(z, (3, 6, 4), (16, 64, 64)), dtype=d)],
        torch.bmm,
    ),
    Case(
        "conv2d_stride_dilation",
        "Y[n,k,p,q] += X[n,c,p*S+r*D,q*S+s*D] * W[k,c,r,s]",
        lambda z, d: [
            _r(*_pick(z, (2, 3, 11, 10), (8, 32, 32, 32)), dtype=d),
            _r(*_pick(z, (4, 3, 3, 3), (32, 32, 3, 3)), dtype=d),
        ],
        lambda x, w: F.conv2d(x, w, stride=2, dilation=2),
        consts={"S": 2, "D": 2},
    ),
    Case(
        "conv2d_padding_where",
        "Y[n,k,p,q] += where(p+r-1 >= 0 && p+r-1 < H && q+s-1 >= 0 && q+s-1 < H, X[n,c,p+r-1,q+s-1], 0.0) * W[k,c,r,s]",
        lambda z, d: [
            _r(*_pick(z, (2, 3, 8, 8), (8, 32, 32, 32)), dtype=d),
            _r(*_pick(z, (4, 3, 3, 3), (32, 32, 3, 3)), dtype=d),
        ],
        lambda x, w: F.conv2d(x, w, padding=1),
        consts={},  # H is filled from the input size by the callers
        sizes=lambda x, w: {"p": x.shape[2], "q": x.shape[3]},
    ),
    Case(
        "depthwise_conv",
        "Y[n,c,p,q] += X[n,c,p+r,q+s] * W[c,r,s]",
        lambda z, d: [
            _r(*_pick(z, (2, 4, 9, 8), (8, 64, 56, 56)), dtype=d),
            _r(*_pick(z, (4, 3, 3), (64, 3, 3)), dtype=d),
        ],
        lambda x, w: F.conv2d(x, w[:, None], groups=x.shape[1]),
    ),
    Case(
        "capsule_conv",
        "C[b,k,p,q,i,j] += A[b,c,p*2+r,q*2+s,i,t] * B[k,c,r,s,t,j]",
        lambda z, d: [
            _r(*_pick(z, (1, 2, 7, 7, 4, 4), (1, 8, 28, 28, 4, 4)), dtype=d),
            _r(*_pick(z, (3, 2, 3, 3, 4, 4), (32, 8, 3, 3, 4, 4)), dtype=d),
        ],
        _capsule_ref,
    ),
    Case(
        "depth2space",
        "Y[n,c,h,w] = X[n, c*4 + (h%2)*2 + w%2, h/2, w/2]",
        lambda z, d: [_r(*_pick(z, (2, 8, 3, 5), (8, 64, 56, 56)), dtype=d)],
        lambda x: F.pixel_shuffle(x, 2),
    ),
    Case(
        "space2depth",
        "Y[n,c,h,w] = X[n, c/4, h*2 + (c%4)/2, w*2 + c%2]",
        lambda z, d: [_r(*_pick(z, (2, 3, 6, 4), (8, 16, 112, 112)), dtype=d)],
        lambda x: F.pixel_unshuffle(x, 2),
    ),
    Case(
        "channel_shuffle",
        "Y[n,c,h,w] = X[n, (c%G)*K + c/G, h, w]",
        lambda z, d: [_r(*_pick(z, (2, 6, 3, 4), (8, 64, 56, 56)), dtype=d)],
        _channel_shuffle_ref,
        consts={"G": 2},  # K = C/G is filled from the input by the callers
    ),
    Case(
        "concat",
        "Y[i,j] = where(i < N, A[i,j], B[i-N,j])",
        lambda z, d: [_r(*_pick(z, (3, 5), (1024, 512)), dtype=d), _r(*_pick(z, (4, 5), (1024, 512)), dtype=d)],
        lambda a, b: torch.cat([a, b], 0),
        sizes=lambda a, b: {"i": a.shape[0] + b.shape[0]},
    ),
    Case(
        "max_pool",
        "Y[n,c,p,q] max= X[n,c,p*2+r,q*2+s]",
        lambda z, d: [_r(*_pick(z, (2, 3, 8, 9), (8, 64, 112, 112)), dtype=d)],
        lambda x: F.max_pool2d(x, 2),
        sizes=lambda x: {"r": 2, "s": 2},
    ),
    Case(
        "avg_pool",
        "Y[n,c,p,q] += X[n,c,p*2+r,q*2+s] * 0.25",
        lambda z, d: [_r(*_pick(z, (2, 3, 8, 9), (8, 64, 112, 112)), dtype=d)],
        lambda x: F.avg_pool2d(x, 2),
        sizes=lambda x: {"r": 2, "s": 2},
    ),
    Case(
        "softmax",
        "M[b] max= X[b,j]\nE[b,j] = exp(X[b,j] - M[b])\nS[b] += E[b,j]\nY[b,j] = E[b,j] / S[b]",
        lambda z, d: [_r(*_pick(z, (5, 7), (512, 1024)), dtype=d)],
        lambda x: torch.softmax(x, -1),
    ),
    Case(
        "layer_norm",
        "Mu[b] += X[b,j] / N\n"
        "Var[b] += (X[b,j] - Mu[b]) * (X[b,j] - Mu[b]) / N\n"
        "Y[b,j] = (X[b,j] - Mu[b]) * rsqrt(Var[b] + 1e-5) * G[j] + Bt[j]",
        lambda z, d: [
            _r(*_pick(z, (5, 7), (512, 1024)), dtype=d),
            _r(_pick(z, 7, 1024), dtype=d),
            _r(_pick(z, 7, 1024), dtype=d),
        ],
        _layer_norm_ref,
    ),
    Case(
        "milstm_gate",
        "WX[b,j] += W[j,k] * X[b,k]\nUH[b,j] += U[j,k] * H[b,k]\nY[b,j] = tanh(WX[b,j] * UH[b,j] + Bias[j])",
        lambda z, d: [
            _r(*_pick(z, (6, 5), (1024, 512)), dtype=d),
            _r(*_pick(z, (3, 5), (64, 512)), dtype=d),
            _r(*_pick(z, (6, 4), (1024, 1024)), dtype=d),
            _r(*_pick(z, (3, 4), (64, 1024)), dtype=d),
            _r(_pick(z, 6, 1024), dtype=d),
        ],
        _milstm_ref,
    ),
    Case(
        "activations",
        "Y[i,j] = relu(X[i,j]) + sigmoid(X[i,j]) * tanh(X[i,j]) - exp(-abs(X[i,j])) + erf(X[i,j])",
        lambda z, d: [_r(*_pick(z, (5, 7), (1024, 1024)), dtype=d)],
        lambda x: torch.relu(x) + torch.sigmoid(x) * torch.tanh(x) - torch.exp(-x.abs()) + torch.erf(x),
    ),
    Case(
        "broadcast_add",
        "Y[i,j] = A[i,j] + B[j]",
        lambda z, d: [_r(*_pick(z, (5, 7), (1024, 1024)), dtype=d), _r(_pick(z, 7, 1024), dtype=d)],
        lambda a, b: a + b,
    ),
]


def consts_for(case: Case, tensors) -> dict:
    """Constants that depend on the input sizes (e.g. the padded conv's H)."""
    consts = dict(case.consts)
    if case.name == "conv2d_padding_where":
        consts["H"] = tensors[0].shape[2]
    if case.name == "channel_shuffle":
        consts["K"] = tensors[0].shape[1] // consts["G"]
    if case.name == "concat":
        consts["N"] = tensors[0].shape[0]
    if case.name == "layer_norm":
        consts["N"] = float(tensors[0].shape[1])
    return consts
