"""Every op on CUDA tensors: forward and backward against PyTorch, gradcheck
in float64 on the GPU, a non-default stream without synchronizing, a CUDA
graph that captures a training step, models compiled with
backend="neoflow" against eager, and `neoflow info`. The math library, torch.func and torch.vmap
run on CUDA in their own files' "cuda" cases. Skipped without a GPU (CI has none)."""

import logging
import os
import re
import subprocess
import sys
import textwrap

import backend_models
import neoflow
import pytest
import torch
from backend_models import check_training
from conftest import LAYER, tol, train_layer_over_sizes
from neoflow import config
from ops_table import CASES, HALF_TOL, as_tuple, check_half, float_leaves

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")

DEV = "cuda"


def _cuda(tensors):
    return [t.to(DEV) for t in tensors]


def test_the_cuda_build_is_loaded():
    assert config.cuda_enabled(), "torch.cuda.is_available() but neoflow loaded its CPU-only library"


def test_info_names_the_gpu():
    out = subprocess.run([sys.executable, "-m", "neoflow", "info"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    line = next(x for x in out.stdout.splitlines() if x.startswith("cuda"))
    assert torch.cuda.get_device_name(0) in line and "library CUDA backend: yes" in line, line
    assert "NVRTC: not found" not in line, line


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_forward_matches_pytorch(case, dtype):
    tensors = _cuda(case.inputs("test", dtype))
    op = case.op(tensors)
    sizes = case.sizes(*tensors) if case.sizes else None
    got = as_tuple(op(*tensors, sizes=sizes))
    want = as_tuple(case.reference(*tensors))
    assert len(got) == len(want)
    for a, b in zip(got, want):
        assert a.device == tensors[0].device
        torch.testing.assert_close(a, b, **tol(dtype))


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_backward_matches_pytorch(case, dtype):
    tensors = float_leaves(_cuda(case.inputs("test", dtype)))
    op = case.op(tensors)
    sizes = case.sizes(*tensors) if case.sizes else None
    out = as_tuple(op(*tensors, sizes=sizes))
    g = [torch.randn_like(o) for o in out]
    got = torch.autograd.grad(out, [t for t in tensors if t.requires_grad], g)
    ref = float_leaves(tensors)
    want = torch.autograd.grad(as_tuple(case.reference(*ref)), [t for t in ref if t.requires_grad], g)
    for a, b in zip(got, want):
        torch.testing.assert_close(a, b, **tol(dtype))


@pytest.mark.parametrize("half", [torch.float16, torch.bfloat16], ids=["f16", "bf16"])
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_half_forward_and_backward(case, half):
    """16-bit tensors: neoflow computes in float32 and rounds once per stored element, so it matches
    PyTorch's float32 computation on the same (16-bit) inputs within the 16-bit type's precision."""
    check_half(case, half, DEV)


# 16-bit contractions that run on Tensor Cores (mma.sync), in every operand layout the kernel copies
# differently, with edge tiles in M, N and K, and each one's gradients (contractions too).
MMA_CASES = [
    ("C[i,j] += A[i,k] * B[k,j]", [(256, 512), (512, 384)], lambda a, b: a @ b),
    ("C[i,j] += A[i,k] * B[k,j]", [(100, 70), (70, 130)], lambda a, b: a @ b),
    ("C[i,j] += A[i,k] * B[j,k]", [(192, 96), (160, 96)], lambda a, b: a @ b.T),
    ("C[i,j] += A[k,i] * B[k,j]", [(48, 72), (48, 200)], lambda a, b: a.T @ b),
    ("C[i,j] += A[i,k] * B[k,j]", [(33, 12), (12, 17)], lambda a, b: a @ b),
    ("C[b,i,j] += A[b,i,k] * B[b,k,j]", [(4, 64, 40), (4, 40, 96)], torch.bmm),
    ("Y[b,t,o] += X[b,t,i] * W[o,i]", [(3, 50, 64), (80, 64)], lambda x, w: x @ w.T),
]


@pytest.mark.parametrize("half", [torch.float16, torch.bfloat16], ids=["f16", "bf16"])
@pytest.mark.parametrize("src,shapes,ref", MMA_CASES, ids=[f"{c[0]}-{c[1]}" for c in MMA_CASES])
def test_tensor_core_contractions(src, shapes, ref, half):
    op = neoflow.op(src)
    xs = [torch.randn(*s, device=DEV).to(half).requires_grad_(True) for s in shapes]
    assert "mma.sync.aligned.m16n8k16" in op.specialize(*xs).cuda_source
    # the gradients are contractions too, each its own member of the gradient's fused group: every
    # member kernel calls the Tensor Core helper (defined once in the source)
    gop, gsizes = op.grad_op(*xs)
    gsrc = gop.cuda_source(*xs, torch.empty(op.output_shapes(*xs)[0], dtype=half, device=DEV), sizes=gsizes)
    assert gsrc.count("nf_mma(") == 1 + gsrc.count("__global__"), gsrc
    out = op(*xs)
    ys = [x.detach().float().requires_grad_(True) for x in xs]
    want = ref(*ys)
    k = max(s[-1] for s in shapes)  # float32 sums of up to k products, rounded once to 16 bits
    tol = {"rtol": HALF_TOL[half]["rtol"], "atol": HALF_TOL[half]["atol"] * max(1.0, k / 64)}
    torch.testing.assert_close(out.float(), want, **tol)
    g = torch.randn_like(out)
    got = torch.autograd.grad(out, xs, g)
    for a, b in zip(got, torch.autograd.grad(want, ys, g.float())):
        assert a.dtype == half
        torch.testing.assert_close(a.float(), b, rtol=tol["rtol"], atol=tol["atol"] * 4)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_gradcheck_on_the_gpu(case):
    tensors = float_leaves(_cuda(case.inputs("test", torch.float64)))
    op = case.op(tensors)
    sizes = case.sizes(*tensors) if case.sizes else None
    assert torch.autograd.gradcheck(lambda *t: op(*t, sizes=sizes), tensors)


def test_non_default_stream_without_synchronize():
    matmul = neoflow.op("C[i,j] += A[i,k] * B[k,j]")
    s = torch.cuda.Stream()
    a = torch.randn(512, 256, device=DEV)
    b = torch.randn(256, 384, device=DEV)
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        # A long queue on s first: a launch on the default stream would
        # read c before the producer below has written it.
        x = a
        for _ in range(20):
            x = x * 1.0001
        c = matmul(x, b)
        d = matmul(c, b.T)
    torch.cuda.current_stream().wait_stream(s)
    want = (a * 1.0001**20) @ b @ b.T
    torch.testing.assert_close(d, want, rtol=1e-3, atol=1e-2)


def test_misaligned_views():
    """A view starting 4 bytes into its storage: the tiled kernel loads 16-byte vectors, so neoflow
    passes an aligned copy, and the result is right."""
    matmul = neoflow.op("C[i,j] += A[i,k] * B[k,j]", name="aligned_mm")
    store = torch.randn(64 * 32 + 1, device=DEV)
    a = store[1:].view(64, 32)
    assert a.data_ptr() % 16 != 0
    b = torch.randn(32, 48, device=DEV)
    torch.testing.assert_close(matmul(a, b), a @ b, rtol=1e-4, atol=1e-4)
    kernel = matmul.specialize(a, b)
    assert kernel.aligned and "float4" in kernel.cuda_source


def test_tensors_on_a_second_device():
    if torch.cuda.device_count() < 2:
        pytest.skip("needs two GPUs")
    op = neoflow.op("Y[i] = X[i] * 2.0")
    x = torch.randn(1000, device="cuda:1")
    y = op(x)
    assert y.device == x.device
    torch.testing.assert_close(y, x * 2)


def test_cuda_graph_replays_a_training_step():
    """A captured training step replays the same kernels as the uncaptured one: its weights track an
    uncaptured neoflow copy closely, and plain PyTorch within float32 drift (after five SGD steps
    PyTorch's own float32 weights sit up to ~7e-5 from float64's)."""
    lin = neoflow.op("Y[b,j] += X[b,k] * W[j,k]", name="linear")
    act = neoflow.op("Z[b,j] = tanh(Y[b,j])", name="tanh_act")
    x = torch.randn(16, 32, device=DEV)

    def trainer(w):
        opt = torch.optim.SGD([w], lr=0.1)

        def step():
            opt.zero_grad(set_to_none=False)
            loss = act(lin(x, w)).square().sum()
            loss.backward()
            opt.step()
            return loss

        return step

    w = torch.randn(64, 32, device=DEV, requires_grad=True)
    step = trainer(w)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):  # warm-up builds every kernel outside capture
        for _ in range(3):
            step()
    torch.cuda.current_stream().wait_stream(s)
    w_start = w.detach().clone()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        loss = step()
    with torch.no_grad():
        w.copy_(w_start)
    w_eager = w_start.clone().requires_grad_(True)
    eager_step = trainer(w_eager)
    wr = w_start.clone().requires_grad_(True)
    opt_ref = torch.optim.SGD([wr], lr=0.1)
    for _ in range(5):
        g.replay()
        eager_loss = eager_step()
        opt_ref.zero_grad()
        ref_loss = torch.tanh(x @ wr.T).square().sum()
        ref_loss.backward()
        opt_ref.step()
        torch.testing.assert_close(loss, eager_loss.detach(), rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(loss, ref_loss.detach(), rtol=1e-4, atol=1e-4)
    assert not torch.equal(w.detach(), w_start), "the replays did not train"
    torch.testing.assert_close(w.detach(), w_eager.detach(), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(w.detach(), wr.detach(), rtol=1e-4, atol=5e-4)


def test_tune_on_the_gpu(tmp_path, caplog):
    """neoflow.tune on CUDA tensors searches the CUDA schedule space, timed
    with CUDA events, logs each kernel's result, stores records keyed by the
    GPU, and the tuned kernels then compute what PyTorch does."""
    caplog.set_level(logging.INFO, logger="neoflow.tune")
    neoflow.configure(cache_dir=tmp_path / "cache", tune="default")
    try:
        op = neoflow.op("C[i,j] += A[i,k] * B[k,j]", name="gpu_tune_mm")
        a = torch.randn(256, 192, device=DEV)
        b = torch.randn(192, 320, device=DEV)
        report = neoflow.tune(op, a, b, trials=12)
        assert [r.kernel for r in report] == ["gpu_tune_mm", "gpu_tune_mm_grad"]
        for r in report:
            assert r.trials == 12 and 0 < r.best_ms <= r.default_ms and not r.already, r
        assert re.search(r"tuned gpu_tune_mm: 12 trials in [\d.]+ s, best [\d.]+ ms", caplog.text), caplog.text
        listing = neoflow.tunedb.run("list")
        assert "gpu_tune_mm" in listing
        (row,) = [ln for ln in listing.splitlines() if " gpu_tune_mm " in f" {ln} "]
        shown = neoflow.tunedb.run("show", row.split()[0])
        assert f"sm_{torch.cuda.get_device_capability()[0]}" in shown and "cuda" in shown, shown
        a1, b1 = a.clone().requires_grad_(), b.clone().requires_grad_()
        c = op(a1, b1)
        c.backward(torch.ones_like(c))
        torch.testing.assert_close(c, a @ b, rtol=1e-4, atol=1e-3)
        torch.testing.assert_close(a1.grad, torch.ones_like(c) @ b.T, rtol=1e-4, atol=1e-3)
        again = neoflow.tune(op, a, b, trials=12, progress=False)
        assert all(r.already for r in again)
    finally:
        config.reset()
        neoflow.configure()


BACKGROUND_CHILD = textwrap.dedent(
    """
    import sys, threading, torch, neoflow
    neoflow.configure(tune="background", deterministic=sys.argv[1] == "det")
    mm = neoflow.op("C[i,j] += A[i,k] * B[k,j]", name="bg_gpu_mm")
    a = torch.randn(256, 192, device="cuda", requires_grad=True)
    b = torch.randn(192, 320, device="cuda", requires_grad=True)
    mm(a, b).sum().backward()  # builds the forward and both gradient kernels at once
    if sys.argv[1] == "det":
        print("queued", len(neoflow.background_status()))
        raise SystemExit
    first = neoflow.background_status()
    assert {k.kernel for k in first} == {"bg_gpu_mm", "bg_gpu_mm_grad"}, first
    assert not all(k.done for k in first), first  # nothing was tuned before the call returned
    errors = []

    def train():  # on PyTorch's stream while the worker times candidates on its own
        try:
            for _ in range(60):
                x, y = a.detach().clone().requires_grad_(), b.detach().clone().requires_grad_()
                out = mm(x, y)
                out.backward(torch.ones_like(out))
                torch.testing.assert_close(out, x @ y, rtol=1e-4, atol=1e-3)
                torch.testing.assert_close(x.grad, torch.ones_like(out) @ y.T, rtol=1e-4, atol=1e-3)
                torch.testing.assert_close(y.grad, x.T @ torch.ones_like(out), rtol=1e-4, atol=1e-3)
        except Exception as e:
            errors.append(e)

    threads = [threading.Thread(target=train) for _ in range(2)]
    for t in threads: t.start()
    status = neoflow.wait_background(timeout=400)
    for t in threads: t.join()
    assert not errors, errors
    assert all(k.done and not k.error for k in status), status
    assert all(0 < k.trials <= k.budget and k.default_ms > 0 and k.best_ms <= k.default_ms for k in status), status
    torch.testing.assert_close(mm(a, b), a @ b, rtol=1e-4, atol=1e-3)  # after the swaps, still right
    print("swapped", sum(k.swapped for k in status), "records", len(status))
    """
)


def test_background_tuning_of_cuda_kernels(tmp_path):
    """NEOFLOW_TUNE=background tunes CUDA kernels behind the calls, on the
    GPU tuner's own buffers and stream, stores records keyed by the GPU and
    swaps the faster modules in while two threads train: every result stays
    right. Deterministic kernels are not queued (tuned scatters may use
    atomic adds)."""
    env = dict(os.environ, NEOFLOW_CACHE_DIR=str(tmp_path / "cache"))
    out = subprocess.run(
        [sys.executable, "-c", BACKGROUND_CHILD, "tune"], env=env, capture_output=True, text=True, timeout=600
    )
    assert out.returncode == 0, out.stderr[-3000:]
    records = int(re.search(r"records (\d+)", out.stdout).group(1))
    assert records >= 2, out.stdout
    code = textwrap.dedent(
        """
        import neoflow
        for row in neoflow.tunedb.run("list").splitlines():
            if "bg_gpu_mm" in row:
                print("cuda" in neoflow.tunedb.run("show", row.split()[0]))
        """
    )
    listed = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert listed.stdout.split() == ["True"] * records, listed.stdout + listed.stderr[-3000:]
    env["NEOFLOW_CACHE_DIR"] = str(tmp_path / "det")
    det = subprocess.run(
        [sys.executable, "-c", BACKGROUND_CHILD, "det"], env=env, capture_output=True, text=True, timeout=300
    )
    assert det.returncode == 0 and "queued 0" in det.stdout, det.stdout + det.stderr[-3000:]


@pytest.mark.parametrize("half", [torch.float16, torch.bfloat16], ids=["f16", "bf16"])
def test_autocast_on_cuda(half):
    """Under torch.autocast("cuda") an op runs in the autocast dtype, as PyTorch's matmuls do, and the
    gradients reach the float32 leaves through the casts."""
    mm = neoflow.op("C[i, j] += A[i, k] * B[k, j]", name="autocast_mm_cuda")
    x = torch.randn(64, 48, device=DEV, requires_grad=True)
    w = torch.randn(48, 32, device=DEV, requires_grad=True)
    with torch.autocast("cuda", dtype=half):
        y = mm(x, w)
        r = x @ w
    assert y.dtype == half == r.dtype and y.device == x.device
    torch.testing.assert_close(y.float(), r.float(), **HALF_TOL[half])
    gx, gw = torch.autograd.grad(y.float().sum(), (x, w))
    assert gx.dtype == gw.dtype == torch.float32
    rx, rw = torch.autograd.grad(r.float().sum(), (x, w))
    torch.testing.assert_close(gx, rx, **HALF_TOL[half])
    torch.testing.assert_close(gw, rw, **HALF_TOL[half])


def test_gathers_on_cuda_and_no_unchecked_capture():
    """A gather on CUDA tensors matches PyTorch, an index out of range is refused, and a CUDA graph capture
    of a gather raises instead of launching unchecked."""
    bag = neoflow.op("O[b, d] += LUT[I[b, k], d]", name="cuda_bag", inputs=["LUT", "I"])
    lut = torch.randn(50, 8, device=DEV, requires_grad=True)
    idx = torch.randint(0, 50, (6, 3), device=DEV)
    out = bag(lut, idx)
    torch.testing.assert_close(out, lut[idx].sum(1))
    (g,) = torch.autograd.grad(out.sum(), lut)
    torch.testing.assert_close(g, torch.zeros_like(lut).index_add(0, idx.flatten(), torch.ones(18, 8, device=DEV)))
    with pytest.raises(IndexError, match="index tensor I holds 50"):
        bag(lut, torch.full((1, 1), 50, device=DEV))
    static = idx.clone()
    bag(lut.detach(), static)  # built before the capture
    graph = torch.cuda.CUDAGraph()
    with pytest.raises(RuntimeError, match="cannot be checked while a CUDA graph is being captured"):
        with torch.cuda.graph(graph):
            bag(lut.detach(), static)


@pytest.fixture
def no_tf32():
    """Exact float32 in PyTorch's references (cuDNN convolutions default to TF32)."""
    saved = torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32
    torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = False
    torch._dynamo.reset()
    neoflow.compile_report(clear=True)
    yield
    torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = saved
    torch._dynamo.reset()


@pytest.mark.parametrize("contractions", ["eager", "neoflow"])
@pytest.mark.parametrize("model", ["MLP", "Block", "ConvNet"])
def test_backend_trains_on_cuda_as_in_eager(model, contractions, no_tf32):
    """backend="neoflow" on CUDA tensors: forward and every parameter's gradient against eager, with the
    lowered subgraphs' outputs on the GPU."""
    torch.manual_seed(0)
    shape = {"MLP": (4, 16), "Block": (2, 5, 32), "ConvNet": (2, 3, 8, 8)}[model]
    net = getattr(backend_models, model)().to(DEV)
    reps = check_training(net, torch.randn(*shape, device=DEV), contractions=contractions)
    assert {r["graph"] for r in reps} == {"forward", "backward"}
    assert all(r["lowered"] > 0 for r in reps), reps


def test_backend_inlines_a_neoflow_op_on_cuda(no_tf32):
    op = neoflow.op("H[b, j] = tanh(X[b, j]) * W[j]; G[b, j] = H[b, j] * H[b, j]", outputs=["G"])
    w = torch.randn(4, device=DEV, requires_grad=True)

    def f(x):
        return op(x.t() * 2.0, w).sum(1)

    x = torch.randn(4, 3, device=DEV, requires_grad=True)
    y = neoflow.compile(f)(x)
    grads = torch.autograd.grad(y.sum(), [x, w])
    y0 = f(x)
    grads0 = torch.autograd.grad(y0.sum(), [x, w])
    assert y.device == x.device
    torch.testing.assert_close(y, y0, rtol=1e-4, atol=1e-5)
    for g, g0 in zip(grads, grads0):
        torch.testing.assert_close(g, g0, rtol=1e-4, atol=1e-5)
    fw, bw = neoflow.compile_report()
    assert fw["fallback"] == {} and bw["fallback"] == {}, (fw, bw)


def test_dimensions_that_vary_on_cuda():
    """An op called with varying batch sizes on the GPU builds a kernel for the first shape, then one CUDA
    kernel for every size (its sizes passed at launch), whose values and gradients match PyTorch's at sizes
    it was not built at; an op whose access is in bounds only under a launch guard gets one too."""
    neoflow.configure(dynamic="auto")
    op = neoflow.Op(LAYER, name="cuda_dyn_layer")
    train_layer_over_sizes(op, (16, 12, 9, 20, 33, 1, 64, 7), DEV)
    assert op.kernel_shapes() == [((16, 5), (3, 5), (3,)), (("s0", 5), (3, 5), (3,))]
    window = neoflow.Op("Y[i] = X[i] + Z[i + 2]", name="cuda_dyn_window")
    for n, m in ((8, 13), (12, 15), (5, 9), (30, 40)):
        x, z = torch.randn(n, device=DEV), torch.randn(m, device=DEV)
        torch.testing.assert_close(window(x, z), x + z[2 : n + 2])
    assert any(isinstance(d, str) for shapes in window.kernel_shapes() for s in shapes for d in s)
