"""The fusion passes (core/fuse): what they do to the LLTM cell's gradient,
explain_fusion and the fuse-* dumps, the NEOFLOW_FUSION switch and its
errors, and that every result stays exact (the conformance tests run with
fusion on and off: test_ops.py and test_grad.py)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap

import neoflow
import pytest
import torch

LLTM = (
    "GH[b,g] += W[g,j] * H[b,j]\n"
    "GX[b,g] += W[g,N+k] * X[b,k]\n"
    "G[b,g] = GH[b,g] + GX[b,g] + Bias[g]\n"
    "E[b,u] = where(G[b,2*N+u] > 0.0, G[b,2*N+u], exp(G[b,2*N+u]) - 1.0)\n"
    "Cn[b,u] = C[b,u] + E[b,u] * sigmoid(G[b,u])\n"
    "Hn[b,u] = tanh(C[b,u] + E[b,u] * sigmoid(G[b,u])) * sigmoid(G[b,N+u])"
)


def _lltm(hidden: int, batch: int, dtype=torch.float32, grad=False):
    op = neoflow.op(
        LLTM, name="lltm_fusion", inputs=["W", "H", "X", "Bias", "C"], sizes={"u": hidden, "j": hidden}, N=hidden
    )
    g = torch.Generator().manual_seed(0)
    shapes = [(3 * hidden, 2 * hidden), (batch, hidden), (batch, hidden), (3 * hidden,), (batch, hidden)]
    tensors = [torch.randn(*s, dtype=dtype, generator=g).requires_grad_(grad) for s in shapes]
    return op, tensors


def _saving_grad(op, tensors):
    gop, sizes = op.grad_op(*tensors, saved=True)
    outs = op(*tensors)
    dtype = tensors[0].dtype
    temps = {n: torch.randn(s, dtype=dtype) for n, s in op.temporaries(*tensors)}
    ins = [*tensors, *[torch.randn_like(o) for o in outs], *[temps[n] for n in gop.saved]]
    return gop, ins, sizes


def test_lltm_saving_gradient_keeps_one_small_temporary():
    op, tensors = _lltm(256, 16)
    gop, ins, sizes = _saving_grad(op, tensors)
    temps = gop.temporaries(*ins, sizes=sizes)
    w = tensors[0]
    assert len(temps) <= 2, temps
    assert all(torch.Size(s).numel() < w.numel() for _, s in temps), temps
    text = gop.explain_fusion(*ins, sizes=sizes)
    assert "merge: d_W = d_W_1 + d_W_2 becomes one sum over b" in text, text
    assert re.search(r"split: d_W into 2 parts", text), text
    # d_W is two contractions, each over exactly its half of j.
    parts = re.findall(r"^  d_W\[g, j\] \+= .*// g < 768, j < 256 at \[0, (\d+)\]; over b < 16$", text, re.MULTILINE)
    assert sorted(parts) == ["0", "256"], text


def test_fused_and_unfused_agree_and_gradcheck():
    op, tensors = _lltm(3, 2, torch.float64, grad=True)
    assert torch.autograd.gradcheck(lambda *t: op(*t), tensors)
    fused = [t.detach() for t in op(*tensors)]
    try:
        neoflow.configure(fusion=False)
        assert "fusion is off" in op.explain_fusion(*tensors)
        unfused = [t.detach() for t in op(*tensors)]
        assert len(op.temporaries(*tensors)) == 4
    finally:
        neoflow.configure(fusion=True)
    for a, b in zip(fused, unfused):
        torch.testing.assert_close(a, b)


def test_split_gradient_matches_unfused():
    # Large enough that fusion merges and splits d_W on any machine (the
    # split saves half of a 768 x 512 x 16 contraction's arithmetic).
    op, tensors = _lltm(256, 16, torch.float64, grad=True)
    gop, ins, sizes = _saving_grad(op, [t.detach() for t in tensors])
    text = gop.explain_fusion(*ins, sizes=sizes)
    assert "merge: d_W = d_W_1 + d_W_2" in text and "split: d_W into 2 parts" in text, text

    def run():
        outs = op(*tensors)
        grads = torch.autograd.grad(sum((o * (k + 1)).sum() for k, o in enumerate(outs)), tensors)
        return [o.detach() for o in outs], grads

    fused = run()
    try:
        neoflow.configure(fusion=False)
        unfused = run()
    finally:
        neoflow.configure(fusion=True)
    for a, b in zip([*fused[0], *fused[1]], [*unfused[0], *unfused[1]]):
        torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-12)


def test_differentiating_a_saving_gradient_op_recomputes():
    # Fusion keeps none of a saving gradient op's temporaries (it runs
    # without autograd); differentiated anyway, its backward recomputes.
    op, tensors = _lltm(2, 2, torch.float64)
    gop, ins, sizes = _saving_grad(op, tensors)
    ins = [t.detach().double().requires_grad_(True) for t in ins]
    assert torch.autograd.gradcheck(lambda *t: gop(*t, sizes=sizes), ins)


def test_forward_only_op_keeps_no_temporary_for_a_gradient():
    # LLTM's forward keeps G and E whole for its saving gradient; defined
    # forward only (as the torch.compile backend defines its subgraphs), it
    # keeps none for that, so fusion inlines G; it computes the same outputs,
    # a gradient asked of it anyway recomputes, with the same values, and the
    # setting survives pickling.
    import pickle

    op, tensors = _lltm(256, 16)
    kw = dict(inputs=["W", "H", "X", "Bias", "C"], sizes={"u": 256, "j": 256}, N=256)
    fwd = neoflow.op(LLTM, name="lltm_forward_only", forward_only=True, **kw)
    kept = {n for n, _ in op.temporaries(*tensors)}
    temps = {n for n, _ in fwd.temporaries(*tensors)}
    assert "G" in kept and "G" not in temps and temps < kept, (kept, temps)
    assert "kept whole for the saving gradient: E, G" in op.explain_fusion(*tensors)
    assert "kept whole" not in fwd.explain_fusion(*tensors)
    plain = neoflow.op(LLTM, name="lltm_forward_only", **kw)  # the same op but for forward_only
    assert plain.custom_name != fwd.custom_name  # so a compiled graph never calls one for the other
    for a, b in zip(fwd(*tensors), op(*tensors)):
        torch.testing.assert_close(a, b)
    assert {n for n, _ in pickle.loads(pickle.dumps(fwd)).temporaries(*tensors)} == temps
    small, small_tensors = _lltm(2, 2, torch.float64, grad=True)
    kw = dict(inputs=["W", "H", "X", "Bias", "C"], sizes={"u": 2, "j": 2}, N=2)
    fwd_small = neoflow.op(LLTM, name="lltm_forward_only_small", forward_only=True, **kw)
    assert torch.autograd.gradcheck(lambda *t: fwd_small(*t), small_tensors)
    got = torch.autograd.grad(sum(o.sum() for o in fwd_small(*small_tensors)), small_tensors)
    want = torch.autograd.grad(sum(o.sum() for o in small(*small_tensors)), small_tensors)
    for a, b in zip(got, want):
        torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-12)


def test_saving_gradient_recomputes_by_reward():
    # T = X*W + B costs two operations a point: cheaper to compute again in
    # the gradient (where it is inlined into its reader) than to store and
    # load, so the forward kernel does not return it and the saving
    # gradient does not take it. LLTM's E = elu(G) costs an exp a point,
    # more than its store and load: it stays saved.
    src = "T[i,j] = X[i,j] * W[j] + B[j]\nY[i,j] = tanh(T[i,j]) * X[i,j]"
    op = neoflow.op(src, name="affine_tanh")
    x, w, b = (torch.randn(64, 128), torch.randn(128), torch.randn(128))
    assert op.temporaries(x, w, b) == []
    assert op.grad_op(x, w, b, saved=True)[0].saved == ()
    assert "recomputed: the gradient computes T again from X, W, B: R = +" in op.explain_fusion(x, w, b)
    lltm, tensors = _lltm(256, 16)
    assert "E" in [n for n, _ in lltm.temporaries(*tensors)]
    assert re.search(r"saved: E stays saved for the gradient: R = -", lltm.explain_fusion(*tensors))
    # Under autograd the recomputing gradient is the unfused one's.
    x64, w64, b64 = (t.double().requires_grad_(True) for t in (x[:4, :6], w[:6], b[:6]))
    assert torch.autograd.gradcheck(lambda *t: op(*t), (x64, w64, b64))

    def grads():
        return torch.autograd.grad((op(x64, w64, b64) * 3).sum(), (x64, w64, b64))

    fused = grads()
    try:
        neoflow.configure(fusion=False)
        assert [n for n, _ in op.temporaries(x64, w64, b64)] == ["T"]
        unfused = grads()
    finally:
        neoflow.configure(fusion=True)
    for a, c in zip(fused, unfused):
        torch.testing.assert_close(a, c, rtol=1e-12, atol=1e-12)


def test_custom_op_name_changes_with_fusion():
    # The temporaries a custom op returns depend on fusion, and
    # torch.compile caches graphs on disk by the op's name.
    src = "T[i] = X[i] * 2.0\nY[i] = T[i] + 1.0"
    on = neoflow.op(src, name="named_by_fusion").custom_name
    try:
        neoflow.configure(fusion=False)
        off = neoflow.op(src, name="named_by_fusion").custom_name
    finally:
        neoflow.configure(fusion=True)
    assert on != off


def test_configure_fusion_rejects_non_bool():
    with pytest.raises(TypeError, match="fusion must be True or False"):
        neoflow.configure(fusion="no")


_SCRIPT = textwrap.dedent(
    """
    import torch, neoflow
    op = neoflow.op("T[i] = X[i] * 2.0\\nY[i] = T[i] + 1.0", name="twice")
    x = torch.randn(5)
    torch.testing.assert_close(op(x), x * 2 + 1)
    print("temps", [n for n, _ in op.temporaries(x)])
    """
)


def _run(env_extra: dict, cache_dir) -> subprocess.CompletedProcess:
    env = dict(os.environ, NEOFLOW_CACHE_DIR=str(cache_dir), **env_extra)
    return subprocess.run([sys.executable, "-c", _SCRIPT], capture_output=True, text=True, timeout=600, env=env)


def test_neoflow_fusion_env(tmp_path):
    on = _run({}, tmp_path)
    assert on.returncode == 0, on.stderr
    assert "temps []" in on.stdout
    off = _run({"NEOFLOW_FUSION": "0"}, tmp_path)
    assert off.returncode == 0, off.stderr
    assert "temps ['T']" in off.stdout
    bad = _run({"NEOFLOW_FUSION": "maybe"}, tmp_path)
    assert bad.returncode != 0
    assert "NEOFLOW_FUSION='maybe': expected 1 or 0" in bad.stderr


def test_fusion_dump_shows_decisions(tmp_path):
    proc = _run({"NEOFLOW_DUMP": "fuse-inline,fuse-prune"}, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "// after fuse-inline: op twice float32" in proc.stderr
    decision = r"// inline: T \(fan-in One\) into \[Y\]: R = \+[0-9.]+[mun]?s \(traffic "
    assert re.search(decision, proc.stderr), proc.stderr
    assert "// prune: [T] no longer stored" in proc.stderr


_GROUP_SCRIPT = textwrap.dedent(
    """
    import torch, neoflow
    op = neoflow.op("A[i] = X[i] * 2.0\\nB[i] = exp(X[i])", name="pair")
    x = torch.randn(5)
    a, b = op(x)
    torch.testing.assert_close(a, x * 2)
    torch.testing.assert_close(b, torch.exp(x))
    """
)


def test_fusion_dump_shows_groups(tmp_path):
    # Two statements over the same points run in one loop nest: the
    # fuse-group dump says why, and prints the joined one with "& ".
    env = dict(os.environ, NEOFLOW_CACHE_DIR=str(tmp_path), NEOFLOW_DUMP="fuse-group,lower")
    proc = subprocess.run([sys.executable, "-c", _GROUP_SCRIPT], capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stderr
    assert "// after fuse-group: op pair float32" in proc.stderr
    assert re.search(r"// group: B joins A.s nest \(i < 5; both read X\): R = \+", proc.stderr), proc.stderr
    assert "  & B[i] = exp(X[i])" in proc.stderr
    assert "group [0 1]" in proc.stderr  # one nest in the lowered kernel


ROW_OPS = {
    "softmax": (
        "M[n] max= X[n, j]\nE[n, j] = exp(X[n, j] - M[n])\nS[n] += E[n, j]\nY[n, j] = E[n, j] / S[n]",
        lambda x: torch.softmax(x, 1),
    ),
    "layernorm": (
        "M[n] += X[n, j] / 512.0\nD[n, j] = X[n, j] - M[n]\nV[n] += D[n, j] * D[n, j] / 512.0\n"
        "Y[n, j] = D[n, j] / sqrt(V[n] + 0.00001)",
        lambda x: torch.nn.functional.layer_norm(x, (512,), eps=1e-5),
    ),
}


@pytest.mark.parametrize("name", sorted(ROW_OPS))
@pytest.mark.parametrize("threads", [1, 2])
def test_small_fused_row_ops_run_their_rows_in_parallel(name, threads):
    """50 rows of 512: each statement too small for threads alone (loops.MinParallelWork), the fused nest not
    (parallel-rows). Values and gradients equal PyTorch's on one thread and two."""
    source, ref = ROW_OPS[name]
    op = neoflow.op(source, name=f"rows_{name}", outputs=["Y"])
    x = torch.randn(50, 512, dtype=torch.float64, requires_grad=True)
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        y = op(x)
        g = torch.randn_like(y)
        (dx,) = torch.autograd.grad(y, x, g)
        (want,) = torch.autograd.grad(ref(x), x, g)
        torch.testing.assert_close(y, ref(x))
        torch.testing.assert_close(dx, want)
    finally:
        torch.set_num_threads(before)
    source_c = op.specialize(x.detach()).c_source
    assert source_c.count("#pragma omp parallel for") == 1, source_c
