import atexit
import os
import shutil
import sys
import tempfile

import pytest

# Every test session gets its own kernel cache, set before neoflow is used,
# and removed at exit, once neoflow has stopped its background builds.
_CACHE = tempfile.mkdtemp(prefix="neoflow-test-cache-")
os.environ["NEOFLOW_CACHE_DIR"] = _CACHE


@atexit.register
def _remove_cache() -> None:
    lib = sys.modules.get("neoflow._lib")
    if lib is not None:
        lib._shutdown()
    shutil.rmtree(_CACHE, ignore_errors=True)


import torch  # noqa: E402

torch.manual_seed(0)


@pytest.fixture(params=[torch.float32, torch.float64], ids=["f32", "f64"])
def dtype(request):
    return request.param


@pytest.fixture(
    params=[
        "cpu",
        pytest.param("cuda", marks=pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")),
    ]
)
def device(request):
    """Runs a test on the CPU and, where a GPU is, on CUDA (scripts/gpu-check.sh runs the CUDA ones)."""
    return request.param


def tol(dtype):
    return {"rtol": 1e-4, "atol": 1e-5} if dtype == torch.float32 else {"rtol": 1e-10, "atol": 1e-12}


# A layer over a batch dimension n, and train_layer_over_sizes, for the tests of kernels for every size.
LAYER = "H[n, j] += X[n, k] * W[j, k]\nY[n, j] = tanh(H[n, j] + B[j])"


def train_layer_over_sizes(op, sizes, device="cpu"):
    """Calls op (LAYER) forward and backward at each batch size of sizes, in float64 on device, checking its
    values and gradients against PyTorch's; returns its weights (w, b)."""
    w = torch.randn(3, 5, device=device, dtype=torch.float64, requires_grad=True)
    b = torch.randn(3, device=device, dtype=torch.float64, requires_grad=True)
    for n in sizes:
        x = torch.randn(n, 5, device=device, dtype=torch.float64, requires_grad=True)
        y = op(x, w, b)
        y.square().sum().backward()
        xr, wr, br = (t.detach().requires_grad_() for t in (x, w, b))
        ref = torch.tanh(xr @ wr.T + br)
        ref.square().sum().backward()
        torch.testing.assert_close(y, ref)
        for got, want in ((x.grad, xr.grad), (w.grad, wr.grad), (b.grad, br.grad)):
            torch.testing.assert_close(got, want)
        w.grad, b.grad = None, None
    return w, b


@pytest.fixture(params=[True, False], ids=["fused", "unfused"])
def fusion(request):
    """Runs a test with the fusion passes on and off (neoflow.configure(fusion=))."""
    import neoflow

    neoflow.configure(fusion=request.param)
    yield request.param
    neoflow.configure(fusion=True)


@pytest.fixture
def cache_dir():
    return _CACHE
