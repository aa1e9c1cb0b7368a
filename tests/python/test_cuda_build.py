"""The CUDA backend's parts that need no GPU: which library the loader picks,
where it looks for NVRTC, and the generated CUDA source."""

from pathlib import Path

import neoflow
import torch
from neoflow import _lib


def test_loader_picks_the_cuda_build_only_with_a_gpu(monkeypatch, tmp_path):
    monkeypatch.delenv("NEOFLOW_LIBRARY", raising=False)
    monkeypatch.setattr(_lib, "__file__", str(tmp_path / "_lib.py"))
    (tmp_path / "libneoflow.so").write_bytes(b"")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert _lib._path().name == "libneoflow.so"  # no CUDA build installed
    (tmp_path / "libneoflow_cuda.so").write_bytes(b"")
    assert _lib._path().name == "libneoflow_cuda.so"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert _lib._path().name == "libneoflow.so"  # the CUDA build would exit the process in cuInit
    monkeypatch.setenv("NEOFLOW_LIBRARY", str(tmp_path / "custom.so"))
    assert _lib._path().name == "custom.so"


def test_nvrtc_dirs_list_pytorch_and_cuda_home(monkeypatch, tmp_path):
    (tmp_path / "lib64").mkdir()
    monkeypatch.setenv("CUDA_HOME", str(tmp_path))
    dirs = _lib.nvrtc_dirs()
    assert str(tmp_path / "lib64") in dirs
    assert len(dirs) == len(set(dirs))
    if torch.version.cuda:  # a CUDA wheel of PyTorch ships NVRTC: it comes first
        assert any(p.name.startswith("libnvrtc.so") for p in Path(dirs[0]).iterdir())


def test_cuda_source_without_a_gpu():
    op = neoflow.op("Y[i,j] += X[i,k] * W[j,k]", name="linear")
    src = op.cuda_source(torch.randn(3, 8), torch.randn(5, 8))
    assert 'extern "C" __global__' in src
    # The GPU tiling: blocks over output tiles, X and W staged in shared
    # memory between barriers.
    assert "nf_blk = blockIdx.x" in src
    assert src.count("__shared__") == 2
    assert "__syncthreads();" in src
    # An elementwise op runs one thread per element.
    add = neoflow.op("Z[i] = X[i] + Y[i]", name="add").cuda_source(torch.randn(15), torch.randn(15))
    assert "blockIdx.x * blockDim.x + threadIdx.x" in add
    assert "nf_g < 15" in add


def test_cuda_source_vectorizes_aligned_copies():
    """Rows of whole vectors at aligned offsets are copied into shared memory as float4 (double2; four
    16-bit elements loaded as a uint2 and widened to a float4); odd shapes keep scalar copies."""
    import neoflow
    import torch

    mm = neoflow.op("C[i,j] += A[i,k] * B[k,j]", name="vec_mm")
    src = mm.cuda_source(torch.ones(64, 32), torch.ones(32, 48))
    assert "*(float4 *)&r_sh" in src and "__shared__ __align__(16) float" in src
    assert "*(double2 *)&r_sh" in mm.cuda_source(
        torch.ones(64, 32, dtype=torch.float64), torch.ones(32, 48, dtype=torch.float64)
    )
    h = (torch.ones(64, 32, dtype=torch.float16), torch.ones(32, 48, dtype=torch.float16))
    # A plain 16-bit product runs on Tensor Cores (16-byte copies into shared memory, then mma.sync); a
    # scaled one keeps the tiled kernel, whose copies widen four elements at a time.
    assert "mma.sync.aligned.m16n8k16" in mm.cuda_source(*h) and "uint4" in mm.cuda_source(*h)
    half = neoflow.op("C[i,j] += A[i,k] * B[k,j] * 2.0", name="vec_mm2").cuda_source(*h)
    assert "*(const uint2 *)&t_A" in half and "*(float4 *)&r_sh" in half
    assert "float4" not in mm.cuda_source(torch.ones(33, 21), torch.ones(21, 37))
