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
