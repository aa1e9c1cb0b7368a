"""Gradients derived by the Go core: gradcheck in float64 for every spine op
and the gradient issue's list, gradgradcheck (these with the fusion passes
on and off), custom-op registration, torch.compile, and the
autograd.Function form."""

import neoflow
import pytest
import torch
import torch.nn.functional as F
from ops_table import CASES, float_leaves

D = torch.float64


def _leaves(tensors):
    return float_leaves(tensors)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_gradcheck_spine_ops(case, fusion):
    tensors = _leaves(case.inputs("test", D))
    op = case.op(tensors)
    sizes = case.sizes(*tensors) if case.sizes else None
    assert torch.autograd.gradcheck(lambda *t: op(*t, sizes=sizes), tensors)


def _r(*shape):
    return torch.randn(*shape, dtype=D, requires_grad=True)


# (name, source, consts, sizes, inputs, PyTorch reference or None)
EXTRA = [
    (
        "conv2d_stride3",
        "Y[n,k,p,q] += X[n,c,p*3+r,q*3+s] * W[k,c,r,s]",
        {},
        None,
        lambda: [_r(1, 2, 10, 11), _r(3, 2, 3, 3)],
        lambda x, w: F.conv2d(x, w, stride=3),
    ),
    (
        "conv2d_dilation",
        "Y[n,k,p,q] += X[n,c,p+r*2,q+s*2] * W[k,c,r,s]",
        {},
        None,
        lambda: [_r(1, 2, 8, 9), _r(3, 2, 3, 3)],
        lambda x, w: F.conv2d(x, w, dilation=2),
    ),
    (
        "conv_transpose2d",
        "Y[n,k,h,w] += where((h-r) % 2 == 0 && (h-r)/2 >= 0 && (h-r)/2 < P && (w-s) % 2 == 0 && (w-s)/2 >= 0"
        " && (w-s)/2 < Q, X[n,c,(h-r)/2,(w-s)/2], 0.0) * W[c,k,r,s]",
        {"P": 4, "Q": 5},
        {"h": 9, "w": 11},
        lambda: [_r(1, 2, 4, 5), _r(2, 3, 3, 3)],
        lambda x, w: F.conv_transpose2d(x, w, stride=2),
    ),
    (
        "pixel_shuffle",
        "Y[n,c,h,w] = X[n, c*9 + (h%3)*3 + w%3, h/3, w/3]",
        {},
        None,
        lambda: [_r(1, 18, 2, 3)],
        lambda x: F.pixel_shuffle(x, 3),
    ),
    (
        "unfold_im2col",
        "Y[n,c,r,s,p,q] = X[n,c,p+r,q+s]",
        {},
        {"r": 2, "s": 3},
        lambda: [_r(2, 2, 5, 6)],
        lambda x: F.unfold(x, (2, 3)).view(2, 2, 2, 3, 4, 4),
    ),
    ("flip", "Y[i,j] = X[N-1-i, j]", {"N": 5}, None, lambda: [_r(5, 3)], lambda x: x.flip(0)),
    (
        "pad_where",
        "Y[i] = where(i >= 2 && i < N + 2, X[i-2], 0.0)",
        {"N": 5},
        {"i": 9},
        lambda: [_r(5)],
        lambda x: F.pad(x, (2, 2)),
    ),
    ("sum_several_axes", "Y[b] += X[b,i,j] * X[b,i,j]", {}, None, lambda: [_r(3, 4, 5)], lambda x: (x * x).sum((1, 2))),
    (
        "max_pool_overlapping",
        "Y[n,c,p,q] max= X[n,c,p*2+r,q*2+s]",
        {},
        {"r": 3, "s": 3},
        lambda: [_r(1, 2, 7, 9)],
        lambda x: F.max_pool2d(x, 3, 2),
    ),
    (
        "logsumexp",
        "M[b] max= X[b,j]\nS[b] += exp(X[b,j] - M[b])\nY[b] = log(S[b]) + M[b]",
        {},
        None,
        lambda: [_r(4, 7)],
        lambda x: torch.logsumexp(x, 1),
    ),
    (
        "product",
        "P[i] *= X[i,j]",
        {},
        None,
        lambda: [_r(3, 4)],
        lambda x: x.prod(1),
    ),
]

SUBLSTM = (
    "G[b,g] += W[g,k] * X[b,k]\n"
    "R[b,g] += Rw[g,k] * H[b,k]\n"
    "S[b,g] = sigmoid(G[b,g] + R[b,g] + Bias[g])\n"
    "C[b,u] = S[b,U+u] * Cp[b,u] + S[b,2*U+u] - S[b,u]\n"
    "Hn[b,u] = sigmoid(S[b,U+u] * Cp[b,u] + S[b,2*U+u] - S[b,u]) - S[b,3*U+u]"
)


def sublstm_ref(w, x, rw, h, bias, cp):
    s = torch.sigmoid(x @ w.T + h @ rw.T + bias)
    i, f, z, o = s.chunk(4, 1)
    c = f * cp + z - i
    return c, torch.sigmoid(c) - o


LLTM = (
    "GH[b,g] += Wh[g,k] * H[b,k]\n"
    "GX[b,g] += Wx[g,k] * X[b,k]\n"
    "G[b,g] = GH[b,g] + GX[b,g] + Bias[g]\n"
    "E[b,u] = where(G[b,2*U+u] > 0.0, G[b,2*U+u], exp(G[b,2*U+u]) - 1.0)\n"
    "NC[b,u] = Cold[b,u] + E[b,u] * sigmoid(G[b,u])\n"
    "NH[b,u] = tanh(Cold[b,u] + E[b,u] * sigmoid(G[b,u])) * sigmoid(G[b,U+u])"
)


def lltm_ref(wh, h, wx, x, bias, cold):
    g = h @ wh.T + x @ wx.T + bias
    i, o, c = g.chunk(3, 1)
    nc = cold + F.elu(c) * torch.sigmoid(i)
    return nc, torch.tanh(nc) * torch.sigmoid(o)


EXTRA += [
    (
        "sublstm_cell",
        SUBLSTM,
        {"U": 3},
        {"u": 3},  # the gates are read from column blocks of S: u covers one block
        lambda: [_r(12, 5), _r(2, 5), _r(12, 3), _r(2, 3), _r(12), _r(2, 3)],
        sublstm_ref,
    ),
    (
        "lltm_cell",
        LLTM,
        {"U": 3},
        {"u": 3},
        lambda: [_r(9, 3), _r(2, 3), _r(9, 4), _r(2, 4), _r(9), _r(2, 3)],
        lltm_ref,
    ),
]


@pytest.mark.parametrize("name,source,consts,sizes,make,ref", EXTRA, ids=[e[0] for e in EXTRA])
def test_gradcheck_extra_ops(name, source, consts, sizes, make, ref, fusion):
    tensors = make()
    op = neoflow.op(source, name=name, consts=consts)
    got = op(*tensors, sizes=sizes)
    want = ref(*tensors)
    for g, w in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
        torch.testing.assert_close(g, w)
    assert torch.autograd.gradcheck(lambda *t: op(*t, sizes=sizes), tensors)


GRADGRAD = ["matmul", "conv2d_stride_dilation", "softmax", "milstm_gate", "cell_outputs"]


@pytest.mark.parametrize("name", GRADGRAD)
def test_gradgradcheck(name, fusion):
    case = next(c for c in CASES if c.name == name)
    tensors = _leaves(case.inputs("test", D))
    op = case.op(tensors, name=name)
    sizes = case.sizes(*tensors) if case.sizes else None
    assert torch.autograd.gradgradcheck(lambda *t: op(*t, sizes=sizes), tensors)


def test_backward_fills_grads_and_skips_inputs_without_grad():
    op = neoflow.op("C[i,j] += A[i,k] * B[k,j]", name="matmul_wrt")
    a = torch.randn(3, 4, dtype=D, requires_grad=True)
    b = torch.randn(4, 5, dtype=D)  # requires_grad=False: no gradient kernel for it
    (op(a, b) * 2).sum().backward()
    torch.testing.assert_close(a.grad, 2 * torch.ones(3, 5, dtype=D) @ b.T)
    assert b.grad is None
    wrts = [wrt for (_, wrt, _) in op._grads]
    assert wrts == [(True, False)], wrts


def test_explain_prints_guards():
    op = neoflow.op("Y[n,k,p,q] += X[n,c,p*2+r,q*2+s] * W[k,c,r,s]", name="conv")
    x, w = torch.randn(1, 2, 9, 9, dtype=D), torch.randn(3, 2, 3, 3, dtype=D)
    text = op.explain_grad(x, w)
    assert "d_X[" in text and "d_W[" in text and "x2 / 2 - r_step >= 0" in text, text


def test_opcheck():
    for source, args in [
        ("C[i,j] += A[i,k] * B[k,j]", (torch.randn(3, 4), torch.randn(4, 5))),
        ("M[b] max= X[b,j]\nE[b,j] = exp(X[b,j] - M[b])\nS[b] += E[b,j]\nY[b,j] = E[b,j] / S[b]", (torch.randn(3, 6),)),
    ]:
        op = neoflow.op(source)
        result = torch.library.opcheck(op.custom_op, (list(args), ""))
        assert all(v == "SUCCESS" for v in result.values()), result


def test_torch_compile_fullgraph_matches_eager():
    mm = neoflow.op("C[i,j] += A[i,k] * B[k,j]", name="matmul")
    sm = neoflow.op("M[b] max= X[b,j]\nE[b,j] = exp(X[b,j] - M[b])\nS[b] += E[b,j]\nY[b,j] = E[b,j] / S[b]")

    def f(a, b):
        return (sm(mm(a, b)) * torch.arange(5.0)).sum()

    a, b = torch.randn(3, 4, requires_grad=True), torch.randn(4, 5, requires_grad=True)
    eager = f(a, b)
    ga = torch.autograd.grad(eager, (a, b))
    compiled = torch.compile(f, fullgraph=True)(a, b)
    gc = torch.autograd.grad(compiled, (a, b))
    torch.testing.assert_close(compiled, eager)
    for x, y in zip(gc, ga):
        torch.testing.assert_close(x, y)


def test_autograd_function_form():
    op = neoflow.op("Y[n,k,p,q] += X[n,c,p*2+r,q*2+s] * W[k,c,r,s]", name="conv")
    x, w = _r(1, 2, 7, 7), _r(3, 2, 3, 3)
    fn = op.function
    assert issubclass(fn, torch.autograd.Function)
    torch.testing.assert_close(fn.apply(None, x, w), F.conv2d(x, w, stride=2))
    assert torch.autograd.gradcheck(lambda x, w: fn.apply(None, x, w), (x, w))


MILSTM = next(c for c in CASES if c.name == "milstm_gate")


@pytest.mark.parametrize("form", ["call", "function"])
def test_backward_reads_saved_temporaries(form):
    tensors = _leaves(MILSTM.inputs("test", D))
    op = neoflow.op(MILSTM.source, name="milstm_saved")
    assert [n for n, _ in op.temporaries(*tensors)] == ["WX", "UH"]
    y = op(*tensors) if form == "call" else op.function.apply(None, *tensors)
    dy = torch.randn_like(y)
    got = torch.autograd.grad(y, tensors, dy)
    want = torch.autograd.grad(MILSTM.reference(*tensors), tensors, dy)
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w)
    # autograd ran the saving gradient op: it takes WX and UH and computes neither
    gop = op.grad_op(*tensors, saved=True)[0]
    assert gop.saved == ("WX", "UH") and gop.inputs[-2:] == ("WX", "UH")
    assert "recomputed forward statement" not in gop.explanation
    assert "recomputed forward statement" in op.grad_op(*tensors)[0].explanation
    assert [saved for (_, _, saved) in op._grads] == [True, False]


def test_output_modified_in_place():
    # the matmul gradient does not read C: changing C in place is fine
    op = neoflow.op("C[i,j] += A[i,k] * B[k,j]", name="matmul_inplace")
    a, b = _r(3, 4), _r(4, 5)
    c = op(a, b)
    c.mul_(2)
    c.sum().backward()
    torch.testing.assert_close(a.grad, 2 * torch.ones(3, 5, dtype=D) @ b.T.detach())
    # the max gradient reads the saved Y: autograd names the in-place change
    mx = neoflow.op("Y[i] max= X[i,j]", name="rowmax_inplace")
    x = _r(3, 4)
    y = mx(x)
    y.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_non_differentiable_reduction_is_named():
    op = neoflow.op("Y[] max= X[i,j]", name="big_max")
    x = torch.empty(4097, 4097, dtype=torch.float32)
    with pytest.raises(neoflow.Error, match="2\\^24"):
        op.grad_op(x)


COMPILE_CHILD = """
import torch, neoflow
mm = neoflow.op("C[i,j] += A[i,k] * B[k,j]", name="matmul")
sm = neoflow.op("M[b] max= X[b,j]\\nE[b,j] = exp(X[b,j] - M[b])\\nS[b] += E[b,j]\\nY[b,j] = E[b,j] / S[b]")
f = lambda a, b: (sm(mm(a, b)) * torch.arange(5.0)).sum()
a, b = torch.randn(3, 4, requires_grad=True), torch.randn(4, 5, requires_grad=True)
want = torch.autograd.grad(f(a, b), (a, b))
got = torch.autograd.grad(torch.compile(f, fullgraph=True)(a, b), (a, b))
for x, y in zip(got, want):
    torch.testing.assert_close(x, y)
print("ok")
"""


def test_torch_compile_with_a_warm_compile_cache(tmp_path):
    # The second process loads the compiled backward from torch.compile's
    # on-disk cache, which calls the gradient op by name: it must exist.
    import os
    import subprocess
    import sys

    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=str(tmp_path / "inductor"))
    for run in ("cold", "warm"):
        cmd = [sys.executable, "-c", COMPILE_CHILD]
        out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
        assert out.returncode == 0 and out.stdout.strip() == "ok", f"{run} cache: {out.stderr[-3000:]}"


def test_parameters_take_the_eager_path():
    # A model's weights are nn.Parameter: they run through the op's
    # autograd.Function (and, without grad, straight to the kernel), not
    # the dispatcher's custom op, with the same values and gradients.
    op = neoflow.op("Y[i,j] = X[i,j] * W[j] + B[j]", name="param_fast_path")
    x = torch.randn(4, 3, dtype=torch.float64, requires_grad=True)
    w, b = (torch.nn.Parameter(torch.randn(3, dtype=torch.float64)) for _ in range(2))
    y = op(x, w, b)
    assert not type(y.grad_fn).__name__.startswith("GeneratedBackwardFor"), type(y.grad_fn).__name__
    gy = torch.randn_like(y)
    got = torch.autograd.grad(y, (x, w, b), gy)
    want = torch.autograd.grad(x * w + b, (x, w, b), gy)
    for g, e in zip(got, want):
        torch.testing.assert_close(g, e)
    with torch.no_grad():
        torch.testing.assert_close(op(x, w, b), x * w + b)
    assert torch.autograd.gradcheck(lambda *t: op(*t), (x, w, b))
