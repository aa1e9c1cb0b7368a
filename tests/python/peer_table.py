"""Operators from two peer projects, translated into neoflow (issue 30).

Every operator that Tensor Comprehensions' documentation and tests define, and
every one TVM's te autodiff tests differentiate, is here once: as neoflow
source, a maker of small float64 inputs, and a plain-PyTorch reference. The
math was translated from the peers' text; no code was copied. The ones the
language cannot express are listed in NOT_EXPRESSIBLE with the reason, so the
coverage is visible. tests/python/test_peer_conformance.py checks the forward
(float64 and float32) and the gradient (torch.autograd.gradcheck in float64).

Where the peers' text was read:

- "TC" is facebookresearch/TensorComprehensions at 680f8c9 (its last master):
  docs/source/*.rst, docs/doxygen/index.md, test/**, python/tests,
  python/examples, python/benchmarks, tc/library, tc/benchmarks, tc/examples
  and tensor_comprehensions/ (docstrings).
- "TC layers DB" is the "ML Layers database" page,
  docs/source/framework/pytorch_integration/layers_database.rst, with its
  data file tensor_comprehensions/library/layers.yaml, both as they were
  before b72b7f1 removed them; "TC test_python/layers" is the Python layer
  tests as they were before 516ce74 removed them.
- "TVM" is apache/tvm tests/python/unittest/test_te_autodiff.py, in two
  versions: 29f1a80 (topi.nn.pool with kernel and stride, test_stable) and
  b59f80a (topi.nn.pool2d with kernel, stride 1 and dilation, topi.einsum).

How the peers' notation maps onto neoflow:

- TC's `+=!`, `*=!`, `max=!`, `min=!` (reduce from the identity) are `+=`,
  `*=`, `max=`, `min=`; TC's `+=` without `!` (accumulate into an output
  that an earlier statement initialized) becomes a temporary plus an
  elementwise statement. A TC statement that rewrites its own output
  (`O(n, m) = O(n, m) + B(m)`) becomes a new temporary: in neoflow each
  tensor is written once.
- TC ops also return intermediates that later statements read. neoflow's
  outputs are the tensors no later statement reads, so such an intermediate
  is computed into a temporary named with a trailing `_` and returned
  through a copy under its TC name, in TC's output order.
- TC's `where i in 0:N` range annotations become `sizes={"i": N}`; TC's
  `cond ? a : b` becomes `where(cond, a, b)`; fmax/fmin/fabs are max/min/abs;
  TC scalar and rank-0 parameters become rank-0 tensors `P[]`, and `float(1)`
  parameters rank-1 tensors read at `P[0]`. Template parameters (`{sH}`,
  `<kH>`) become neoflow constants.
- TC outputs whose range TC infers with a non-zero minimum (a Halide buffer
  offset) are translated by their buffer contents: the offset moves into the
  index expressions.
- TVM's te.floor/ceil/trunc/round have no neoflow function; they are written
  with neoflow's floor modulo on values (floor(x) = x - x % 1.0), which has
  the same zero gradient TVM's test asks for.
- Integer tensors (TC's int32/uint8 masks and indices) are float tensors
  holding integers wherever they are only compared or summed, never used as
  an index (an index from data is not expressible, see NOT_EXPRESSIBLE).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F


@dataclass
class Peer:
    name: str
    source: str  # the peer project, file or doc page, and the operator's name there
    text: str  # the neoflow source
    make: Callable  # (torch.Generator) -> list of float64 tensors, in the op's input order
    ref: Callable  # (*float64 tensors) -> tensor or tuple, in the op's output order
    consts: dict | Callable = field(default_factory=dict)  # or (tensors) -> dict
    sizes: dict | Callable | None = None  # or (tensors) -> dict
    inputs: list | None = None
    outputs: list | None = None
    nograd: tuple = ()  # positions of inputs not differentiated (masks, index-valued data)
    grad: str = "check"  # "check": gradcheck; "zero": a piecewise-constant output whose gradient is 0
    tol32: dict | None = None  # float32 forward tolerance, when the default is too tight


def resolve(value, tensors):
    return value(tensors) if callable(value) else value


# ---------------------------------------------------------------- inputs


def _shape(shape):
    return shape[0] if len(shape) == 1 and isinstance(shape[0], tuple) else shape


def rn(g, *shape):
    return torch.randn(_shape(shape), generator=g, dtype=torch.float64)


def ru(g, lo, hi, *shape):
    return lo + (hi - lo) * torch.rand(_shape(shape), generator=g, dtype=torch.float64)


def away(g, *shape, gap=0.1):
    """Normal values kept at least `gap` away from 0 (for relu, abs, fmax)."""
    x = rn(g, *shape)
    return x + gap * torch.where(x >= 0, 1.0, -1.0).to(x.dtype)


def pos(g, *shape):
    return ru(g, 0.5, 1.5, *shape)


# ------------------------------------------------------------ references


def _conv_pad(x, w, padding):
    return F.conv2d(x, w, padding=padding)


def _group_conv(x, w, b=None, stride=(1, 1)):
    """x (N,G,C,H,W), w (G,F,C,KH,KW), b (G,F) -> (N,G,F,OH,OW)."""
    n, g, c, h, wd = x.shape
    _, f, _, kh, kw = w.shape
    y = F.conv2d(x.reshape(n, g * c, h, wd), w.reshape(g * f, c, kh, kw), stride=stride, groups=g)
    y = y.reshape(n, g, f, y.shape[-2], y.shape[-1])
    return y if b is None else y + b[None, :, :, None, None]


def _softmax_parts(x):
    m = x.amax(1)
    e = torch.exp(x - m[:, None])
    s = e.sum(1)
    return e / s[:, None], m, e, s


def _batchnorm(mom, eps, x, rmean, rvar):
    n = x.shape[0] * x.shape[2] * x.shape[3]
    mean = x.sum((0, 2, 3)) / n
    rmean_out = (1 - mom) * rmean + mom * mean
    centered = x - rmean_out[None, :, None, None]
    variance = centered * centered
    expected = ((variance + eps) / n).sum((0, 2, 3))
    rvar_out = torch.rsqrt((1 - mom) * rvar + mom * expected)
    out = centered * rvar_out[None, :, None, None]
    return out, rmean_out, rvar_out, mean, centered, variance, expected, out


def _fcrelu_chain(x, *params):
    outs = []
    for w, b in zip(params[::2], params[1::2]):
        x = torch.relu(x @ w.T + b)
        outs.append(x)
    return tuple(outs)


def _layernorm(x, eps):
    c = x.shape[2]
    mean = x.sum(2) / c
    centered = x - mean[:, :, None]
    var = ((centered * centered).sum(2) + eps) / c
    return centered / torch.rsqrt(var)[:, :, None], mean, centered, var


def _argmin_rows(s, v, nbyd):
    d = s.shape[0]
    out = torch.full((d,), float(nbyd * d), dtype=s.dtype)
    for i in range(d):
        hits = (s[i] == v).nonzero()
        if len(hits):
            out[i] = i * nbyd + hits[0, 0].item()
    return out


def _first_below(idx, n):
    hits = (idx < n).nonzero()
    return torch.tensor(float(hits[0, 0].item()) if len(hits) else float(n), dtype=idx.dtype)


def _tum_alpha(idx, max_l, pd, nd):
    k = idx.shape[0] - 1
    a = torch.zeros(k, max_l, max_l, dtype=idx.dtype)
    for kk in range(k):
        for l1 in range(max_l):
            for l2 in range(max_l):
                if l1 >= l2:
                    continue
                d = abs(l1 - l2)
                sign = 1.0 if (pd == 0 or d <= pd) else (-1.0 if (nd == 0 and d >= nd) else 0.0)
                inside = idx[kk] + l1 < idx[kk + 1] and idx[kk] + l2 < idx[kk + 1]
                a[kk, l1, l2] = sign * (1.0 if inside else 0.0)
    return a


def _tum_alpha_values(g, k, max_l):
    """An Alpha tensor as make_alpha produces it: -1, 0 or 1 above the diagonal."""
    a = torch.randint(-1, 2, (k, max_l, max_l), generator=g).to(torch.float64)
    return torch.triu(a, 1)


def _strictly_upper(max_l, dtype):
    i = torch.arange(max_l)
    return (i[:, None] < i[None, :]).to(dtype)


def _wavenet(data, fw, fb, gw, gb, rw, rb, sw, sb, dil):
    shifted = F.pad(data, (dil, 0))[:, :, : data.shape[2]]
    filt = (
        fb[None, :, None]
        + torch.einsum("bcr,dc->bdr", data, fw[:, :, 1])
        + torch.einsum("bcr,dc->bdr", shifted, fw[:, :, 0])
    )
    gate = (
        gb[None, :, None]
        + torch.einsum("bcr,dc->bdr", data, gw[:, :, 1])
        + torch.einsum("bcr,dc->bdr", shifted, gw[:, :, 0])
    )
    nonlin = torch.tanh(filt) * torch.sigmoid(gate)
    res = data + rb[None, :, None] + torch.einsum("bdr,cd->bcr", nonlin, rw)
    skip = torch.einsum("bdr,sd->bsr", nonlin, sw) + sb[None, :, None]
    return filt, gate, nonlin, res, skip


def _lu_triangular(lo, up):
    m1 = torch.arange(lo.shape[0])[:, None, None]
    k = torch.arange(lo.shape[1])[None, :, None]
    m2 = torch.arange(up.shape[1])[None, None, :]
    return torch.einsum("ik,kj,ikj->ij", lo, up, ((k >= m1) & (k <= m2)).to(lo.dtype))


def _kronecker3_full(w0, w1, w2, x):
    xw2 = torch.einsum("mabr,dr->mabd", x, w2)
    xw2w1 = torch.einsum("marc,dr->madc", xw2, w1)
    return torch.einsum("mrab,dr->mdab", xw2w1, w0), xw2, xw2w1


def _loop_sum(shape, body):
    """out[i] = sum over the listed (j, k) of body(i, j, k), written as plain loops."""
    out = torch.zeros(shape[0], dtype=torch.float64)
    for i in range(shape[0]):
        out[i] = sum(body(i, j, k) for j in range(shape[1]) for k in range(shape[2]))
    return out


def _pad_guard(p, q, r, s, off, h, w):
    """The where-condition of a zero-padded access X[.., p+r-off, q+s-off]."""
    return f"{p}+{r}-{off} >= 0 && {p}+{r}-{off} < {h} && {q}+{s}-{off} >= 0 && {q}+{s}-{off} < {w}"


# ----------------------------------------------------------------- TC

TC = "TC "
TC_DB = "TC layers DB (layers_database.rst, layers.yaml) "
TC_OLD = "TC test_python/layers/"

CONV_FULL_IGRAD = (
    "d_I[n,c,x,y] += where(x-kh >= 0 && x-kh < OH && y-kw >= 0 && y-kw < OW, d_O[n,m,x-kh,y-kw], 0.0) * W1[m,c,kh,kw]"
)

CONV_STRIDED_IGRAD = (
    "d_I[n,c,x,y] += where((x-kh) % SH == 0 && (x-kh)/SH >= 0 && (x-kh)/SH < OH"
    " && (y-kw) % SW == 0 && (y-kw)/SW >= 0 && (y-kw)/SW < OW,"
    " d_O[n,m,(x-kh)/SH,(y-kw)/SW], 0.0) * W1[m,c,kh,kw]"
)

TC_PEERS = [
    # --- contractions
    Peer(
        "tc_mv",
        TC + "docs/source/introduction.rst (mv); docs/doxygen/index.md (mv)",
        "o[r] += A[r,c] * x[c]",
        lambda g: [rn(g, 4, 5), rn(g, 5)],
        lambda a, x: a @ x,
    ),
    Peer(
        "tc_matmul",
        TC + "docs/source/introduction.rst, inference.rst, coding_conventions.rst, docs/doxygen/index.md (mm),"
        " test/test_tc_mapper_harness-inl.h, test/test_cuda_mapper.cc, test/test_lang.cc (annotate <=> matmul),"
        " test/cuda/test_autotuner.cc, test/cuda/test_compile_and_run.cc, test/caffe2/cuda/test_caffe2.cc,"
        " python/tests/test_tc.py, python/tests/test_caffe2.py, python/benchmarks/python_overhead.py,"
        " tensor_comprehensions/README.md, tc/library/matmul.h (makeMatmulTc()),"
        " docs/source/tutorials/tutorial_tensordot_with_tc.rst (matmul, removed in d100c52); "
        + TC_DB
        + "(matmul); "
        + TC_OLD
        + "test_matmul.py",
        "C[m,n] += A[m,k] * B[k,n]",
        lambda g: [rn(g, 3, 4), rn(g, 4, 5)],
        lambda a, b: a @ b,
    ),
    Peer(
        "tc_matmul_transposed_b",
        TC + "docs/source/framework/pytorch_integration/getting_started.rst (matmul); tc/benchmarks/tmm.cc (tmm);"
        " tc/benchmarks/MLP_model.cc (_C3); test/cuda/test_tc_mapper_bugs.cc (tmm_naive, _C3_naive);"
        " tc/library/matmul.h (makeMatmulTc(false, true))",
        "C[m,n] += A[m,k] * B[n,k]",
        lambda g: [rn(g, 3, 4), rn(g, 5, 4)],
        lambda a, b: a @ b.T,
    ),
    Peer(
        "tc_matmul_transposed_a",
        TC + "tc/library/matmul.h (makeMatmulTc(transposeFirst=true): O(i, j) +=! A(k, i) * B(k, j))",
        "O[i,j] += A[k,i] * B[k,j]",
        lambda g: [rn(g, 4, 3), rn(g, 4, 5)],
        lambda a, b: a.T @ b,
    ),
    Peer(
        "tc_matmul_transposed_both",
        TC + "tc/library/matmul.h (makeMatmulTc(true, true): O(i, j) +=! A(k, i) * B(j, k))",
        "O[i,j] += A[k,i] * B[j,k]",
        lambda g: [rn(g, 4, 3), rn(g, 5, 4)],
        lambda a, b: a.T @ b.T,
    ),
    Peer(
        "tc_lang_comprehension",
        TC + "test/test_lang.cc (comprehension.expected: R(i,j) +=! A(i,j) * B(j,k))",
        "R[i,j] += A[i,j] * B[j,k]",
        lambda g: [rn(g, 3, 4), rn(g, 4, 5)],
        lambda a, b: a * b.sum(1)[None, :],
    ),
    Peer(
        "tc_matmul_grad",
        TC + "docs/source/coding_conventions.rst (matmul_bw); test/caffe2/cuda/test_caffe2.cc (matmul_grad);"
        " python/tests/test_caffe2.py (matmul_grad); python/benchmarks/python_overhead.py (matmul_agrad,"
        " matmul_bgrad); " + TC_DB + "(matmul_grad); " + TC_OLD + "test_matmul_train.py",
        "d_A[m,k] += d_C[m,n] * B[k,n]\nd_B[k,n] += d_C[m,n] * A[m,k]",
        lambda g: [rn(g, 3, 4), rn(g, 4, 5), rn(g, 3, 5)],
        lambda a, b, dc: (dc @ b.T, a.T @ dc),
        inputs=["A", "B", "d_C"],
    ),
    Peer(
        "tc_matmul_chain",
        TC + "test/test_core.cc (fun: O1 = I W1, O2 = O1 W2)",
        "O1_[m,n] += I[m,k] * W1[k,n]\nO2[m,p] += O1_[m,n] * W2[n,p]\nO1[m,n] = O1_[m,n]",
        lambda g: [rn(g, 3, 4), rn(g, 4, 5), rn(g, 5, 2)],
        lambda i, w1, w2: (i @ w1, i @ w1 @ w2),
        outputs=["O1", "O2"],
    ),
    Peer(
        "tc_two_matmuls_shared_operand",
        TC + "test/test_cuda_mapper.cc (fun -> (D, E))",
        "D[m,n] += A[m,k] * B[k,n]\nE[m,n] += A[m,k] * C[k,n]",
        lambda g: [rn(g, 3, 4), rn(g, 4, 5), rn(g, 4, 5)],
        lambda a, b, c: (a @ b, a @ c),
    ),
    Peer(
        "tc_matmul_plus_matrix",
        TC + "test/test_cuda_mapper_memory_promotion.cc (fun: O = A B + C)",
        "T[i,j] += A[i,k] * B[k,j]\nO[i,j] = T[i,j] + C[i,j]",
        lambda g: [rn(g, 3, 4), rn(g, 4, 5), rn(g, 3, 5)],
        lambda a, b, c: a @ b + c,
    ),
    Peer(
        "tc_batch_matmul",
        TC + "tc/library/batch_matmul.h; tc/benchmarks/batchmatmul.cc; test/test_mapper_llvm.cc;"
        " test/test_tc_mapper_harness-inl.h; test/test_lang.cc (option_one, option_two);"
        " test/caffe2/cuda/test_caffe2.cc; " + TC_DB + "(batch_matmul); " + TC_OLD + "test_batchmatmul.py;"
        " docs/source/tutorials/tutorial_tensordot_with_tc.rst (batch_matmul, removed in d100c52)",
        "Z[b,n,k] += X[b,n,m] * Y[b,m,k]",
        lambda g: [rn(g, 2, 3, 4), rn(g, 2, 4, 5)],
        torch.bmm,
    ),
    Peer(
        "tc_tensordot",
        TC + "tc/examples/tensordot.cc; test/cuda/test_autotuner.cc; test/cuda/test_tc_mapper.cc;"
        " test/cuda/test_tc_mapper_bugs.cc (tensordot_naive); python/tests/test_tc.py; "
        + TC_DB
        + "(tensordot); "
        + TC_OLD
        + "test_tensordot.py; docs/source/tutorials/tutorial_tensordot_with_tc.rst (tensordot, removed in d100c52)",
        "O[n,c1,c3,h,w] += I0[n,c1,c2,h,w] * I1[n,c2,c3,h,w]",
        lambda g: [rn(g, 2, 3, 4, 2, 3), rn(g, 2, 4, 2, 2, 3)],
        lambda a, b: torch.einsum("nabhw,nbchw->nachw", a, b),
    ),
    Peer(
        "tc_lu_triangular_matmul",
        TC + "docs/source/coding_conventions.rst (matmul L U with r_k >= m1 and r_k <= m2; the same with"
        " `where r_k in m1:M, r_k in 0:m2+1`)",
        "LU[m1,m2] += where(k >= m1 && k <= m2, L[m1,k] * U[k,m2], 0.0)",
        lambda g: [rn(g, 4, 5), rn(g, 5, 4)],
        _lu_triangular,
        sizes=lambda t: {"m1": t[0].shape[0], "k": t[0].shape[1], "m2": t[1].shape[1]},
    ),
    Peer(
        "tc_lu_triangular_matmul_inferred",
        TC + "docs/source/coding_conventions.rst (the same, its ranges inferred from the guarded accesses as TC does)",
        "LU[m1,m2] += where(k >= m1 && k <= m2, L[m1,k] * U[k,m2], 0.0)",
        lambda g: [rn(g, 4, 5), rn(g, 5, 4)],
        _lu_triangular,
    ),
    Peer(
        "tc_blockdiag_matmul",
        TC + "tc/examples/blockdiagperm.cc (blockdiagperm2dfissioned_1)",
        "O[b,k,n1] += I[b,k,n0] * W[k,n0,n1]",
        lambda g: [rn(g, 2, 3, 4), rn(g, 3, 4, 4)],
        lambda i, w: torch.einsum("bkn,knm->bkm", i, w),
    ),
    Peer(
        "tc_kronecker3_1",
        TC + "tc/benchmarks/kronecker.h (Kronecker3_1); test/cuda/test_tc_mapper_bugs.cc (Kronecker3_1)",
        "XW2[m,n0,n1,d2] += X[m,n0,n1,r] * W2[d2,r]",
        lambda g: [rn(g, 3, 4), rn(g, 2, 2, 3, 4)],
        lambda w2, x: torch.einsum("mabr,dr->mabd", x, w2),
        inputs=["W2", "X"],
    ),
    Peer(
        "tc_kronecker3_2",
        TC + "tc/benchmarks/kronecker.h (Kronecker3_2)",
        "XW2W1[m,n0,d1,d2] += XW2[m,n0,r,d2] * W1[d1,r]",
        lambda g: [rn(g, 2, 3), rn(g, 2, 2, 3, 4)],
        lambda w1, xw2: torch.einsum("marc,dr->madc", xw2, w1),
        inputs=["W1", "XW2"],
    ),
    Peer(
        "tc_kronecker3_3",
        TC + "tc/benchmarks/kronecker.h (Kronecker3_3)",
        "Y[m,d0,d1,d2] += XW2W1[m,r,d1,d2] * W0[d0,r]",
        lambda g: [rn(g, 3, 2), rn(g, 2, 2, 3, 4)],
        lambda w0, x: torch.einsum("mrab,dr->mdab", x, w0),
        inputs=["W0", "XW2W1"],
    ),
    Peer(
        "tc_kronecker3_full",
        TC + "tc/benchmarks/kronecker.h (Kronecker3Full -> (Y, XW2, XW2W1))",
        "XW2_[m,n0,n1,d2] += X[m,n0,n1,r2] * W2[d2,r2]\n"
        "XW2W1_[m,n0,d1,d2] += XW2_[m,n0,r1,d2] * W1[d1,r1]\n"
        "Y[m,d0,d1,d2] += XW2W1_[m,r0,d1,d2] * W0[d0,r0]\n"
        "XW2[m,n0,n1,d2] = XW2_[m,n0,n1,d2]\n"
        "XW2W1[m,n0,d1,d2] = XW2W1_[m,n0,d1,d2]",
        lambda g: [rn(g, 2, 2), rn(g, 3, 2), rn(g, 2, 3), rn(g, 2, 2, 2, 3)],
        _kronecker3_full,
        inputs=["W0", "W1", "W2", "X"],
        outputs=["Y", "XW2", "XW2W1"],
    ),
    # --- convolutions
    Peer(
        "tc_conv2d",
        TC + "docs/source/introduction.rst (conv); docs/doxygen/index.md (conv); test/test_lang.cc (conv);"
        " docs/source/framework/pytorch_integration/autograd_with_tc.rst (convolution);"
        " tensor_comprehensions/__init__.py (convolution)",
        "output[b,op,h,w] += input[b,ip,h+kh,w+kw] * weight[op,ip,kh,kw]",
        lambda g: [rn(g, 2, 3, 6, 5), rn(g, 4, 3, 3, 2)],
        F.conv2d,
    ),
    Peer(
        "tc_conv2d_bias",
        TC
        + "python/tests/test_tc.py (convolution with Bias); tc/benchmarks/convolution.cc; "
        + TC_DB
        + "(convolution); "
        + TC_OLD
        + "test_convolution.py",
        "T[n,m,h,w] += I[n,c,h+kh,w+kw] * W1[m,c,kh,kw]\nO[n,m,h,w] = T[n,m,h,w] + B[m]",
        lambda g: [rn(g, 2, 3, 6, 5), rn(g, 4, 3, 3, 2), rn(g, 4)],
        F.conv2d,
    ),
    Peer(
        "tc_conv2d_bias_tmp",
        TC + "test/test_inference.cc (Conv -> (tmp, O)); test/cuda/test_compile_and_run.cc (convolution, degenerate"
        " +=!); test/test_mapper_llvm.cc; test/cuda/test_compilation_cache.cc; "
        + TC_OLD
        + "test_convolution_reorder.py",
        "tmp_[n,o,h,w] += I[n,c,h+kh,w+kw] * W1[o,c,kh,kw]\n"
        "O1[n,o,h,w] += tmp_[n,o,h,w] + B[o]\ntmp[n,o,h,w] = tmp_[n,o,h,w]",
        lambda g: [rn(g, 2, 3, 5, 6), rn(g, 4, 3, 2, 3), rn(g, 4)],
        lambda x, w, b: (F.conv2d(x, w), F.conv2d(x, w, b)),
        outputs=["tmp", "O1"],
    ),
    Peer(
        "tc_conv2d_strided",
        TC_OLD + "test_convolution_train.py (convolution, {sh} {sw})",
        "O[n,m,h,w] += I[n,c,SH*h+kh,SW*w+kw] * W1[m,c,kh,kw]",
        lambda g: [rn(g, 2, 3, 9, 10), rn(g, 4, 3, 3, 2)],
        lambda x, w: F.conv2d(x, w, stride=(2, 3)),
        consts={"SH": 2, "SW": 3},
    ),
    Peer(
        "tc_conv2d_strided_bias",
        TC
        + "tc/library/convolution.h (${sh}, ${sw}); test/cuda/test_compile_and_run.cc (convolutionStrided); "
        + TC_DB
        + "(convolution_strided); "
        + TC_OLD
        + "test_convolution_strided.py",
        "T[n,m,h,w] += I[n,c,SH*h+kh,SW*w+kw] * W1[m,c,kh,kw]\nO[n,m,h,w] = T[n,m,h,w] + B[m]",
        lambda g: [rn(g, 2, 3, 9, 10), rn(g, 4, 3, 3, 2), rn(g, 4)],
        lambda x, w, b: F.conv2d(x, w, b, stride=(2, 3)),
        consts={"SH": 2, "SW": 3},
    ),
    Peer(
        "tc_conv2d_weight_cfkk",
        TC + "test/test_core.cc (fun: W1 laid out (C, F, KH, KW))",
        "O1[n,f,h,w] += I1[n,c,h+kh,w+kw] * W1[c,f,kh,kw]",
        lambda g: [rn(g, 2, 3, 5, 5), rn(g, 3, 4, 2, 3)],
        lambda x, w: F.conv2d(x, w.transpose(0, 1)),
    ),
    Peer(
        "tc_conv2d_grad",
        TC + "test/test_inference.cc (ConvGrad -> d_I, d_W1, d_B); python/tests/test_tc.py (convolution_grad,"
        " convolution_igrad, convolution_wgrad); docs/source/framework/pytorch_integration/autograd_with_tc.rst"
        " (convolution_igrad, convolution_wgrad); tensor_comprehensions/__init__.py; "
        + TC_OLD
        + "test_convolution_reorder.py"
        " (convolution_grad). TC writes d_I as d_O(n, m, h - kh, w - kw) * W1 and leaves the border to range inference"
        " (it computes only the interior); translated as the full input gradient,"
        " the zero-padded access guarded by where",
        CONV_FULL_IGRAD + "\nd_W1[m,c,kh,kw] += d_O[n,m,h,w] * I[n,c,h+kh,w+kw]\nd_B[m] += d_O[n,m,h,w]",
        lambda g: [rn(g, 2, 3, 6, 5), rn(g, 4, 3, 3, 2), rn(g, 2, 4, 4, 4)],
        lambda i, w, do: (
            F.conv_transpose2d(do, w),
            torch.nn.grad.conv2d_weight(i, w.shape, do),
            do.sum((0, 2, 3)),
        ),
        consts=lambda t: {"OH": t[2].shape[2], "OW": t[2].shape[3]},
        sizes=lambda t: {"x": t[0].shape[2], "y": t[0].shape[3]},
        inputs=["I", "W1", "d_O"],
    ),
    Peer(
        "tc_conv2d_strided_grad",
        TC_DB + "(convolution_grad, {sh} {sw}); " + TC_OLD + "test_convolution_train.py (convolution_grad). TC's"
        " text reads d_O(n, m, sh * h - kh, ...), which is not the gradient of the strided convolution it is paired"
        " with; translated as that gradient (input gradient guarded by divisibility and bounds)",
        CONV_STRIDED_IGRAD + "\nd_W1[m,c,kh,kw] += d_O[n,m,h,w] * I[n,c,SH*h+kh,SW*w+kw]",
        lambda g: [rn(g, 2, 3, 7, 8), rn(g, 4, 3, 3, 2), rn(g, 2, 4, 3, 3)],
        lambda i, w, do: (
            torch.nn.grad.conv2d_input(i.shape, w, do, stride=(2, 3)),
            torch.nn.grad.conv2d_weight(i, w.shape, do, stride=(2, 3)),
        ),
        consts=lambda t: {"SH": 2, "SW": 3, "OH": t[2].shape[2], "OW": t[2].shape[3]},
        sizes=lambda t: {"x": t[0].shape[2], "y": t[0].shape[3], "kh": t[1].shape[2], "kw": t[1].shape[3]},
        inputs=["I", "W1", "d_O"],
    ),
    Peer(
        "tc_group_conv",
        TC + "test/test_core.cc (fun: W1 laid out (G, C, F, KH, KW))",
        "O1[n,g,f,h,w] += I1[n,g,c,h+kh,w+kw] * W1[g,c,f,kh,kw]",
        lambda g: [rn(g, 2, 2, 3, 5, 4), rn(g, 2, 3, 2, 2, 3)],
        lambda x, w: _group_conv(x, w.transpose(1, 2)),
    ),
    Peer(
        "tc_group_conv_bias",
        TC
        + "tc/benchmarks/group_convolution.cc; test/cuda/test_tc_mapper_bugs.cc (group_convolution_naive); "
        + TC_DB
        + "(group_convolution); "
        + TC_OLD
        + "test_group_convolution.py",
        "T[n,g,f,h,w] += I[n,g,c,h+kh,w+kw] * W1[g,f,c,kh,kw]\nO[n,g,f,h,w] = T[n,g,f,h,w] + B[g,f]",
        lambda g: [rn(g, 2, 2, 3, 5, 4), rn(g, 2, 2, 3, 2, 3), rn(g, 2, 2)],
        _group_conv,
    ),
    Peer(
        "tc_group_conv_strided_bias",
        TC
        + "tc/library/group_convolution.h (<sh>, <sw>); "
        + TC_DB
        + "(group_convolution_strided); "
        + TC_OLD
        + "test_group_convolution_strided.py",
        "T[n,g,f,h,w] += I[n,g,c,SH*h+kh,SW*w+kw] * W1[g,f,c,kh,kw]\nO[n,g,f,h,w] = T[n,g,f,h,w] + B[g,f]",
        lambda g: [rn(g, 2, 2, 3, 7, 8), rn(g, 2, 2, 3, 3, 2), rn(g, 2, 2)],
        lambda x, w, b: _group_conv(x, w, b, stride=(2, 3)),
        consts={"SH": 2, "SW": 3},
    ),
    Peer(
        "tc_conv2d_product_reduction",
        TC_OLD + "test_multiply_reduction.py (conv_mult: O *=! I * W1)",
        "O[n,m,h,w] *= I[n,c,h+kh,w+kw] * W1[m,c,kh,kw]",
        lambda g: [pos(g, 1, 2, 4, 4), pos(g, 2, 2, 2, 2)],
        lambda x, w: (F.unfold(x, 2).view(1, 1, 8, 3, 3) * w.reshape(1, 2, 8, 1, 1)).prod(2),
    ),
    Peer(
        "tc_masked_conv",
        TC + "python/examples/masked_conv.py (masked_convolve; the uint8 Mask as a float 0/1 tensor)",
        "Output[b,f,h,w] += where(Mask[f,c] == 1.0, max(0.0, Input[b,c,h+k1,w+k2]) * Weights[f,c,k1,k2], 0.0)",
        lambda g: [away(g, 2, 3, 5, 5), rn(g, 4, 3, 2, 2), (torch.rand(4, 3, generator=g) > 0.5).to(torch.float64)],
        lambda x, w, m: F.conv2d(torch.relu(x), w * m[:, :, None, None]),
        inputs=["Input", "Weights", "Mask"],
        nograd=(2,),
    ),
    Peer(
        "tc_small_mobilenet",
        TC_DB + "(small_mobilenet); " + TC_OLD + "test_small_mobilenet.py",
        "T1[c1,h,w] += I[c1,h+kh,w+kw] * W1[c1,kh,kw]\n"
        "U1[c1,h,w] = T1[c1,h,w] + B1[c1]\n"
        "O1_[c1,h,w] = max(U1[c1,h,w], 0.0)\n"
        "T2[c2,h,w] += O1_[c1,h,w] * W2[c2,c1]\n"
        "U2[c2,h,w] = T2[c2,h,w] + B2[c2]\n"
        "O2[c2,h,w] = max(U2[c2,h,w], 0.0)\n"
        "O1[c1,h,w] = O1_[c1,h,w]",
        lambda g: [rn(g, 3, 5, 5), rn(g, 3, 2, 2), rn(g, 3), rn(g, 4, 3), rn(g, 4)],
        lambda i, w1, b1, w2, b2: (
            torch.relu(F.conv2d(i[None], w1[:, None], b1, groups=3)[0]),
            torch.relu(
                torch.einsum("chw,dc->dhw", torch.relu(F.conv2d(i[None], w1[:, None], b1, groups=3)[0]), w2)
                + b2[:, None, None]
            ),
        ),
        outputs=["O1", "O2"],
    ),
    Peer(
        "tc_graph2",
        TC + "test/cuda/test_tc_mapper_bugs.cc (graph2 -> (O, Out))",
        "O_[n,c,h,w] += J[n,c,h+kh,w+kw] * W1[kh,kw]\n"
        "Out[c0,c1] += I[n,c0,h,w] * O_[n,c1,h,w]\nO[n,c,h,w] = O_[n,c,h,w]",
        lambda g: [rn(g, 2, 3, 4, 5), rn(g, 2, 3, 6, 6), rn(g, 3, 2)],
        lambda i, j, w1: (
            F.conv2d(j.reshape(6, 1, 6, 6), w1[None, None]).reshape(2, 3, 4, 5),
            torch.einsum("nahw,nbhw->ab", i, F.conv2d(j.reshape(6, 1, 6, 6), w1[None, None]).reshape(2, 3, 4, 5)),
        ),
        inputs=["I", "J", "W1"],
        outputs=["O", "Out"],
    ),
    Peer(
        "tc_conv1d_full",
        TC + "test/cuda/test_tc_mapper_bugs.cc (convolution: B(x) +=! A(xp) * K(X - 1 + x - xp))",
        "B[x] += A[xp] * K[X - 1 + x - xp]",
        lambda g: [rn(g, 4), rn(g, 9)],
        lambda a, k: F.conv1d(k.view(1, 1, -1), a.flip(0).view(1, 1, -1)).view(-1),
        consts=lambda t: {"X": t[0].shape[0]},
    ),
    Peer(
        "tc_inference_weird_conv",
        TC + "test/test_inference.cc (WeirdConv: input(b, ip, 2 * h + 3 * w + kh, 2 * w + kw))",
        "output[b,op,h,w] += input[b,ip,2*h+3*w+kh,2*w+kw] * weight[op,ip,kh,kw]",
        lambda g: [rn(g, 1, 2, 20, 9), rn(g, 2, 2, 3, 2)],
        lambda x, w: torch.stack(
            [
                torch.stack(
                    [
                        torch.einsum("bcij,ocij->bo", x[:, :, 2 * h + 3 * q : 2 * h + 3 * q + 3, 2 * q : 2 * q + 2], w)
                        for q in range(4)
                    ],
                    -1,
                )
                for h in range(5)
            ],
            -2,
        ),
    ),
    Peer(
        "tc_inference_padded_conv",
        TC + "test/test_inference.cc (PaddedConv -> (pad, tmp); TC infers pad's range from min 5, 7 and tmp's from"
        " min 3, 3: translated by buffer contents, the offsets moved into the indices; the unused input B dropped)",
        "pad_[n,c,h,w] = I[n,c,h,w]\n"
        "tmp[n,m,h,w] += pad_[n,c,2*h+1+kh,3*w+2+kw] * W1[m,c,kh,kw]\npad[n,c,h,w] = pad_[n,c,h,w]",
        lambda g: [rn(g, 2, 3, 9, 12), rn(g, 4, 3, 3, 2)],
        lambda x, w: (x, F.conv2d(x[:, :, 1:, 2:], w, stride=(2, 3))),
        outputs=["pad", "tmp"],
    ),
    # --- pooling
    Peer(
        "tc_maxpool2x2",
        TC + "docs/source/introduction.rst (maxpool2x2); docs/doxygen/index.md",
        "output[b,c,h,w] max= input[b,c,2*h+kw,2*w+kh]",
        lambda g: [rn(g, 2, 3, 6, 7)],
        lambda x: F.max_pool2d(x, 2),
        sizes={"kw": 2, "kh": 2},
    ),
    Peer(
        "tc_maxpool",
        TC_DB + "(maxpool, {sH} {sW} {kH} {kW}); " + TC_OLD + "test_maxpool.py",
        "Output[b,c,h,w] max= Input[b,c,h*SH+kh,w*SW+kw]",
        lambda g: [rn(g, 2, 3, 7, 6)],
        lambda x: F.max_pool2d(x, (3, 2), stride=(2, 1)),
        consts={"SH": 2, "SW": 1},
        sizes={"kh": 3, "kw": 2},
    ),
    Peer(
        "tc_avgpool",
        TC + "docs/source/framework/pytorch_integration/writing_layers.rst (avgpool, sH = sW = 1, kH = 2, kW = 3);"
        " python/tests/test_tc.py (test_scalar); " + TC_OLD + "test_avgpool.py",
        "output[b,c,h,w] += input[b,c,h*SH+kh,w*SW+kw] / (KH * KW)",
        lambda g: [rn(g, 2, 3, 5, 6)],
        lambda x: F.avg_pool2d(x, (2, 3), stride=1),
        consts={"SH": 1, "SW": 1, "KH": 2, "KW": 3},
        sizes={"kh": 2, "kw": 3},
    ),
    Peer(
        "tc_avgpool_strided",
        TC_DB + "(avgpool, {sH} {sW} {kH} {kW})",
        "Output[b,c,h,w] += Input[b,c,h*SH+kh,w*SW+kw] / (KH * KW)",
        lambda g: [rn(g, 2, 3, 7, 6)],
        lambda x: F.avg_pool2d(x, (3, 2), stride=(2, 1)),
        consts={"SH": 2, "SW": 1, "KH": 3, "KW": 2},
        sizes={"kh": 3, "kw": 2},
    ),
    Peer(
        "tc_average_pool_2",
        TC + "docs/source/inference.rst (average_pool_2: A(i) = B(2*i) + B(2*i + 1))",
        "A[i] = B[2*i] + B[2*i + 1]",
        lambda g: [rn(g, 7)],
        lambda b: b[0:6:2] + b[1:6:2],
    ),
    Peer(
        "tc_average_pool_2_where",
        TC + "docs/source/inference.rst (average_pool_2: A(i) = B(2*i + k) where k in 0:2, which the page calls"
        " equivalent to the unrolled form: a sum over k)",
        "A[i] += B[2*i + k]",
        lambda g: [rn(g, 7)],
        lambda b: b[0:6:2] + b[1:6:2],
        sizes={"k": 2},
    ),
    # --- fully connected
    Peer(
        "tc_fully_connected",
        TC_DB + "(fully_connected); " + TC_OLD + "test_fc.py (fc)",
        "T[b,n] += I[b,m] * W1[n,m]\nO1[b,n] = T[b,n] + B1[n]",
        lambda g: [rn(g, 3, 4), rn(g, 5, 4), rn(g, 5)],
        F.linear,
    ),
    Peer(
        "tc_fcrelu",
        TC + "tc/library/fcrelu.h; " + TC_DB + "(fcrelu); " + TC_OLD + "test_fusion_fcrelu.py, test_broadcast_fcrelu.py"
        " (O1 = B1 where b in 0:B; O1 += I * W1; O1 = fmax(O1, 0): the same math)",
        "T[b,n] += I[b,m] * W1[n,m]\nU[b,n] = T[b,n] + B1[n]\nO1[b,n] = max(U[b,n], 0.0)",
        lambda g: [rn(g, 3, 4), rn(g, 5, 4), rn(g, 5)],
        lambda i, w, b: torch.relu(F.linear(i, w, b)),
    ),
    Peer(
        "tc_2fcrelu",
        TC + "tc/library/2fcrelu.h (func_2fcrelu -> (O1, O2))",
        "T1[b,n] += I[b,m] * W1[n,m]\nO1_[b,n] = max(T1[b,n] + B1[n], 0.0)\n"
        "T2[b,o] += O1_[b,n] * W2[o,n]\nO2[b,o] = max(T2[b,o] + B2[o], 0.0)\nO1[b,n] = O1_[b,n]",
        lambda g: [rn(g, 3, 4), rn(g, 5, 4), rn(g, 5), rn(g, 2, 5), rn(g, 2)],
        _fcrelu_chain,
        outputs=["O1", "O2"],
    ),
    Peer(
        "tc_3fcrelu",
        TC + "tc/library/3fcrelu.h (func_3fcrelu -> (O1, O2, O3)); tc/benchmarks/MLP_model.cc (mlp3: the same"
        " three layers)",
        "T1[b,n] += I[b,m] * W1[n,m]\nO1_[b,n] = max(T1[b,n] + B1[n], 0.0)\n"
        "T2[b,o] += O1_[b,n] * W2[o,n]\nO2_[b,o] = max(T2[b,o] + B2[o], 0.0)\n"
        "T3[b,p] += O2_[b,o] * W3[p,o]\nO3[b,p] = max(T3[b,p] + B3[p], 0.0)\n"
        "O1[b,n] = O1_[b,n]\nO2[b,o] = O2_[b,o]",
        lambda g: [rn(g, 3, 4), rn(g, 5, 4), rn(g, 5), rn(g, 3, 5), rn(g, 3), rn(g, 2, 3), rn(g, 2)],
        _fcrelu_chain,
        outputs=["O1", "O2", "O3"],
    ),
    Peer(
        "tc_4fcrelu",
        TC + "tc/library/4fcrelu.h (func_4fcrelu -> (O1, O2, O3, O4))",
        "T1[b,n] += I[b,m] * W1[n,m]\nO1_[b,n] = max(T1[b,n] + B1[n], 0.0)\n"
        "T2[b,o] += O1_[b,n] * W2[o,n]\nO2_[b,o] = max(T2[b,o] + B2[o], 0.0)\n"
        "T3[b,p] += O2_[b,o] * W3[p,o]\nO3_[b,p] = max(T3[b,p] + B3[p], 0.0)\n"
        "T4[b,q] += O3_[b,p] * W4[q,p]\nO4[b,q] = max(T4[b,q] + B4[q], 0.0)\n"
        "O1[b,n] = O1_[b,n]\nO2[b,o] = O2_[b,o]\nO3[b,p] = O3_[b,p]",
        lambda g: [
            rn(g, 3, 4),
            rn(g, 5, 4),
            rn(g, 5),
            rn(g, 4, 5),
            rn(g, 4),
            rn(g, 3, 4),
            rn(g, 3),
            rn(g, 2, 3),
            rn(g, 2),
        ],
        _fcrelu_chain,
        outputs=["O1", "O2", "O3", "O4"],
    ),
    Peer(
        "tc_mlp1",
        TC + "tc/benchmarks/MLP_model.cc (mlp1: W1 laid out (M, N))",
        "T[b,n] += I[b,m] * W1[m,n]\nU[b,n] = T[b,n] + B1[n]\nO1[b,n] = max(U[b,n], 0.0)",
        lambda g: [rn(g, 3, 4), rn(g, 4, 5), rn(g, 5)],
        lambda i, w, b: torch.relu(i @ w + b),
    ),
    # --- elementwise
    Peer(
        "tc_add",
        TC + "docs/source/framework/pytorch_integration/writing_layers.rst (add); python/tests/test_tc.py (add);"
        " tensor_comprehensions/__init__.py (add); " + TC_DB + "(add)",
        "C[i] = A[i] + B[i]",
        lambda g: [rn(g, 7), rn(g, 7)],
        torch.add,
    ),
    Peer(
        "tc_sub",
        TC + "docs/source/framework/pytorch_integration/writing_layers.rst (sub); python/tests/test_tc.py (sub);"
        " tensor_comprehensions/__init__.py (sub)",
        "C[i] = A[i] - B[i]",
        lambda g: [rn(g, 7), rn(g, 7)],
        torch.sub,
    ),
    Peer(
        "tc_add_2d",
        TC + "test/test_cuda_mapper.cc (fun: C = A + B); test/test_cuda_mapper_memory_promotion.cc;"
        " test/test_mapper_llvm.cc",
        "C[n,m] = A[n,m] + B[n,m]",
        lambda g: [rn(g, 3, 4), rn(g, 3, 4)],
        torch.add,
    ),
    Peer(
        "tc_add_4d",
        TC + "test/test_cuda_mapper_memory_promotion.cc (fun: 4-D C = A + B)",
        "C[n,m,k,l] = A[n,m,k,l] + B[n,m,k,l]",
        lambda g: [rn(g, 2, 3, 2, 3), rn(g, 2, 3, 2, 3)],
        torch.add,
    ),
    Peer(
        "tc_strided_views_add",
        TC + "test/cuda/test_tc_mapper.cc (tensoraddstrided: O += I0_view + I1_view, on strided views; the"
        " inputs here are non-contiguous views too)",
        "O[n,m] += I0_view[n,m] + I1_view[n,m]",
        lambda g: [rn(g, 6, 8)[::2, 1::2], rn(g, 3, 12)[:, ::3]],
        torch.add,
    ),
    Peer(
        "tc_batch_triple_hadamard",
        TC + "test/cuda/test_tc_mapper.cc (batch_triple_hadamard)",
        "Z[b,d] = U[b,d] * V[b,d] * W[b,d]",
        lambda g: [rn(g, 3, 4), rn(g, 3, 4), rn(g, 3, 4)],
        lambda u, v, w: u * v * w,
    ),
    Peer(
        "tc_add_index_values",
        TC + "test/test_cuda_mapper.cc (fun: O = A + n0 + n1 + N, indices and a size as values)",
        "O[n0,n1] = A[n0,n1] + n0 + n1 + N",
        lambda g: [rn(g, 4, 4)],
        lambda a: a + torch.arange(4.0)[:, None] + torch.arange(4.0)[None, :] + 4,
        consts=lambda t: {"N": t[0].shape[0]},
    ),
    Peer(
        "tc_relu",
        TC
        + "docs/source/framework/pytorch_integration/writing_layers.rst (relu: fmax(I, 0)); "
        + TC_DB
        + "(relu); "
        + TC_OLD
        + "test_relu.py",
        "O[b,m] = max(I[b,m], 0.0)",
        lambda g: [away(g, 4, 5)],
        torch.relu,
    ),
    Peer(
        "tc_sigmoid",
        TC_DB + "(sigmoid: 1 / (1 + exp(-I))); " + TC_OLD + "test_sigmoid.py; " + TC + "test/caffe2/cuda/test_caffe2.cc"
        " (the same in 3-D, annotated <=> sigmoid)",
        "O[n,c,h,w] = 1 / (1 + exp(-I[n,c,h,w]))",
        lambda g: [rn(g, 2, 3, 2, 3)],
        torch.sigmoid,
    ),
    Peer(
        "tc_cosine",
        TC_DB + "(cosine: cos(I(i))); " + TC_OLD + "test_cos.py",
        "O[i] = cos(I[i])",
        lambda g: [rn(g, 9)],
        torch.cos,
    ),
    Peer(
        "tc_tanh",
        TC_DB + "(Tanh); " + TC_OLD + "test_tanh.py",
        "O[m] = tanh(I[m])",
        lambda g: [rn(g, 7)],
        torch.tanh,
    ),
    Peer(
        "tc_abs",
        TC_DB + "(abs: fabs); " + TC_OLD + "test_absolute.py",
        "O1[m,n] = abs(A[m,n])",
        lambda g: [away(g, 3, 4)],
        torch.abs,
    ),
    Peer(
        "tc_scale",
        TC_DB + "(scale, {s}); " + TC_OLD + "test_scale.py (s = 10)",
        "O[m,n] = I[m,n] * S",
        lambda g: [rn(g, 3, 4)],
        lambda x: x * 10,
        consts={"S": 10},
    ),
    Peer(
        "tc_min_max_corner",
        TC + "test/cuda/test_corner_cases.cc (E21 max, E22 min, E23 min(a, max(b, c)) on float(1) tensors)",
        "cmax[i] = max(a[i], b[i])\ncmin[i] = min(a[i], b[i])\nd[i] = min(a[i], max(b[i], c[i]))",
        lambda g: [rn(g, 1), rn(g, 1), rn(g, 1)],
        lambda a, b, c: (torch.maximum(a, b), torch.minimum(a, b), torch.minimum(a, torch.maximum(b, c))),
    ),
    Peer(
        "tc_min_max_newlines",
        TC + "test/cuda/test_corner_cases.cc (E24: d = min(a, max(b, c)); d = d + max(b, c), written across newlines)",
        "d_[i] = min(\na[i], max(\nb[i], c[i]))\nd[i] = d_[i] + max(b[i],\n\nc[i])",
        lambda g: [rn(g, 1), rn(g, 1), rn(g, 1)],
        lambda a, b, c: torch.minimum(a, torch.maximum(b, c)) + torch.maximum(b, c),
    ),
    Peer(
        "tc_corner_let",
        TC + "test/cuda/test_corner_cases.cc (E18: b(i) = 2*foo where foo = a(i))",
        "b[i] = 2 * a[i]",
        lambda g: [rn(g, 1)],
        lambda a: 2 * a,
    ),
    Peer(
        "tc_corner_comparisons",
        TC + "test/cuda/test_corner_cases.cc (E15: c(i) = float(a op b) where i in 0:1, for <= >= == != < >)",
        "le[i] = where(a[] <= b[], 1.0, 0.0)\nge[i] = where(a[] >= b[], 1.0, 0.0)\n"
        "eq[i] = where(a[] == b[], 1.0, 0.0)\nne[i] = where(a[] != b[], 1.0, 0.0)\n"
        "lt[i] = where(a[] < b[], 1.0, 0.0)\ngt[i] = where(a[] > b[], 1.0, 0.0)",
        lambda g: [rn(g), rn(g)],
        lambda a, b: tuple(
            f(a, b).to(a.dtype).reshape(1) for f in (torch.le, torch.ge, torch.eq, torch.ne, torch.lt, torch.gt)
        ),
        sizes={"i": 1},
        grad="zero",
    ),
    Peer(
        "tc_corner_bools",
        TC + "test/cuda/test_corner_cases.cc (E16: c(i) = float(!(a < .5) op b > .5) where i in 0:1, for || &&)",
        "c_or[i] = where(!(a[] < .5) || b[] > .5, 1.0, 0.0)\nc_and[i] = where(!(a[] < .5) && b[] > .5, 1.0, 0.0)",
        lambda g: [ru(g, 0, 1, ()), ru(g, 0, 1, ())],
        lambda a, b: (
            ((a >= 0.5) | (b > 0.5)).to(a.dtype).reshape(1),
            ((a >= 0.5) & (b > 0.5)).to(a.dtype).reshape(1),
        ),
        sizes={"i": 1},
        grad="zero",
    ),
    # --- copies, transposes and index maps
    Peer(
        "tc_copy_1d",
        TC + "test/test_core.cc, test/test_tc2halide.cc, test/test_inference.cc (Copy1D), test/test_cuda_mapper.cc,"
        " test/cuda/test_corner_cases.cc (E2, E3: float(1)), tc/library/copy.h (copy of any rank);"
        " python/tests/test_tc.py (convolution_biasgrad: d_Bias = Bias)",
        "O[m] = I[m]",
        lambda g: [rn(g, 5)],
        lambda x: x.clone(),
    ),
    Peer(
        "tc_copy_2d",
        TC + "docs/source/coding_conventions.rst (copy2d); test/test_core.cc, test/test_tc2halide.cc,"
        " test/test_inference.cc (Copy2D), test/test_cuda_mapper.cc; "
        + TC_DB
        + "(copy, copy2D); "
        + TC_OLD
        + "test_copy.py",
        "O[m,n] = I[m,n]",
        lambda g: [rn(g, 3, 4)],
        lambda x: x.clone(),
    ),
    Peer(
        "tc_copy_3d",
        TC + "test/test_core.cc, test/test_tc2halide.cc",
        "O[m,n,p] = I[m,n,p]",
        lambda g: [rn(g, 2, 3, 4)],
        lambda x: x.clone(),
    ),
    Peer(
        "tc_copy_4d",
        TC + "test/test_core.cc, test/test_tc2halide.cc",
        "O[m,n,p,q] = I[m,n,p,q]",
        lambda g: [rn(g, 2, 3, 2, 3)],
        lambda x: x.clone(),
    ),
    Peer(
        "tc_copy_5d",
        TC + "test/test_core.cc, test/test_tc2halide.cc",
        "O[m,n,p,q,r] = I[m,n,p,q,r]",
        lambda g: [rn(g, 2, 3, 2, 2, 3)],
        lambda x: x.clone(),
    ),
    Peer(
        "tc_copy_scalar",
        TC + "test/cuda/test_corner_cases.cc (E4: def f(float a) -> (b) { b = a })",
        "b[] = a[]",
        lambda g: [rn(g)],
        lambda a: a.clone(),
    ),
    Peer(
        "tc_broadcast_scalar",
        TC + "test/cuda/test_corner_cases.cc (E6: b(i) = a where i in 0:10)",
        "b[i] = a[]",
        lambda g: [rn(g)],
        lambda a: a.expand(10).clone(),
        sizes={"i": 10},
    ),
    Peer(
        "tc_constant_fill_exists",
        TC + "docs/source/inference.rst (constant_fill: B(i) = c where exists A(i), which the page says equals"
        " true ? c : A(i))",
        "B[i] = where(1 > 0, c[], A[i])",
        lambda g: [rn(g, 5), rn(g)],
        lambda a, c: c.expand(5).clone(),
        inputs=["A", "c"],
    ),
    Peer(
        "tc_corner_exists_constant",
        TC + "test/cuda/test_corner_cases.cc (E17: b(i) = 4.0 where exists a(i))",
        "b[i] = where(1 > 0, 4.0, a[i])",
        lambda g: [rn(g, 1)],
        lambda a: torch.full_like(a, 4.0),
        grad="zero",
    ),
    Peer(
        "tc_corner_temporary",
        TC + "test/cuda/test_corner_cases.cc (E20: c(i) = a(i) b(i) = c(i); TC rejects the temporary, neoflow"
        " takes it)",
        "c[i] = a[i]\nb[i] = c[i]",
        lambda g: [rn(g, 1)],
        lambda a: a.clone(),
    ),
    Peer(
        "tc_transpose",
        TC_DB + "(transpose: O(c, n, w, h) = I(n, c, h, w)); " + TC_OLD + "test_transpose.py",
        "O[c,n,w,h] = I[n,c,h,w]",
        lambda g: [rn(g, 2, 3, 4, 5)],
        lambda x: x.permute(1, 0, 3, 2).contiguous(),
    ),
    Peer(
        "tc_transpose_2d",
        TC + "test/test_inference.cc (Transpose2D)",
        "O[i,j] = I[j,i]",
        lambda g: [rn(g, 3, 4)],
        lambda x: x.T.contiguous(),
    ),
    Peer(
        "tc_transpose_4d",
        TC + "test/test_inference.cc (Transpose4D: O(i, j, l, k) = I(j, i, k, l))",
        "O[i,j,l,k] = I[j,i,k,l]",
        lambda g: [rn(g, 2, 3, 4, 5)],
        lambda x: x.permute(1, 0, 3, 2).contiguous(),
    ),
    Peer(
        "tc_copy_then_transpose",
        TC + "test/test_cuda_mapper_memory_promotion.cc (fun -> (B, C): B = A, C(m, n) = B(n, m))",
        "B_[n,m] = A[n,m]\nC[m,n] = B_[n,m]\nB[n,m] = B_[n,m]",
        lambda g: [rn(g, 3, 4)],
        lambda a: (a.clone(), a.T.contiguous()),
        outputs=["B", "C"],
    ),
    Peer(
        "tc_two_copies",
        TC + "test/test_cuda_mapper.cc (fun -> (C, D): C = A, D = B)",
        "C[n,m] = A[n,m]\nD[n,m] = B[n,m]",
        lambda g: [rn(g, 3, 4), rn(g, 3, 4)],
        lambda a, b: (a.clone(), b.clone()),
    ),
    Peer(
        "tc_two_copies_1d_2d",
        TC + "test/test_cuda_mapper.cc (fun -> (O1, O2): O1 = I1 1-D, O2 = I2 2-D)",
        "O1[n] = I1[n]\nO2[n0,n1] = I2[n0,n1]",
        lambda g: [rn(g, 4), rn(g, 4, 4)],
        lambda a, b: (a.clone(), b.clone()),
    ),
    Peer(
        "tc_concat_stack",
        TC
        + "test/cuda/test_compile_and_run.cc (concat); test/test_mapper_llvm.cc (concat); "
        + TC_DB
        + "(concat: O1(n, i,"
        " m) = i == 0 ? A(m, n) : B(m, n) where i in 0:2); " + TC_OLD + "test_concat.py",
        "O1[n,i,m] = where(i == 0, A[m,n], B[m,n])",
        lambda g: [rn(g, 3, 4), rn(g, 3, 4)],
        lambda a, b: torch.stack([a.T, b.T], 1),
        sizes={"i": 2},
    ),
    Peer(
        "tc_modulo_index",
        TC + "test/test_cuda_mapper.cc (fun: b(i) = a(i % 3) where i in 0:N)",
        "b[i] = a[i % 3]",
        lambda g: [rn(g, 7)],
        lambda a: a[torch.arange(7) % 3],
        sizes=lambda t: {"i": t[0].shape[0]},
    ),
    Peer(
        "tc_strided_read_offset",
        TC + "test/test_cuda_mapper_memory_promotion.cc (strided: O(i, j) = I(j, 2 * i + 1))",
        "O[i,j] = I[j, 2 * i + 1]",
        lambda g: [rn(g, 3, 9)],
        lambda x: x[:, 1::2].T.contiguous(),
    ),
    Peer(
        "tc_strided_read_5",
        TC + "test/test_cuda_mapper_memory_promotion.cc (strided: O(i, j) = I(j, 5 * i))",
        "O[i,j] = I[j, 5 * i]",
        lambda g: [rn(g, 3, 12)],
        lambda x: x[:, ::5].T.contiguous(),
    ),
    Peer(
        "tc_inference_scale1d",
        TC + "test/test_inference.cc (Scale1D: O(i) = I(123 * i), extent (I_0 + 122) / 123)",
        "O[i] = I[123 * i]",
        lambda g: [rn(g, 300)],
        lambda x: x[::123].clone(),
    ),
    Peer(
        "tc_reverted",
        TC + "docs/source/inference.rst (reverted: A(i) = B(10 - i); TC's range is 9 - I <= i < 11, which starts at"
        " 0 for I = 11)",
        "A[i] = B[10 - i]",
        lambda g: [rn(g, 11)],
        lambda b: b.flip(0),
    ),
    Peer(
        "tc_subsample_2",
        TC + "docs/source/inference.rst (subsample_2: A(i) = B(2*i), range (I+1)/2)",
        "A[i] = B[2*i]",
        lambda g: [rn(g, 7)],
        lambda b: b[::2].clone(),
    ),
    Peer(
        "tc_inference_partial_copy",
        TC + "test/test_inference.cc (PartialCopy: O(i, j) = I(i, j) where i in 3:N-1; translated by buffer"
        " contents: O's min 3 moves into the index)",
        "O[i,j] = I[i + 3, j]",
        lambda g: [rn(g, 8, 3)],
        lambda x: x[3:7].clone(),
        sizes=lambda t: {"i": t[0].shape[0] - 4},
    ),
    Peer(
        "tc_inference_rotate",
        TC + "test/test_inference.cc (UnambiguousRotate: O(i, j) = I(10 + i - j, i + j) where i in 0:10; with"
        " N, M >= 20 TC's range for j starts at 0)",
        "O[i,j] = I[10 + i - j, i + j]",
        lambda g: [rn(g, 20, 20)],
        lambda x: x[
            10 + torch.arange(10)[:, None] - torch.arange(11)[None, :],
            torch.arange(10)[:, None] + torch.arange(11)[None, :],
        ],
        sizes={"i": 10},
    ),
    Peer(
        "tc_inference_derived_size",
        TC + "test/test_inference.cc (RuntimeCheckOnDerivedSizeStaticallyProvable: O(i, j) = I(i, i + j, j) on"
        " float(10, 19, 10); RuntimeCheckOnDerivedSize, the same TC on symbolic sizes, which TC rejects, is this op"
        " once the shapes are known, as they always are in neoflow)",
        "O[i,j] = I[i, i + j, j]",
        lambda g: [rn(g, 10, 19, 10)],
        lambda x: x[
            torch.arange(10)[:, None], torch.arange(10)[:, None] + torch.arange(10)[None, :], torch.arange(10)[None, :]
        ],
    ),
    # --- reductions
    Peer(
        "tc_sum_scalar",
        TC + "test/test_cuda_mapper.cc (O +=! I(r_n)); test/test_lang.cc (scalar: O +=! I(i));"
        " test/test_tc_mapper_harness-inl.h (sum1D: C() +=! A(r_m), C +=! A(r_m))",
        "O[] += I[n]",
        lambda g: [rn(g, 7)],
        lambda x: x.sum(),
    ),
    Peer(
        "tc_sum_to_one_element",
        TC + "test/test_core.cc, test/test_tc2halide.cc (O(0) +=! I(r_m)); test/test_tc_mapper_harness-inl.h"
        " (sum1D: C(0) +=! A(r_m), C(i) +=! A(r_m) where i in 0:1); test/test_tc2halide.cc and"
        " test/cuda/test_compile_and_run.cc (Types: B(k) +=! A(i) where k in 0:1, float and double)",
        "O[z] += I[m]",
        lambda g: [rn(g, 7)],
        lambda x: x.sum().reshape(1),
        sizes={"z": 1},
    ),
    Peer(
        "tc_row_sum",
        TC + "test/test_core.cc, test/test_tc2halide.cc (O(m) +=! I(m, r_n)); test/test_lang.cc (O(i) +=! A(i, j),"
        " O(i) += A(i, j)); test/test_tc_mapper_harness-inl.h (sum2D); tc/benchmarks/moments.h (sum_2D_1D)",
        "O[m] += I[m,n]",
        lambda g: [rn(g, 3, 5)],
        lambda x: x.sum(1),
    ),
    Peer(
        "tc_sum_two_axes",
        TC + "test/test_core.cc, test/test_tc2halide.cc (O(m) +=! I(m, r_n, r_p))",
        "O[m] += I[m,n,p]",
        lambda g: [rn(g, 3, 4, 2)],
        lambda x: x.sum((1, 2)),
    ),
    Peer(
        "tc_row_prod",
        TC + "test/test_lang.cc (O(i) *= A(i, j))",
        "O[i] *= A[i,j]",
        lambda g: [rn(g, 3, 4)],
        lambda x: x.prod(1),
    ),
    Peer(
        "tc_row_max",
        TC + "test/test_lang.cc (O(i) max= A(i, j))",
        "O[i] max= A[i,j]",
        lambda g: [rn(g, 3, 4)],
        lambda x: x.amax(1),
    ),
    Peer(
        "tc_row_min",
        TC + "test/test_lang.cc (O(i) min= A(i, j))",
        "O[i] min= A[i,j]",
        lambda g: [rn(g, 3, 4)],
        lambda x: x.amin(1),
    ),
    Peer(
        "tc_prod_into_initialized",
        TC + "test/test_lang.cc (O(i) = B(i); O(i) *= A(i, j))",
        "P[i] *= A[i,j]\nO[i] = B[i] * P[i]",
        lambda g: [rn(g, 3, 4), rn(g, 3)],
        lambda a, b: b * a.prod(1),
        inputs=["A", "B"],
    ),
    Peer(
        "tc_max_then_min",
        TC + "test/test_lang.cc (O(i) max=! A(i, j); O(i) min= B(i, j))",
        "M[i] max= A[i,j]\nN[i] min= B[i,j]\nO[i] = min(M[i], N[i])",
        lambda g: [rn(g, 4, 5), rn(g, 4, 5)],
        lambda a, b: torch.minimum(a.amax(1), b.amin(1)),
    ),
    Peer(
        "tc_log_tanh_sum",
        TC + "test/test_lang.cc (builtins: O +=! log(tanh(I(i))))",
        "O[] += log(tanh(I[i]))",
        lambda g: [pos(g, 6)],
        lambda x: torch.log(torch.tanh(x)).sum(),
    ),
    Peer(
        "tc_row_mean",
        TC + "test/test_cuda_mapper.cc (O(n) +=! I(n, r_n); O(n) = O(n) / (K); also on float(36864, 1024));"
        " tc/benchmarks/moments.h (mean_2D_1D)",
        "S[n] += I[n,k]\nO[n] = S[n] / K",
        lambda g: [rn(g, 3, 5)],
        lambda x: x.mean(1),
        consts=lambda t: {"K": t[0].shape[1]},
    ),
    Peer(
        "tc_init_then_accumulate",
        TC + "test/test_cuda_mapper.cc (O(n) = 0.0 where n in 0:N; O(n) += O0(n); O(n) += I(n, r_n))",
        "S[n] += I[n,k]\nO[n] = O0[n] + S[n]",
        lambda g: [rn(g, 3, 5), rn(g, 3)],
        lambda x, o0: o0 + x.sum(1),
    ),
    Peer(
        "tc_init_then_accumulate_mean",
        TC + "test/test_cuda_mapper.cc (the same, then O(n) = O(n) / (K))",
        "S[n] += I[n,k]\nO[n] = (O0[n] + S[n]) / K",
        lambda g: [rn(g, 3, 5), rn(g, 3)],
        lambda x, o0: (o0 + x.sum(1)) / 5,
        consts=lambda t: {"K": t[0].shape[1]},
    ),
    Peer(
        "tc_sum_squares",
        TC + "tc/benchmarks/moments.h (sum_squares_2D_1D)",
        "sum_squares[n] += I[n,k] * I[n,k]",
        lambda g: [rn(g, 3, 5)],
        lambda x: (x * x).sum(1),
    ),
    Peer(
        "tc_sum_and_squares",
        TC + "tc/benchmarks/moments.h (sum_and_squares_2D_1D)",
        "sum[n] += I[n,k]\nsum_squares[n] += I[n,k] * I[n,k]",
        lambda g: [rn(g, 3, 5)],
        lambda x: (x.sum(1), (x * x).sum(1)),
    ),
    Peer(
        "tc_var_given_mean",
        TC + "tc/benchmarks/moments.h (var_2D_1D); test/test_cuda_mapper.cc (var_2D_1D)",
        "S[n] += I[n,k] * I[n,k]\nvar[n] = S[n] / K - mean[n] * mean[n]",
        lambda g: [rn(g, 3, 5), rn(g, 3)],
        lambda x, m: (x * x).sum(1) / 5 - m * m,
        consts=lambda t: {"K": t[0].shape[1]},
        inputs=["I", "mean"],
    ),
    Peer(
        "tc_moments",
        TC + "python/tests/test_tc.py (moments); tensor_comprehensions/__init__.py (moments);"
        " tc/benchmarks/moments.h and group_normalization.h (moments2_2D_1D)",
        "S[n] += I[n,k]\nQ[n] += I[n,k] * I[n,k]\n"
        "mean_[n] = S[n] / K\nvar[n] = Q[n] / K - mean_[n] * mean_[n]\nmean[n] = mean_[n]",
        lambda g: [rn(g, 3, 5)],
        lambda x: (x.mean(1), x.var(1, unbiased=False)),
        consts=lambda t: {"K": t[0].shape[1]},
        outputs=["mean", "var"],
    ),
    Peer(
        "tc_reduce_then_fuse",
        TC + "test/test_cuda_mapper.cc (fun -> (O1, O2, O3): O1 +=! A(n0, n1, r_n2, r_n3) * B(n0, n1); O2 = C * D;"
        " O3 = O1 + O2); test/test_mapper_llvm.cc (the same on float(N, M, K, L))",
        "O1_[n,m] += A[n,m,k,l] * B[n,m]\nO2_[n,m] = C[n,m] * D[n,m]\nO3[n,m] = O1_[n,m] + O2_[n,m]\n"
        "O1[n,m] = O1_[n,m]\nO2[n,m] = O2_[n,m]",
        lambda g: [rn(g, 2, 3, 4, 2), rn(g, 2, 3), rn(g, 2, 3), rn(g, 2, 3)],
        lambda a, b, c, d: (a.sum((2, 3)) * b, c * d, a.sum((2, 3)) * b + c * d),
        outputs=["O1", "O2", "O3"],
    ),
    # --- chains of statements (test_core.cc and test_tc2halide.cc)
    Peer(
        "tc_chain_copy_1d",
        TC + "test/test_core.cc, test/test_tc2halide.cc, test/test_cuda_mapper.cc (O1 = I; O2 = O1, 1-D)",
        "O1_[m] = I[m]\nO2[m] = O1_[m]\nO1[m] = O1_[m]",
        lambda g: [rn(g, 5)],
        lambda x: (x.clone(), x.clone()),
        outputs=["O1", "O2"],
    ),
    Peer(
        "tc_chain_copy_2d",
        TC + "test/test_core.cc, test/test_tc2halide.cc (O1 = I; O2 = O1, 2-D)",
        "O1_[m,n] = I[m,n]\nO2[m,n] = O1_[m,n]\nO1[m,n] = O1_[m,n]",
        lambda g: [rn(g, 3, 4)],
        lambda x: (x.clone(), x.clone()),
        outputs=["O1", "O2"],
    ),
    Peer(
        "tc_chain_copy3_2d",
        TC + "test/test_core.cc, test/test_tc2halide.cc (O1 = I; O2 = O1; O3 = O2)",
        "O1_[m,n] = I[m,n]\nO2_[m,n] = O1_[m,n]\nO3[m,n] = O2_[m,n]\nO1[m,n] = O1_[m,n]\nO2[m,n] = O2_[m,n]",
        lambda g: [rn(g, 3, 4)],
        lambda x: (x.clone(), x.clone(), x.clone()),
        outputs=["O1", "O2", "O3"],
    ),
    Peer(
        "tc_chain_sum_copy",
        TC + "test/test_core.cc, test/test_tc2halide.cc (O1 +=! I(m, r_n); O2 = O1)",
        "O1_[m] += I[m,n]\nO2[m] = O1_[m]\nO1[m] = O1_[m]",
        lambda g: [rn(g, 3, 4)],
        lambda x: (x.sum(1), x.sum(1)),
        outputs=["O1", "O2"],
    ),
    Peer(
        "tc_chain_copy_sum",
        TC + "test/test_core.cc, test/test_tc2halide.cc (O1 = I; O2 +=! O1(m, r_n))",
        "O1_[m,n] = I[m,n]\nO2[m] += O1_[m,n]\nO1[m,n] = O1_[m,n]",
        lambda g: [rn(g, 3, 4)],
        lambda x: (x.clone(), x.sum(1)),
        outputs=["O1", "O2"],
    ),
    Peer(
        "tc_chain_copy_sum_copy",
        TC + "test/test_core.cc, test/test_tc2halide.cc (O1 = I; O2 +=! O1(m, r_n); O3 = O2)",
        "O1_[m,n] = I[m,n]\nO2_[m] += O1_[m,n]\nO3[m] = O2_[m]\nO1[m,n] = O1_[m,n]\nO2[m] = O2_[m]",
        lambda g: [rn(g, 3, 4)],
        lambda x: (x.clone(), x.sum(1), x.sum(1)),
        outputs=["O1", "O2", "O3"],
    ),
    Peer(
        "tc_inference_tca",
        TC + "test/test_inference.cc (TCA: O(i) +=! I(j, i + j, k), extent I_1 - I_0 + 1)",
        "O[i] += I[j, i + j, k]",
        lambda g: [rn(g, 3, 7, 2)],
        lambda x: _loop_sum((5, 3, 2), lambda i, j, k: x[j, i + j, k]),
    ),
    Peer(
        "tc_inference_tcc",
        TC + "test/test_inference.cc (TCC: O(i) +=! I(i, i + j, j); TC rejects it as ambiguous, EXPECT_THROW; with"
        " the shapes known, direct constraints fix i and j and i + j is proven in bounds)",
        "O[i] += I[i, i + j, j]",
        lambda g: [rn(g, 3, 7, 5)],
        lambda x: _loop_sum((3, 5, 1), lambda i, j, k: x[i, i + j, j]),
    ),
    Peer(
        "tc_inference_tcd",
        TC + "test/test_inference.cc (TCD: O(i) +=! I(i, j, i, k, 2 * i + j); TC rejects it, EXPECT_THROW; neoflow"
        " fixes i, j, k directly and proves 2 * i + j in bounds)",
        "O[i] += I[i, j, i, k, 2 * i + j]",
        lambda g: [rn(g, 3, 4, 3, 2, 12)],
        lambda x: _loop_sum((3, 4, 2), lambda i, j, k: x[i, j, i, k, 2 * i + j]),
    ),
    Peer(
        "tc_inference_tce",
        TC + "test/test_inference.cc (TCE: O(i) +=! I(j, j + 1, i, i + 3, 2 * i + j + 0); TC rejects it,"
        " EXPECT_THROW; neoflow fixes i and j directly and proves the rest in bounds)",
        "O[i] += I[j, j + 1, i, i + 3, 2 * i + j + 0]",
        lambda g: [rn(g, 3, 4, 3, 6, 12)],
        lambda x: _loop_sum((3, 3, 1), lambda i, j, k: x[j, j + 1, i, i + 3, 2 * i + j]),
    ),
    Peer(
        "tc_inference_tcf",
        TC + "test/test_inference.cc (TCF -> (O2, O3): O2(j, k, l) +=! B(j, k, l) + A(i, j, k); O3(k, l, m) +=!"
        " C(k, l, m) + O2(j, k, l); TC's extents are the minimum of the dimensions, given here as sizes)",
        "O2_[j,k,l] += B[j,k,l] + A[i,j,k]\nO3[k,l,m] += C[k,l,m] + O2_[j,k,l]\nO2[j,k,l] = O2_[j,k,l]",
        lambda g: [rn(g, 2, 4, 3), rn(g, 3, 4, 2), rn(g, 3, 3, 2)],
        lambda a, b, c: (
            2 * b[:3, :3, :2] + a.sum(0)[:3, :3, None],
            3 * c[:3, :2, :2] + (2 * b[:3, :3, :2] + a.sum(0)[:3, :3, None]).sum(0)[:, :, None],
        ),
        sizes={"j": 3, "k": 3, "l": 2},
        inputs=["A", "B", "C"],
        outputs=["O2", "O3"],
    ),
    Peer(
        "tc_inference_tcg",
        TC + "test/test_inference.cc (TCG -> (O1, O2, O3): O1(i, j) +=! A(i, j, k); O2(j, k, l) +=! B(j, k, l) +"
        " O1(i, j); O3(k, l, m) +=! C(k, l, m) + O2(j, k, l))",
        "O1_[i,j] += A[i,j,k]\nO2_[j,k,l] += B[j,k,l] + O1_[i,j]\nO3[k,l,m] += C[k,l,m] + O2_[j,k,l]\n"
        "O1[i,j] = O1_[i,j]\nO2[j,k,l] = O2_[j,k,l]",
        lambda g: [rn(g, 2, 3, 2), rn(g, 3, 4, 2), rn(g, 4, 2, 3)],
        lambda a, b, c: (
            a.sum(2),
            2 * b + a.sum(2).sum(0)[:, None, None],
            3 * c + (2 * b + a.sum(2).sum(0)[:, None, None]).sum(0)[:, :, None],
        ),
        outputs=["O1", "O2", "O3"],
    ),
    # --- softmax, normalizations, distances
    Peer(
        "tc_softmax_unshifted",
        TC + "docs/source/ml_with_tc.rst (softmax -> (O, expsum): exp(I) / sum exp(I))",
        "expsum_[n] += exp(I[n,d])\nO[n,d] = exp(I[n,d]) / expsum_[n]\nexpsum[n] = expsum_[n]",
        lambda g: [rn(g, 3, 5)],
        lambda x: (torch.softmax(x, 1), torch.exp(x).sum(1)),
        outputs=["O", "expsum"],
    ),
    Peer(
        "tc_softmax",
        TC + "docs/source/framework/pytorch_integration/frequently_asked_questions.rst (softmax -> (O, maxVal,"
        " expDistance[, expSum]); and its tmp-reusing version -> (O, tmp)); test/cuda/test_compile_and_run.cc"
        " (softmax, three versions); " + TC_DB + "(softmax in layers_database.rst); " + TC_OLD + "test_softmax.py",
        "maxVal_[n] max= I[n,d]\nexpDistance_[n,d] = exp(I[n,d] - maxVal_[n])\nexpSum_[n] += expDistance_[n,d]\n"
        "O[n,d] = expDistance_[n,d] / expSum_[n]\n"
        "maxVal[n] = maxVal_[n]\nexpDistance[n,d] = expDistance_[n,d]\nexpSum[n] = expSum_[n]",
        lambda g: [rn(g, 3, 5)],
        _softmax_parts,
        outputs=["O", "maxVal", "expDistance", "expSum"],
    ),
    Peer(
        "tc_softmax_recomputed_exp",
        TC + "docs/source/framework/pytorch_integration/frequently_asked_questions.rst and"
        " test/cuda/test_compile_and_run.cc (softmax -> (O, expsum, maxVal): exp recomputed in O)",
        "maxVal_[n] max= I[n,d]\nexpsum_[n] += exp(I[n,d] - maxVal_[n])\n"
        "O[n,d] = exp(I[n,d] - maxVal_[n]) / expsum_[n]\n"
        "expsum[n] = expsum_[n]\nmaxVal[n] = maxVal_[n]",
        lambda g: [rn(g, 3, 5)],
        lambda x: (_softmax_parts(x)[0], _softmax_parts(x)[3], _softmax_parts(x)[1]),
        outputs=["O", "expsum", "maxVal"],
    ),
    Peer(
        "tc_softmax_layers_yaml",
        TC + "tensor_comprehensions/library/layers.yaml (softmax -> (O, ExpSum, MaxVal); as written its O is"
        " exp(I) / sum exp(I - max), i.e. softmax times exp(max); translated as written)",
        "MaxVal_[n] max= I[n,d]\nExpSum_[n] += exp(I[n,d] - MaxVal_[n])\nO[n,d] = exp(I[n,d]) / ExpSum_[n]\n"
        "ExpSum[n] = ExpSum_[n]\nMaxVal[n] = MaxVal_[n]",
        lambda g: [rn(g, 3, 5)],
        lambda x: (torch.exp(x) / _softmax_parts(x)[3][:, None], _softmax_parts(x)[3], x.amax(1)),
        outputs=["O", "ExpSum", "MaxVal"],
    ),
    Peer(
        "tc_layernorm",
        TC + "test/cuda/test_autotuner.cc (layernorm); test/cuda/test_tc_mapper_bugs.cc (layernorm, r_c). As"
        " written O = centered / rsqrt(var), i.e. centered * sqrt(var); translated as written",
        "mean_[t,b] += I[t,b,c] / C\ncentered_[t,b,c] = I[t,b,c] - mean_[t,b]\n"
        "V[t,b] += centered_[t,b,c] * centered_[t,b,c]\nvar_[t,b] = V[t,b] / C\n"
        "O[t,b,c] = centered_[t,b,c] / rsqrt(var_[t,b])\n"
        "mean[t,b] = mean_[t,b]\ncentered[t,b,c] = centered_[t,b,c]\nvar[t,b] = var_[t,b]",
        lambda g: [rn(g, 2, 3, 4)],
        lambda x: _layernorm(x, 0.0),
        consts=lambda t: {"C": t[0].shape[2]},
        outputs=["O", "mean", "centered", "var"],
    ),
    Peer(
        "tc_layernorm_eps",
        TC_DB + "(layernorm: var = (var + {eps}) / C); " + TC_OLD + "test_layernorm.py (eps = 1e-5)",
        "mean_[t,b] += I[t,b,c] / C\ncentered_[t,b,c] = I[t,b,c] - mean_[t,b]\n"
        "V[t,b] += centered_[t,b,c] * centered_[t,b,c]\nvar_[t,b] = (V[t,b] + EPS) / C\n"
        "O[t,b,c] = centered_[t,b,c] / rsqrt(var_[t,b])\n"
        "mean[t,b] = mean_[t,b]\ncentered[t,b,c] = centered_[t,b,c]\nvar[t,b] = var_[t,b]",
        lambda g: [rn(g, 2, 3, 4)],
        lambda x: _layernorm(x, 1e-5),
        consts=lambda t: {"C": t[0].shape[2], "EPS": 1e-5},
        outputs=["O", "mean", "centered", "var"],
    ),
    Peer(
        "tc_batchnorm",
        TC_DB + "(batchnorm, {momentum} {eps}); " + TC_OLD + "test_batchnorm.py (momentum 0.5, eps 1e-5)",
        "S[c] += I[nn,c,hh,ww]\nmean_[c] = S[c] / (N * H * W)\n"
        "rMeanOut_[c] = (1 - MOM) * rMeanIn[c] + MOM * mean_[c]\n"
        "centered_[n,c,h,w] = I[n,c,h,w] - rMeanOut_[c]\n"
        "variance_[n,c,h,w] = centered_[n,c,h,w] * centered_[n,c,h,w]\n"
        "expectedVariance_[c] += (variance_[n,c,h,w] + EPS) / (N * H * W)\n"
        "rVarOut_[c] = rsqrt((1 - MOM) * rVarIn[c] + MOM * expectedVariance_[c])\n"
        "O_[n,c,h,w] = centered_[n,c,h,w] * rVarOut_[c]\n"
        "normalizedOut[n,c,h,w] = O_[n,c,h,w]\n"
        "O[n,c,h,w] = O_[n,c,h,w]\nrMeanOut[c] = rMeanOut_[c]\nrVarOut[c] = rVarOut_[c]\nmean[c] = mean_[c]\n"
        "centered[n,c,h,w] = centered_[n,c,h,w]\nvariance[n,c,h,w] = variance_[n,c,h,w]\n"
        "expectedVariance[c] = expectedVariance_[c]",
        lambda g: [rn(g, 2, 3, 2, 3), rn(g, 3), pos(g, 3)],
        lambda x, rm, rv: _batchnorm(0.5, 1e-5, x, rm, rv),
        consts=lambda t: {"N": t[0].shape[0], "H": t[0].shape[2], "W": t[0].shape[3], "MOM": 0.5, "EPS": 1e-5},
        outputs=["O", "rMeanOut", "rVarOut", "mean", "centered", "variance", "expectedVariance", "normalizedOut"],
    ),
    Peer(
        "tc_batchnorm_scalar_params",
        TC + "tc/library/batchnorm.h (spatialBatchNorm(float momentum, float eps, ...): the scalars as rank-0 tensors)",
        "S[c] += I[nn,c,hh,ww]\nmean_[c] = S[c] / (N * H * W)\n"
        "rMeanOut_[c] = (1 - momentum[]) * rMeanIn[c] + momentum[] * mean_[c]\n"
        "centered_[n,c,h,w] = I[n,c,h,w] - rMeanOut_[c]\n"
        "variance_[n,c,h,w] = centered_[n,c,h,w] * centered_[n,c,h,w]\n"
        "expectedVariance_[c] += (variance_[n,c,h,w] + eps[]) / (N * H * W)\n"
        "rVarOut_[c] = rsqrt((1 - momentum[]) * rVarIn[c] + momentum[] * expectedVariance_[c])\n"
        "O_[n,c,h,w] = centered_[n,c,h,w] * rVarOut_[c]\n"
        "normalizedOut[n,c,h,w] = O_[n,c,h,w]\n"
        "O[n,c,h,w] = O_[n,c,h,w]\nrMeanOut[c] = rMeanOut_[c]\nrVarOut[c] = rVarOut_[c]\nmean[c] = mean_[c]\n"
        "centered[n,c,h,w] = centered_[n,c,h,w]\nvariance[n,c,h,w] = variance_[n,c,h,w]\n"
        "expectedVariance[c] = expectedVariance_[c]",
        lambda g: [ru(g, 0.2, 0.8, ()), ru(g, 0.01, 0.1, ()), rn(g, 2, 3, 2, 3), rn(g, 3), pos(g, 3)],
        _batchnorm,
        consts=lambda t: {"N": t[2].shape[0], "H": t[2].shape[2], "W": t[2].shape[3]},
        inputs=["momentum", "eps", "I", "rMeanIn", "rVarIn"],
        outputs=["O", "rMeanOut", "rVarOut", "mean", "centered", "variance", "expectedVariance", "normalizedOut"],
    ),
    Peer(
        "tc_spatial_batch_norm",
        TC + "test/cuda/test_tc_mapper.cc (spatial_batch_norm(float(1) momentum, float(1) eps, ...): read at"
        " momentum(0), eps(0))",
        "S[c] += I[r_n,c,r_h,r_w]\nmean_[c] = S[c] / (N * H * W)\n"
        "rMeanOut_[c] = (1 - momentum[0]) * rMeanIn[c] + momentum[0] * mean_[c]\n"
        "centered_[n,c,h,w] = I[n,c,h,w] - rMeanOut_[c]\n"
        "variance_[n,c,h,w] = centered_[n,c,h,w] * centered_[n,c,h,w]\n"
        "expectedVariance_[c] += (variance_[r_n,c,r_h,r_w] + eps[0]) / (N * H * W)\n"
        "rVarOut_[c] = rsqrt((1 - momentum[0]) * rVarIn[c] + momentum[0] * expectedVariance_[c])\n"
        "O_[n,c,h,w] = centered_[n,c,h,w] * rVarOut_[c]\n"
        "normalizedOut[n,c,h,w] = O_[n,c,h,w]\n"
        "O[n,c,h,w] = O_[n,c,h,w]\nrMeanOut[c] = rMeanOut_[c]\nrVarOut[c] = rVarOut_[c]\nmean[c] = mean_[c]\n"
        "centered[n,c,h,w] = centered_[n,c,h,w]\nvariance[n,c,h,w] = variance_[n,c,h,w]\n"
        "expectedVariance[c] = expectedVariance_[c]",
        lambda g: [ru(g, 0.2, 0.8, 1), ru(g, 0.01, 0.1, 1), rn(g, 2, 3, 2, 3), rn(g, 3), pos(g, 3)],
        lambda mom, eps, x, rm, rv: _batchnorm(mom[0], eps[0], x, rm, rv),
        consts=lambda t: {"N": t[2].shape[0], "H": t[2].shape[2], "W": t[2].shape[3]},
        inputs=["momentum", "eps", "I", "rMeanIn", "rVarIn"],
        outputs=["O", "rMeanOut", "rVarOut", "mean", "centered", "variance", "expectedVariance", "normalizedOut"],
    ),
    Peer(
        "tc_group_norm_fused",
        TC + "python/tests/test_tc.py (test_group_norm_fused: group_normalization -> (Sum, SumSq, O))",
        "Sum_[n,g] += I[n,g,r_d,r_h,r_w]\nSumSq_[n,g] += I[n,g,r_d,r_h,r_w] * I[n,g,r_d,r_h,r_w]\n"
        "O[n,g,d,h,w] = gamma[g,d] * (I[n,g,d,h,w] - Sum_[n,g] / (D * H * W))"
        " * rsqrt((SumSq_[n,g] - Sum_[n,g] * Sum_[n,g] / (D * H * W)) / (D * H * W) + 1e-5) + beta[g,d]\n"
        "Sum[n,g] = Sum_[n,g]\nSumSq[n,g] = SumSq_[n,g]",
        lambda g: [rn(g, 2, 2, 3, 2, 2), rn(g, 2, 3), rn(g, 2, 3)],
        lambda x, gm, bt: (
            x.sum((2, 3, 4)),
            (x * x).sum((2, 3, 4)),
            F.group_norm(x.reshape(2, 6, 2, 2), 2, gm.reshape(6), bt.reshape(6), eps=1e-5).reshape(x.shape),
        ),
        consts=lambda t: {"D": t[0].shape[2], "H": t[0].shape[3], "W": t[0].shape[4]},
        outputs=["Sum", "SumSq", "O"],
    ),
    Peer(
        "tc_group_norm_single_kernel",
        TC + "tc/benchmarks/group_normalization.h (group_normalization_single_kernel -> (O, sum, sumSquares))",
        "sum_[n,g] += I[n,g,r_d,r_h,r_w]\nsumSquares_[n,g] += I[n,g,r_d,r_h,r_w] * I[n,g,r_d,r_h,r_w]\n"
        "O[n,g,d,h,w] = gamma[g,d] * (I[n,g,d,h,w] - sum_[n,g] / (D * H * W))"
        " * rsqrt(sumSquares_[n,g] / (D * H * W) - sum_[n,g] * sum_[n,g] / (D * H * W) / (D * H * W) + 1e-5)"
        " + beta[g,d]\n"
        "sum[n,g] = sum_[n,g]\nsumSquares[n,g] = sumSquares_[n,g]",
        lambda g: [rn(g, 2, 2, 3, 2, 2), rn(g, 2, 3), rn(g, 2, 3)],
        lambda x, gm, bt: (
            F.group_norm(x.reshape(2, 6, 2, 2), 2, gm.reshape(6), bt.reshape(6), eps=1e-5).reshape(x.shape),
            x.sum((2, 3, 4)),
            (x * x).sum((2, 3, 4)),
        ),
        consts=lambda t: {"D": t[0].shape[2], "H": t[0].shape[3], "W": t[0].shape[4]},
        outputs=["O", "sum", "sumSquares"],
    ),
    Peer(
        "tc_group_norm_scaled",
        TC + "tc/examples/group_normalization.cc (group_normalization -> (O, mean, var) with <scale> = 1 / (D H W));"
        " test/cuda/test_tc_mapper_bugs.cc (group_norm: the same with the scale written as 1.0)",
        "mean_[n,g] += I[n,g,r_d,r_h,r_w]\nvar_[n,g] += I[n,g,r_d,r_h,r_w] * I[n,g,r_d,r_h,r_w]\n"
        "O[n,g,d,h,w] = gamma[g,d] * (I[n,g,d,h,w] - mean_[n,g] * SCALE)"
        " * rsqrt(var_[n,g] * SCALE - mean_[n,g] * mean_[n,g] * SCALE * SCALE + 1e-5) + beta[g,d]\n"
        "mean[n,g] = mean_[n,g]\nvar[n,g] = var_[n,g]",
        lambda g: [rn(g, 2, 2, 3, 2, 2), rn(g, 2, 3), rn(g, 2, 3)],
        lambda x, gm, bt: (
            F.group_norm(x.reshape(2, 6, 2, 2), 2, gm.reshape(6), bt.reshape(6), eps=1e-5).reshape(x.shape),
            x.sum((2, 3, 4)),
            (x * x).sum((2, 3, 4)),
        ),
        consts=lambda t: {"SCALE": 1.0 / (t[0].shape[2] * t[0].shape[3] * t[0].shape[4])},
        outputs=["O", "mean", "var"],
    ),
    Peer(
        "tc_group_norm_given_moments",
        TC + "python/tests/test_tc.py (test_group_norm_2kernels: group_normalization with mean, var inputs);"
        " tc/benchmarks/group_normalization.h; tensor_comprehensions/__init__.py",
        "O[n,g,d,h,w] = gamma[g,d] * (I[n,g,d,h,w] - mean[n,g]) * rsqrt(var[n,g] + 1e-5) + beta[g,d]",
        lambda g: [rn(g, 2, 2, 3, 2, 2), rn(g, 2, 3), rn(g, 2, 3), rn(g, 2, 2), pos(g, 2, 2)],
        lambda x, gm, bt, m, v: (
            gm[None, :, :, None, None] * (x - m[:, :, None, None, None]) * torch.rsqrt(v + 1e-5)[:, :, None, None, None]
            + bt[None, :, :, None, None]
        ),
        inputs=["I", "gamma", "beta", "mean", "var"],
    ),
    Peer(
        "tc_cosine_similarity",
        TC_DB + "(cosine_similarity -> (O, sumI1, sumI2), {eps}); " + TC_OLD + "test_cosine_similarity.py (eps 1e-5)."
        " As written it divides by fmax(rsqrt(sumI1) * sqrt(sumI2), eps); translated as written",
        "sumI1_[m] += I1[m,n] * I1[m,n]\nsumI2_[m] += I2[m,n] * I2[m,n]\n"
        "O[m] += (I1[m,n] * I2[m,n]) / max(rsqrt(sumI1_[m]) * sqrt(sumI2_[m]), EPS)\n"
        "sumI1[m] = sumI1_[m]\nsumI2[m] = sumI2_[m]",
        lambda g: [rn(g, 3, 5), rn(g, 3, 5)],
        lambda a, b: (
            (a * b).sum(1) / torch.clamp(torch.rsqrt((a * a).sum(1)) * torch.sqrt((b * b).sum(1)), min=1e-5),
            (a * a).sum(1),
            (b * b).sum(1),
        ),
        consts={"EPS": 1e-5},
        outputs=["O", "sumI1", "sumI2"],
    ),
    # --- python/examples/min_distance.py (the pieces that read no index from data)
    Peer(
        "tc_min_all",
        TC + "python/examples/min_distance.py (min_2d(float(N) S) and min_1d(float(D) V): v min=! S(r_n))",
        "v[] min= S[n]",
        lambda g: [rn(g, 7)],
        lambda s: s.amin(),
    ),
    Peer(
        "tc_min_rows",
        TC + "python/examples/min_distance.py (min_2d(float(D, NBYD) S): V(d) min=! S(d, r_nbyd))",
        "V[d] min= S[d,r]",
        lambda g: [rn(g, 3, 4)],
        lambda s: s.amin(1),
    ),
    Peer(
        "tc_argmin_given_min",
        TC + "python/examples/min_distance.py (argmin_2d(float(N) S, float v): min_idx min=! (S(r_n) == v) ? r_n :"
        " N; the index is a float-valued output)",
        "min_idx[] min= where(S[n] == v[], n, N)",
        lambda g: (lambda s: [s, s.amin()])(rn(g, 7)),
        lambda s, v: (s == v).nonzero()[0, 0].to(s.dtype),
        consts=lambda t: {"N": t[0].shape[0]},
        grad="zero",
    ),
    Peer(
        "tc_argmin_rows_given_min",
        TC + "python/examples/min_distance.py (argmin_2d(float(D, NBYD) S, float v): MinIdx(d) min=! (S(d, r_nbyd)"
        " == v) ? d * NBYD + r_nbyd : NBYD * D)",
        "MinIdx[d] min= where(S[d,r] == v[], d * NBYD + r, NBYD * D)",
        lambda g: (lambda s: [s, s.amin()])(rn(g, 3, 4)),
        lambda s, v: _argmin_rows(s, v, 4),
        consts=lambda t: {"NBYD": t[0].shape[1], "D": t[0].shape[0]},
        grad="zero",
    ),
    Peer(
        "tc_argmin_first_below",
        TC + "python/examples/min_distance.py (argmin_1d(float(N) S, int32(D) MinIdx): min_idx min=! (MinIdx(r_d) <"
        " N) ? r_d : N; MinIdx as a float tensor holding integers, S read only for its size N)",
        "min_idx[] min= where(MinIdx[d] < N, d, N)",
        lambda g: [torch.tensor([12.0, 12.0, 6.0, 12.0, 1.0], dtype=torch.float64)],
        lambda idx: _first_below(idx, 12),
        consts={"N": 12},
        grad="zero",
    ),
    Peer(
        "tc_min_rows_batched",
        TC + "python/examples/min_distance.py (min_2d(float(K, D, NBYD) S): V2(k, d) min=! S(k, d, r_nbyd))",
        "V2[k,d] min= S[k,d,r]",
        lambda g: [rn(g, 2, 3, 4)],
        lambda s: s.amin(2),
    ),
    Peer(
        "tc_min_batched",
        TC + "python/examples/min_distance.py (min_1d(float(K, D) V2): V(k) min=! V2(k, r_d))",
        "V[k] min= V2[k,d]",
        lambda g: [rn(g, 2, 5)],
        lambda s: s.amin(1),
    ),
    Peer(
        "tc_argmin_rows_batched",
        TC + "python/examples/min_distance.py (argmin_2d(float(K, D, NBYD) S, float(K) V): MinIdx2(k, d) min=!"
        " (S(k, d, r_nbyd) == V(k)) ? d * NBYD + r_nbyd : NBYD * D)",
        "MinIdx2[k,d] min= where(S[k,d,r] == V[k], d * NBYD + r, NBYD * D)",
        lambda g: (lambda s: [s, s.amin((1, 2))])(rn(g, 2, 3, 4)),
        lambda s, v: torch.stack([_argmin_rows(s[k], v[k], 4) for k in range(2)]),
        consts=lambda t: {"NBYD": t[0].shape[2], "D": t[0].shape[1]},
        grad="zero",
    ),
    Peer(
        "tc_argmin_first_below_batched",
        TC + "python/examples/min_distance.py (argmin_1d(float(K, N) S, int32(K, D) MinIdx2): MinIdx(k) min=!"
        " (MinIdx2(k, r_d) < N) ? r_d : N)",
        "MinIdx[k] min= where(MinIdx2[k,d] < N, d, N)",
        lambda g: [torch.tensor([[12.0, 3.0, 12.0], [12.0, 12.0, 12.0]], dtype=torch.float64)],
        lambda idx: torch.stack([_first_below(idx[k], 12) for k in range(2)]),
        consts={"N": 12},
        grad="zero",
    ),
    # --- python/examples/tum.py (the pieces that read no index from data)
    Peer(
        "tc_tum_make_idx",
        TC + "python/examples/tum.py (make_idx: Idx(k) +=! (r_k < k) ? Segments(r_k) : 0 where k in 0:K+1; int32"
        " Segments as floats)",
        "Idx[k] += where(r < k, Segments[r], 0.0)",
        lambda g: [torch.randint(1, 5, (4,), generator=g).to(torch.float64)],
        lambda s: torch.cat([torch.zeros(1, dtype=s.dtype), s.cumsum(0)]),
        sizes=lambda t: {"k": t[0].shape[0] + 1, "r": t[0].shape[0]},
    ),
    Peer(
        "tc_tum_make_alpha",
        TC + "python/examples/tum.py (make_alpha, <pos_dist> = 1, <neg_dist> = 2; SegmentsMetaData, read only for its"
        " size MAX_L, dropped)",
        "Alpha[k,l1,l2] = where(l1 >= l2, 0.0,"
        " where(PD == 0 || abs(l1 - l2) <= PD, 1.0, where(ND == 0 && abs(l1 - l2) >= ND, -1.0, 0.0))"
        " * where(Idx[k] + l1 < Idx[k + 1] && Idx[k] + l2 < Idx[k + 1], 1.0, 0.0))",
        lambda g: [torch.tensor([0.0, 3.0, 4.0, 8.0], dtype=torch.float64)],
        lambda idx: _tum_alpha(idx, 5, 1, 2),
        consts={"PD": 1, "ND": 2},
        sizes=lambda t: {"k": t[0].shape[0] - 1, "l1": 5, "l2": 5},
        grad="zero",
    ),
    Peer(
        "tc_tum_make_counts",
        TC + "python/examples/tum.py (make_counts -> (PosCount, NegCount, tmpPos, tmpNeg); SegmentsMetaData dropped)",
        "tmpPos_[k,l1] += where(l1 >= r2, 0.0, where(Alpha[k,l1,r2] > 0.0, 1.0, 0.0))\n"
        "PosCount[k] += tmpPos_[k,l1]\n"
        "tmpNeg_[k,l1] += where(l1 >= r2, 0.0, where(Alpha[k,l1,r2] < 0.0, 1.0, 0.0))\n"
        "NegCount[k] += tmpNeg_[k,l1]\n"
        "tmpPos[k,l1] = tmpPos_[k,l1]\ntmpNeg[k,l1] = tmpNeg_[k,l1]",
        lambda g: [_tum_alpha_values(g, 2, 4)],
        lambda a: (
            ((a > 0).to(a.dtype) * _strictly_upper(4, a.dtype)).sum((1, 2)),
            ((a < 0).to(a.dtype) * _strictly_upper(4, a.dtype)).sum((1, 2)),
            ((a > 0).to(a.dtype) * _strictly_upper(4, a.dtype)).sum(2),
            ((a < 0).to(a.dtype) * _strictly_upper(4, a.dtype)).sum(2),
        ),
        sizes=lambda t: {"l1": t[0].shape[1], "r2": t[0].shape[2]},
        outputs=["PosCount", "NegCount", "tmpPos", "tmpNeg"],
        grad="zero",
    ),
    Peer(
        "tc_tum_make_beta",
        TC + "python/examples/tum.py (make_beta; SegmentsMetaData dropped)",
        "Beta[k,l1,l2] = where(l1 >= l2, 0.0, where(Alpha[k,l1,l2] == 1.0, 1.0 / PosCount[k],"
        " where(Alpha[k,l1,l2] == -1.0, -1.0 / NegCount[k], 0.0)))",
        lambda g: [_tum_alpha_values(g, 2, 4), pos(g, 2), pos(g, 2)],
        lambda a, pc, nc: (
            _strictly_upper(4, a.dtype)
            * torch.where(a == 1.0, 1.0 / pc[:, None, None], torch.where(a == -1.0, -1.0 / nc[:, None, None], 0.0 * a))
        ),
        sizes=lambda t: {"l1": t[0].shape[1], "l2": t[0].shape[2]},
        nograd=(0,),
    ),
    Peer(
        "tc_tum_normalize",
        TC + "python/examples/tum.py (normalize -> (NormData, Square))",
        "Square_[n] += Input[n,c] * Input[n,c]\n"
        "NormData[n,c] = Input[n,c] / sqrt(Square_[n] + 1e-12)\nSquare[n] = Square_[n]",
        lambda g: [rn(g, 3, 4)],
        lambda x: (x / torch.sqrt((x * x).sum(1, keepdim=True) + 1e-12), (x * x).sum(1)),
        outputs=["NormData", "Square"],
    ),
    Peer(
        "tc_tum_result",
        TC + "python/examples/tum.py (result -> (O, tmpO))",
        "tmpO_[k,l1] += where(l1 >= r2, 0.0, Dots[k,l1,r2] * Beta[k,l1,r2])\n"
        "O[k] += tmpO_[k,l1]\ntmpO[k,l1] = tmpO_[k,l1]",
        lambda g: [rn(g, 2, 4, 4), rn(g, 2, 4, 4)],
        lambda beta, dots: (
            (dots * beta * _strictly_upper(4, beta.dtype)).sum((1, 2)),
            (dots * beta * _strictly_upper(4, beta.dtype)).sum(2),
        ),
        sizes=lambda t: {"l1": t[0].shape[1], "r2": t[0].shape[2]},
        inputs=["Beta", "Dots"],
        outputs=["O", "tmpO"],
    ),
    # --- tc/benchmarks/wavenet.h
    Peer(
        "tc_wavenet1",
        TC + "tc/benchmarks/wavenet.h (wavenet1 -> (FilterOut, GateOut, NonLin, Res, Skip); the Dilation tensor,"
        " read only for its size DILATION_FACTOR, is the constant DIL)",
        "FA[b,dc,rf] += Data[b,rc,rf] * FilterWeight[dc,rc,1]"
        " + where(rf - DIL >= 0, Data[b,rc,rf - DIL] * FilterWeight[dc,rc,0], 0.0)\n"
        "FilterOut_[b,dc,rf] = FilterBias[dc] + FA[b,dc,rf]\n"
        "GA[b,dc,rf] += Data[b,rc,rf] * GateWeight[dc,rc,1]"
        " + where(rf - DIL >= 0, Data[b,rc,rf - DIL] * GateWeight[dc,rc,0], 0.0)\n"
        "GateOut_[b,dc,rf] = GateBias[dc] + GA[b,dc,rf]\n"
        "NonLin_[b,dc,rf] = tanh(FilterOut_[b,dc,rf]) * (1 / (1 + exp(-GateOut_[b,dc,rf])))\n"
        "RA[b,rc,rf] += NonLin_[b,dc,rf] * ResWeight[rc,dc]\n"
        "Res[b,rc,rf] = Data[b,rc,rf] + ResBias[rc] + RA[b,rc,rf]\n"
        "SA[b,s,rf] += NonLin_[b,dc,rf] * SkipWeight[s,dc]\n"
        "Skip[b,s,rf] = SA[b,s,rf] + SkipBias[s]\n"
        "FilterOut[b,dc,rf] = FilterOut_[b,dc,rf]\n"
        "GateOut[b,dc,rf] = GateOut_[b,dc,rf]\nNonLin[b,dc,rf] = NonLin_[b,dc,rf]",
        lambda g: [
            rn(g, 2, 3, 6),
            rn(g, 4, 3, 2),
            rn(g, 4),
            rn(g, 4, 3, 2),
            rn(g, 4),
            rn(g, 3, 4),
            rn(g, 3),
            rn(g, 2, 4),
            rn(g, 2),
        ],
        lambda *t: _wavenet(*t, dil=2),
        consts={"DIL": 2},
        inputs=[
            "Data",
            "FilterWeight",
            "FilterBias",
            "GateWeight",
            "GateBias",
            "ResWeight",
            "ResBias",
            "SkipWeight",
            "SkipBias",
        ],
        outputs=["FilterOut", "GateOut", "NonLin", "Res", "Skip"],
    ),
]

# ---------------------------------------------------------------- TVM

TVM = "TVM tests/python/unittest/test_te_autodiff.py::"
TVM_NEW = "TVM tests/python/unittest/test_te_autodiff.py (b59f80a)::"
TVM_OLD = "TVM tests/python/unittest/test_te_autodiff.py (29f1a80)::"


def _basic(name, what, text, make, ref, **kw):
    return Peer(name, TVM + f"test_basic_operation ({what})", text, make, ref, **kw)


def _sq(g):
    return [rn(g, 5, 5)]


def _sum_min_index(a):
    n = a.shape[0]
    out = torch.zeros(n, n, dtype=a.dtype)
    for i in range(n):
        for j in range(n):
            out[i, j] = sum(a[k, k] - a[min(j + k, n - 1), j] * a[i, k] for k in range(n))
    return out


def _signed(g, lo, hi, *shape):
    """Values with lo <= |x| <= hi and random sign."""
    return ru(g, lo, hi, *shape) * torch.where(torch.rand(*shape, generator=g) < 0.5, -1.0, 1.0).to(torch.float64)


PAD1_X = _pad_guard("p", "q", "r", "s", 1, "HH", "WW")
PAD1_U = _pad_guard("y", "z", "u", "v", 1, "HH", "WW")

RESCONV = (
    f"T[n,k,p,q] += where({PAD1_X}, X[n,c,p+r-1,q+s-1], 0.0) * W[k,c,r,s]\n"
    "U[n,k,p,q] = X[n,k,p,q] + T[n,k,p,q]\n"
    f"V[n,k,y,z] += where({PAD1_U}, U[n,c,y+u-1,z+v-1], 0.0) * W[k,c,u,v]\n"
    "R_[n,k,y,z] = X[n,k,y,z] + V[n,k,y,z]\n"
)
RESHAPE_R = "R_[a, j / 25, j / 5 % 5, j % 5]"
RESCONV_SIZES = {"p": 5, "q": 5, "y": 5, "z": 5, "j": 50}


def _resconv(x, w):
    return x + F.conv2d(x + F.conv2d(x, w, padding=1), w, padding=1)


def _resconv_make(g):
    return [rn(g, 1, 2, 5, 5), rn(g, 2, 2, 3, 3)]


TVM_PEERS = [
    _basic("tvm_identity", "B = A0[i, j]", "B[i,j] = A0[i,j]", _sq, lambda a: a.clone()),
    _basic(
        "tvm_add",
        "B = A0[i, j] + A1[i, j]",
        "B[i,j] = A0[i,j] + A1[i,j]",
        lambda g: [rn(g, 5, 5), rn(g, 5, 5)],
        torch.add,
    ),
    _basic("tvm_add_transposed", "A0[i, j] + A0[j, i]", "B[i,j] = A0[i,j] + A0[j,i]", _sq, lambda a: a + a.T),
    _basic(
        "tvm_floor",
        "te.floor(A0[i, j]), desired gradient zeros; floor(x) = x - x % 1.0",
        "B[i,j] = A0[i,j] - A0[i,j] % 1.0",
        lambda g: [ru(g, -10, 10, 5, 5)],
        torch.floor,
    ),
    _basic(
        "tvm_ceil",
        "te.ceil(A0[i, j]), desired gradient zeros; ceil(x) = x + (-x) % 1.0",
        "B[i,j] = A0[i,j] + (-A0[i,j]) % 1.0",
        lambda g: [ru(g, -10, 10, 5, 5)],
        torch.ceil,
    ),
    _basic(
        "tvm_trunc",
        "te.trunc(A0[i, j]), desired gradient zeros",
        "B[i,j] = where(A0[i,j] >= 0.0, A0[i,j] - A0[i,j] % 1.0, A0[i,j] + (-A0[i,j]) % 1.0)",
        lambda g: [ru(g, -10, 10, 5, 5)],
        torch.trunc,
    ),
    _basic(
        "tvm_round",
        "te.round(A0[i, j]), half away from zero, desired gradient zeros",
        "B[i,j] = where(A0[i,j] >= 0.0, A0[i,j] + 0.5 - (A0[i,j] + 0.5) % 1.0, A0[i,j] - 0.5 + (0.5 - A0[i,j]) % 1.0)",
        lambda g: [ru(g, -10, 10, 5, 5)],
        lambda a: torch.sign(a) * torch.floor(a.abs() + 0.5),
    ),
    _basic(
        "tvm_exp", "A0[i, j] + te.exp(A0[j, i])", "B[i,j] = A0[i,j] + exp(A0[j,i])", _sq, lambda a: a + torch.exp(a.T)
    ),
    _basic(
        "tvm_log_abs",
        "te.log(0.1 + te.abs(A0[i, j] + te.exp(A0[j, i])))",
        "B[i,j] = log(0.1 + abs(A0[i,j] + exp(A0[j,i])))",
        _sq,
        lambda a: torch.log(0.1 + torch.abs(a + torch.exp(a.T))),
    ),
    _basic(
        "tvm_sigmoid",
        "te.sigmoid(A0[i, j] * A0[i, j] * A0[j, i])",
        "B[i,j] = sigmoid(A0[i,j] * A0[i,j] * A0[j,i])",
        _sq,
        lambda a: torch.sigmoid(a * a * a.T),
    ),
    _basic(
        "tvm_tanh",
        "te.tanh(A0[i, j] * A0[i, j] * A0[j, i])",
        "B[i,j] = tanh(A0[i,j] * A0[i,j] * A0[j,i])",
        _sq,
        lambda a: torch.tanh(a * a * a.T),
    ),
    _basic(
        "tvm_sqrt",
        "te.sqrt(A0[i, j] * A0[i, j] * A0[j, i]), data in (0.1, 10)",
        "B[i,j] = sqrt(A0[i,j] * A0[i,j] * A0[j,i])",
        lambda g: [ru(g, 0.1, 10, 5, 5)],
        lambda a: torch.sqrt(a * a * a.T),
    ),
    _basic(
        "tvm_pow_abs",
        "te.power(te.abs(A0[i, j]), A0[j, i]), data in (-4, 4), kept away from 0",
        "B[i,j] = pow(abs(A0[i,j]), A0[j,i])",
        lambda g: [_signed(g, 0.5, 3.0, 5, 5)],
        lambda a: torch.pow(a.abs(), a.T),
    ),
    _basic("tvm_mul_transposed", "A0[i, j] * A0[j, i]", "B[i,j] = A0[i,j] * A0[j,i]", _sq, lambda a: a * a.T),
    Peer(
        "tvm_sum_ik_ki",
        TVM + "test_basic_operation (te.sum(A0[i, k] * A0[k, i], axis=k)); test_reduction_init (the same with"
        " init=0.0, xfail in TVM)",
        "B[i] += A0[i,k] * A0[k,i]",
        _sq,
        lambda a: (a * a.T).sum(1),
    ),
    _basic(
        "tvm_sum_plus_5_broadcast",
        "B(i, j) = te.sum(A0[i, k] * A0[k, i] + 5, axis=k), j unused",
        "B[i,j] += A0[i,k] * A0[k,i] + 5",
        _sq,
        lambda a: ((a * a.T).sum(1) + 25)[:, None].expand(5, 5).clone(),
        sizes={"j": 5},
    ),
    _basic(
        "tvm_max_plus",
        "te.max(A0[i, k] * A0[k, j] + 5, axis=k)",
        "B[i,j] max= A0[i,k] * A0[k,j] + 5",
        _sq,
        lambda a: (a[:, :, None] * a[None, :, :]).amax(1) + 5,
    ),
    _basic(
        "tvm_mul_add_two_inputs",
        "A0[i, j] * (A1[j, i] + A0[j, i])",
        "B[i,j] = A0[i,j] * (A1[j,i] + A0[j,i])",
        lambda g: [rn(g, 5, 5), rn(g, 5, 5)],
        lambda a, b: a * (b.T + a.T),
    ),
    _basic(
        "tvm_sum_min_index",
        "te.sum(A0[k, k] - A0[te.min(j + k, 9), j] * A0[i, k], axis=k), on 5 x 5 with 4 for 9",
        "B[i,j] += A0[k,k] - A0[min(j + k, N1), j] * A0[i,k]",
        _sq,
        _sum_min_index,
        consts=lambda t: {"N1": t[0].shape[0] - 1},
    ),
    _basic(
        "tvm_prod_reducer",
        "te.comm_reducer product: prod(A0[i, k] + A0[k, i], axis=k), j unused",
        "B[i,j] *= A0[i,k] + A0[k,i]",
        _sq,
        lambda a: (a + a.T).prod(1)[:, None].expand(5, 5).clone(),
        sizes={"j": 5},
    ),
    _basic(
        "tvm_tensordot_mirror",
        "A = X[i] + X[9 - i]; B = X[i] * X[9 - i]; topi.tensordot(A, B, 1)",
        "A[i] = X[i] + X[N1 - i]\nB[i] = X[i] * X[N1 - i]\nY[] += A[i] * B[i]",
        lambda g: [rn(g, 10)],
        lambda x: ((x + x.flip(0)) * (x * x.flip(0))).sum(),
        consts={"N1": 9},
    ),
    Peer(
        "tvm_einsum_diagonal",
        TVM_NEW + "test_basic_operation (topi.einsum('ii->i', X))",
        "Y[i] = X[i,i]",
        lambda g: [rn(g, 3, 3)],
        lambda x: torch.diagonal(x).clone(),
    ),
    # --- test_topi
    Peer(
        "tvm_conv2d_pad1",
        TVM + "test_topi (topi.nn.conv2d(X, W, 1, 1, 1))",
        f"R[n,k,p,q] += where({PAD1_X}, X[n,c,p+r-1,q+s-1], 0.0) * W[k,c,r,s]",
        lambda g: [rn(g, 1, 2, 4, 4), rn(g, 5, 2, 3, 3)],
        lambda x, w: F.conv2d(x, w, padding=1),
        consts={"HH": 4, "WW": 4},
        sizes={"p": 4, "q": 4},
    ),
    Peer(
        "tvm_conv2d_relu_conv2d",
        TVM + "test_topi (topi.nn.conv2d(topi.nn.relu(conv2d(X, W, 1, 1, 1)), W1, 1, 0, 1))",
        f"R[n,k,p,q] += where({PAD1_X}, X[n,c,p+r-1,q+s-1], 0.0) * W[k,c,r,s]\n"
        "R1[n,f,y,z] += relu(R[n,k,y+u,z+v]) * W1[f,k,u,v]",
        lambda g: [rn(g, 1, 2, 4, 4), rn(g, 5, 2, 3, 3), rn(g, 2, 5, 3, 3)],
        lambda x, w, w1: F.conv2d(torch.relu(F.conv2d(x, w, padding=1)), w1),
        consts={"HH": 4, "WW": 4},
        sizes={"p": 4, "q": 4},
    ),
    Peer(
        "tvm_broadcast_to",
        TVM + "test_topi (topi.broadcast_to(W2, (5, 2, 3, 3)))",
        "R[a,b,c,d] = W2[0]",
        lambda g: [rn(g, 1)],
        lambda w2: w2.expand(5, 2, 3, 3).clone(),
        sizes={"a": 5, "b": 2, "c": 3, "d": 3},
    ),
    Peer(
        "tvm_conv2d_broadcast_weight",
        TVM + "test_topi (topi.nn.conv2d(X, topi.broadcast_to(W2, (5, 2, 3, 3)), 1, 1, 1))",
        f"R[n,k,p,q] += where({PAD1_X}, X[n,c,p+r-1,q+s-1], 0.0) * W2[0]",
        lambda g: [rn(g, 1, 2, 4, 4), rn(g, 1)],
        lambda x, w2: F.conv2d(x, w2.expand(5, 2, 3, 3), padding=1),
        consts={"HH": 4, "WW": 4},
        sizes={"k": 5, "r": 3, "s": 3, "p": 4, "q": 4},
    ),
    Peer(
        "tvm_avg_pool_2x2_stride2",
        TVM_OLD + "test_topi (topi.nn.pool(X, [2, 2], [2, 2], [0, 0, 0, 0], 'avg'))",
        "R[n,c,p,q] += X[n,c,p*2+r,q*2+s] / 4",
        lambda g: [rn(g, 1, 2, 4, 4)],
        lambda x: F.avg_pool2d(x, 2),
        sizes={"r": 2, "s": 2},
    ),
    Peer(
        "tvm_max_pool_2x2_stride2",
        TVM_OLD + "test_topi (topi.nn.pool(X, [2, 2], [2, 2], [0, 0, 0, 0], 'max'))",
        "R[n,c,p,q] max= X[n,c,p*2+r,q*2+s]",
        lambda g: [rn(g, 1, 2, 4, 4)],
        lambda x: F.max_pool2d(x, 2),
        sizes={"r": 2, "s": 2},
    ),
    Peer(
        "tvm_avg_pool_2x2_dilation2",
        TVM_NEW + "test_topi (topi.nn.pool2d(X, [2, 2], [1, 1], [2, 2], [0, 0, 0, 0], 'avg'))",
        "R[n,c,p,q] += X[n,c,p+2*r,q+2*s] / 4",
        lambda g: [rn(g, 1, 2, 4, 4)],
        lambda x: F.unfold(x, 2, dilation=2).view(1, 2, 4, 2, 2).mean(2),
        sizes={"r": 2, "s": 2},
    ),
    Peer(
        "tvm_max_pool_2x2_dilation2",
        TVM_NEW + "test_topi (topi.nn.pool2d(X, [2, 2], [1, 1], [2, 2], [0, 0, 0, 0], 'max'))",
        "R[n,c,p,q] max= X[n,c,p+2*r,q+2*s]",
        lambda g: [rn(g, 1, 2, 4, 4)],
        lambda x: F.max_pool2d(x, 2, stride=1, dilation=2),
        sizes={"r": 2, "s": 2},
    ),
    Peer(
        "tvm_reshape_prefix",
        TVM + "test_topi (topi.reshape(X (1, 2, 5, 5), (1, 32)): reads the first 32 of 50 elements)",
        "R[a,j] = X[a, j / 25, j / 5 % 5, j % 5]",
        lambda g: [rn(g, 1, 2, 5, 5)],
        lambda x: x.reshape(-1)[:32].reshape(1, 32).clone(),
        sizes={"j": 32},
    ),
    Peer(
        "tvm_reshape",
        TVM + "test_topi (topi.reshape(X (1, 2, 5, 5), (1, 50)))",
        "S[a,j] = X[a, j / 25, j / 5 % 5, j % 5]",
        lambda g: [rn(g, 1, 2, 5, 5)],
        lambda x: x.reshape(1, 50).clone(),
        sizes={"j": 50},
    ),
    Peer(
        "tvm_residual_conv2d",
        TVM + "test_topi (X + conv2d(X + conv2d(X, W, 1, 1, 1), W, 1, 1, 1))",
        RESCONV + "R[n,k,y,z] = R_[n,k,y,z]",
        _resconv_make,
        _resconv,
        consts={"HH": 5, "WW": 5},
        sizes={"p": 5, "q": 5, "y": 5, "z": 5},
    ),
    Peer(
        "tvm_residual_conv2d_softmax",
        TVM + "test_topi (topi.nn.softmax(topi.reshape(R, (1, 50))), R the residual convolution)",
        RESCONV + f"S0[a,j] = {RESHAPE_R}\nM[a] max= S0[a,j]\n"
        f"E[a,j] = exp(S0[a,j] - M[a])\nZ[a] += E[a,j]\nS[a,j] = E[a,j] / Z[a]",
        _resconv_make,
        lambda x, w: torch.softmax(_resconv(x, w).reshape(1, 50), 1),
        consts={"HH": 5, "WW": 5},
        sizes=RESCONV_SIZES,
    ),
    Peer(
        "tvm_residual_conv2d_sigmoid",
        TVM + "test_topi (topi.sigmoid(topi.reshape(R, (1, 50))))",
        RESCONV + f"S[a,j] = sigmoid({RESHAPE_R})",
        _resconv_make,
        lambda x, w: torch.sigmoid(_resconv(x, w).reshape(1, 50)),
        consts={"HH": 5, "WW": 5},
        sizes=RESCONV_SIZES | {"a": 1},
    ),
    Peer(
        "tvm_residual_conv2d_tanh",
        TVM + "test_topi (topi.tanh(topi.reshape(R, (1, 50))))",
        RESCONV + f"S[a,j] = tanh({RESHAPE_R})",
        _resconv_make,
        lambda x, w: torch.tanh(_resconv(x, w).reshape(1, 50)),
        consts={"HH": 5, "WW": 5},
        sizes=RESCONV_SIZES | {"a": 1},
    ),
    Peer(
        "tvm_residual_conv2d_log_softmax",
        TVM + "test_topi (topi.nn.log_softmax(topi.reshape(R, (1, 50))), gradient to X and W)",
        RESCONV
        + f"S0[a,j] = {RESHAPE_R}\nM[a] max= S0[a,j]\nZ[a] += exp(S0[a,j] - M[a])\nS[a,j] = S0[a,j] - M[a] - log(Z[a])",
        _resconv_make,
        lambda x, w: torch.log_softmax(_resconv(x, w).reshape(1, 50), 1),
        consts={"HH": 5, "WW": 5},
        sizes=RESCONV_SIZES,
    ),
    Peer(
        "tvm_residual_conv2d_log_softmax_wrt_w",
        TVM + "test_topi (check_grad(S, [W], [X]): the log_softmax op differentiated for W alone, X an argument)",
        RESCONV
        + f"S0[a,j] = {RESHAPE_R}\nM[a] max= S0[a,j]\nZ[a] += exp(S0[a,j] - M[a])\nS[a,j] = S0[a,j] - M[a] - log(Z[a])",
        _resconv_make,
        lambda x, w: torch.log_softmax(_resconv(x, w).reshape(1, 50), 1),
        consts={"HH": 5, "WW": 5},
        sizes=RESCONV_SIZES,
        nograd=(0,),
    ),
    Peer(
        "tvm_concatenate",
        TVM + "test_topi (topi.concatenate((X (1, 2, 3, 5), Y (1, 2, 7, 5)), 2))",
        "S[n,c,h,w] = where(h < HX, X[n,c,h,w], Y[n,c,h - HX,w])",
        lambda g: [rn(g, 1, 2, 3, 5), rn(g, 1, 2, 7, 5)],
        lambda x, y: torch.cat([x, y], 2),
        consts={"HX": 3},
        sizes={"h": 10},
    ),
    Peer(
        "tvm_split",
        TVM + "test_topi ((S, R) = topi.split(X (1, 2, 6, 5), 2, 2), each checked)",
        "S[n,c,h,w] = X[n,c,h,w]\nR[n,c,h,w] = X[n,c,h + 3,w]",
        lambda g: [rn(g, 1, 2, 6, 5)],
        lambda x: (x[:, :, :3].clone(), x[:, :, 3:].clone()),
        sizes={"h": 3},
    ),
    Peer(
        "tvm_split_concatenate",
        TVM + "test_topi (topi.concatenate((S, R), 2) of the split)",
        "S[n,c,t,w] = X[n,c,t,w]\nR[n,c,t,w] = X[n,c,t + 3,w]\nY[n,c,h,w] = where(h < 3, S[n,c,h,w], R[n,c,h - 3,w])",
        lambda g: [rn(g, 1, 2, 6, 5)],
        lambda x: x.clone(),
        sizes={"t": 3, "h": 6},
    ),
    Peer(
        "tvm_split_concatenate_swapped",
        TVM + "test_topi (topi.concatenate((R, S), 2) of the split)",
        "S[n,c,t,w] = X[n,c,t,w]\nR[n,c,t,w] = X[n,c,t + 3,w]\nY[n,c,h,w] = where(h < 3, R[n,c,h,w], S[n,c,h - 3,w])",
        lambda g: [rn(g, 1, 2, 6, 5)],
        lambda x: torch.cat([x[:, :, 3:], x[:, :, :3]], 2),
        sizes={"t": 3, "h": 6},
    ),
    Peer(
        "tvm_dense_exp_normalize",
        TVM + "test_topi (exps = topi.exp(topi.nn.dense(X, W)); exps / topi.sum(exps, axis=-1, keepdims=True), data"
        " in (-1, 1))",
        "D[b,o] += X[b,i] * W[o,i]\nE[b,o] = exp(D[b,o])\nS[b] += E[b,o]\nR[b,o] = E[b,o] / S[b]",
        lambda g: [ru(g, -1, 1, 4, 5), ru(g, -1, 1, 5, 5)],
        lambda x, w: torch.softmax(x @ w.T, 1),
    ),
]

# test_stride_dilation: topi.nn.conv2d(X (1, 2, 10, 10), W (2, 2, k, k), stride, 0, dilation) for every k, stride
# and dilation in 1..3; test_stable differentiates the 1 x 1 stride-2 one on large shapes.
for _k in (1, 2, 3):
    for _s in (1, 2, 3):
        for _d in (1, 2, 3):
            TVM_PEERS.append(
                Peer(
                    f"tvm_conv2d_k{_k}_s{_s}_d{_d}",
                    TVM
                    + f"test_stride_dilation (topi.nn.conv2d(X, W {_k}x{_k}, {_s}, 0, {_d}))"
                    + (
                        "; " + TVM_OLD + "test_stable (1 x 1, stride 2, on (32, 512, 16, 16))"
                        if (_k, _s, _d) == (1, 2, 1)
                        else ""
                    ),
                    "Y[n,f,p,q] += X[n,c,p*S+r*D,q*S+t*D] * W[f,c,r,t]",
                    lambda g, k=_k: [rn(g, 1, 2, 10, 10), rn(g, 2, 2, k, k)],
                    lambda x, w, s=_s, d=_d: F.conv2d(x, w, stride=s, dilation=d),
                    consts={"S": _s, "D": _d},
                )
            )
# test_stride_dilation's max pools: topi.nn.pool(X, [k, k], [s, s], ...) in 29f1a80, and
# topi.nn.pool2d(X, [k, k], [1, 1], [d, d], ...) (stride 1, dilation d) in b59f80a.
for _k in (1, 2, 3):
    for _s in (1, 2, 3):
        TVM_PEERS.append(
            Peer(
                f"tvm_max_pool_k{_k}_s{_s}",
                TVM_OLD + f"test_stride_dilation (topi.nn.pool(X, [{_k}, {_k}], [{_s}, {_s}], [0, 0, 0, 0], 'max'))",
                "Y[n,c,p,q] max= X[n,c,p*S+r,q*S+t]",
                lambda g: [rn(g, 1, 2, 10, 10)],
                lambda x, k=_k, s=_s: F.max_pool2d(x, k, stride=s),
                consts={"S": _s},
                sizes={"r": _k, "t": _k},
            )
        )
for _k in (1, 2, 3):
    for _d in (1, 2, 3):
        TVM_PEERS.append(
            Peer(
                f"tvm_max_pool_k{_k}_d{_d}",
                TVM_NEW
                + f"test_stride_dilation (topi.nn.pool2d(X, [{_k}, {_k}], [1, 1], [{_d}, {_d}], [0, 0, 0, 0], 'max'))",
                "Y[n,c,p,q] max= X[n,c,p+r*D,q+t*D]",
                lambda g: [rn(g, 1, 2, 10, 10)],
                lambda x, k=_k, d=_d: F.max_pool2d(x, k, stride=1, dilation=d),
                consts={"D": _d},
                sizes={"r": _k, "t": _k},
            )
        )

PEERS = TC_PEERS + TVM_PEERS

# ------------------------------------------------------- not expressible

GATHER = (
    "reads a tensor at an index taken from tensor data (a gather); neoflow indices are integer expressions of"
    " index variables and constants: 'index expression of B must be an integer expression, got a value'"
)
NO_INPUT = (
    "has no input tensor: 'an op needs at least one input tensor: neoflow takes the"
    " dtype, device and shapes from its inputs'"
)
INT_DTYPE = "integer tensors: neoflow computes on float32/float64 (and float16/bfloat16 on CUDA) only"
NONZERO_MIN = (
    "its point is an output range with a non-zero minimum (a Halide buffer offset), which neoflow does not have:"
    " every range starts at 0; the buffer contents are a plain copy, covered by tc_copy_1d"
)

NOT_EXPRESSIBLE = [
    # Tensor Comprehensions
    ("tc_lut_gather", TC + "docs/source/inference.rst (lut: A(i) = B(C(i)))", GATHER),
    ("tc_lut_clamped", TC + "docs/source/inference.rst (lut: A(i) = B(max(min(C(i), J-1), 0)))", GATHER),
    (
        "tc_subsample_dynamic_stride",
        TC + "docs/source/inference.rst (subsample_2(float(I) B, int(1) S): B(S(0)*i))",
        GATHER + "; with the stride as a constant it is tc_subsample_2",
    ),
    (
        "tc_indexing",
        TC_DB
        + "(indexing: Input(Index(l), w)); "
        + TC
        + "test/cuda/test_compile_and_run.cc (indexing); "
        + TC_OLD
        + "test_indexing.py",
        GATHER,
    ),
    (
        "tc_lookup_table",
        TC_DB + "(lookup_table: LUT(I(b, n), r_r)); " + TC + "tc/library/lut.h, 2lut.h;"
        " tc/benchmarks/MLP_model.cc (_1LUT, _2LUT); test/cuda/test_tc_mapper.cc (fun: LUT(I(b, n), r_r)); "
        + TC_OLD
        + "test_lookup_table.py",
        GATHER,
    ),
    (
        "tc_dper_lut_concat",
        TC + "tc/library/dper_lut_concat.h (a fully connected layer and two LUT gathers)",
        GATHER + "; its fully connected part is tc_fully_connected",
    ),
    (
        "tc_shifted_lut",
        TC + "test/test_cuda_mapper.cc (shiftedLut: LUT(I(i, k) + 1, j), LUT(1 + j + I(i, k), j))",
        GATHER,
    ),
    (
        "tc_perforated_convolution",
        TC + "test/test_cuda_mapper.cc (perforatedConvolution: input(n, c, index(n, l) + kh, ...))",
        GATHER,
    ),
    ("tc_caffe2_gather", TC + "test/caffe2/cuda/test_caffe2.cc (fun: Z(i, j) = X(I(i, j)))", GATHER),
    (
        "tc_indirect_reductions",
        TC + "test/test_lang.cc (indirect: O +=! A(int32(B(i))); maxeq: O max=! A(int32(B(i))))",
        GATHER,
    ),
    (
        "tc_min_distance_codes",
        TC + "python/examples/min_distance.py (mindis, reduce_codes, in both versions: L(r_m, int32(Codes(n, r_m))))",
        GATHER + "; its min and argmin pieces are tc_min_* and tc_argmin_*",
    ),
    ("tc_tum_dots", TC + "python/examples/tum.py (dots: NormData(Idx(k) + max_l_1, r_c))", GATHER),
    (
        "tc_blockdiagperm",
        TC + "tc/examples/blockdiagperm.cc (blockdiagperm2d: O1(b, Idxr(k, nbyk), ...);"
        " blockdiagperm2dinlined: a left-hand side indexed by data; blockdiagperm2dfissioned_2: I(b, Idx(n)))",
        GATHER + "; a left-hand side must list plain index variables; the matmul part is tc_blockdiag_matmul",
    ),
    (
        "tc_cast",
        TC_DB
        + "(cast: int32(A(m, n) + {constant})); "
        + TC
        + "test/cuda/test_compile_and_run.cc (cast); "
        + TC_OLD
        + "test_cast.py",
        INT_DTYPE + "; and there is no conversion function: 'unknown function int'",
    ),
    (
        "tc_format_int_cast",
        TC + "test/test_lang.cc (testTcFormat: exp(X(b, ii, k)) * int(Y(b, k, j)))",
        "truncation to an integer has no function: 'unknown function int'",
    ),
    (
        "tc_nextafter",
        TC + "test/test_cuda_mapper.cc (fun: nextafter(C(n0), exp(A(n0, n1))) + log(B(n1, n0)))",
        "no nextafter function: 'unknown function nextafter'",
    ),
    (
        "tc_local_sparse_convolution",
        TC + "test/test_cuda_mapper.cc (local_sparse_convolution: I(n, kc % c, ...) where c in 1:C)",
        "modulo by an index variable: 'divisor of % in an index expression must be a positive integer constant, got c'",
    ),
    ("tc_zero_fill", TC + "test/test_cuda_mapper.cc (fun() -> (O) { O = 0 })", NO_INPUT),
    (
        "tc_zero_fill_unread_input",
        TC + "test/test_cuda_mapper.cc (f(float(N) I) -> (a) { a = 0 })",
        "reads none of its inputs: neoflow's inputs are the tensors an op reads"
        " ('input I is never read'), and with none"
        " left " + NO_INPUT,
    ),
    ("tc_corner_constant_fill", TC + "test/cuda/test_corner_cases.cc (E5: b(i) = 4 where i in 0:10)", NO_INPUT),
    (
        "tc_corner_unread_input",
        TC + "test/cuda/test_corner_cases.cc (E7: f(float a, float c) -> (b) { b(i) = a where i in 0:10 })",
        "declares an input it never reads: 'input c is never read'; without c it is tc_broadcast_scalar",
    ),
    (
        "tc_corner_int_scalars",
        TC + "test/cuda/test_corner_cases.cc (E8, E9, E10: int32 a; E26: int32(a % b))",
        INT_DTYPE,
    ),
    (
        "tc_corner_fractional_index",
        TC + "test/cuda/test_corner_cases.cc (E11: a(i + .5), a TC error test)",
        "an index must be an integer: 'index expression of a must be an integer expression, got a value: i + 0.5'",
    ),
    (
        "tc_corner_range_from_data",
        TC + "test/cuda/test_corner_cases.cc (E12, E13: where j in 0:a with a an int32 input)",
        "a range read from tensor data; neoflow's ranges come from shapes and sizes=",
    ),
    (
        "tc_corner_out_of_bounds",
        TC + "test/cuda/test_corner_cases.cc (E14, disabled: c(i) += b(i + j) where j in 0:(N*N), i in 0:10)",
        "reads out of bounds; neoflow proves every access: 'access b[i + j] may be out of bounds'",
    ),
    (
        "tc_corner_syntax_errors",
        TC + "test/cuda/test_corner_cases.cc (E1: def f{} {}; E19: foo in 1:2 on a"
        " non-index; E25: a rank mismatch at the call)",
        "not operators: TC error tests of the parser and the call",
    ),
    (
        "tc_inference_transpose5d",
        TC + "test/test_inference.cc (Transpose5D: O(i, j, k, l, m) = I(j, i, k, i, l), TC rejects it)",
        "m has no range: 'cannot infer the range of index m (it appears in no tensor access on the right-hand side)'",
    ),
    (
        "tc_inference_shift",
        TC + "test/test_inference.cc (Shift1D: O(i) = I(i - 1), min 1; Shift1D2: O(i) = I(i + 5), min -5)",
        NONZERO_MIN,
    ),
    (
        "tc_inference_tcb",
        TC + "test/test_inference.cc (TCB: O(i) +=! A(i + j, i + j, i + j), TC rejects it)",
        "no range can be inferred: 'cannot infer the range of index i (it appears only in guarded or composite"
        " accesses); pass its size explicitly' (with sizes= for i and j it is a plain diagonal sum)",
    ),
    (
        "tc_inference_ambiguous_rotate",
        TC + "test/test_inference.cc (AmbiguousRotate: O(i, j) = I(10 + i - j, i + j), TC rejects it)",
        "no range can be inferred: 'cannot infer the range of index i'; with i's range given it is tc_inference_rotate",
    ),
    (
        "tc_inference_no_inputs",
        TC + "test/test_inference.cc (PartialAssignWithoutWhere, PartialAssignWithWhere,"
        " EmptySetWhere: O(i, j) = 3 [where i in 4:8, j in 3:20])",
        NO_INPUT,
    ),
    (
        "tc_inference_indirect_where",
        TC + "test/test_inference.cc (DISABLED_IndirectWhere, IllegalIndirectWhere: where i in 0:size(0))",
        "ranges read from tensor data; neoflow's ranges come from shapes and sizes=",
    ),
    (
        "tc_lang_assign_with_free_index",
        TC + "test/test_lang.cc (O(i) = A(i, j), a TC sema error test)",
        "'index j appears only on the right-hand side of '=', which has no reduction axes'",
    ),
    (
        "tc_mutable_input",
        TC + "test/test_tc2halide.cc (MutableInput: A(i) = A(i) + 42, a TC error test)",
        "writes its input: 'statement writing A also reads it; use a new tensor name for the result'",
    ),
    (
        "tc_integer_types",
        TC + "test/test_tc2halide.cc and test/cuda/test_compile_and_run.cc (Types: bool, uint8 ..."
        " int64 inputs of B(k) +=! A(i) where k in 0:1)",
        INT_DTYPE + "; the float and double cases are tc_sum_to_one_element",
    ),
    (
        "tc_mlp_prod_model",
        TC + "tc/benchmarks/MLP_model.cc (commented-out prod_model and _3FCRELU)",
        "not TC: calls other TCs and a Concat the file says TC lacks, and reads an undefined O1; its layers are"
        " tc_3fcrelu and tc_matmul_transposed_b",
    ),
    (
        "tc_conv_elided",
        TC + "docs/source/coding_conventions.rst (conv, conv_bw with bodies written as '...')",
        "no body to translate; the convolution and its gradient are tc_conv2d and tc_conv2d_grad",
    ),
    # TVM
    ("tvm_take", TVM + "test_topi (topi.take(X, topi.abs(I)), I an int32 index tensor)", GATHER),
]

PEER_NAMES = [p.name for p in PEERS]
assert len(set(PEER_NAMES)) == len(PEER_NAMES), "duplicate peer names"
