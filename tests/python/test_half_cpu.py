"""16-bit tensors on the CPU and autocast: every spine operator in float16 and bfloat16, forward and backward,
against PyTorch's float32 computation on the same 16-bit inputs (C kernels load, compute and accumulate in
float32 and round once per stored element, as the CUDA ones do); ops under torch.autocast run in its dtype."""

import neoflow
import pytest
import torch
from ops_table import CASES, HALF_TOL, check_half


@pytest.mark.parametrize("half", [torch.float16, torch.bfloat16], ids=["f16", "bf16"])
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_half_forward_and_backward_on_the_cpu(case, half):
    check_half(case, half, "cpu")


@pytest.fixture(scope="module")
def mm():
    return neoflow.op("C[i, j] += A[i, k] * B[k, j]", name="autocast_mm")


@pytest.mark.parametrize("half", [torch.bfloat16, torch.float16], ids=["bf16", "f16"])
def test_autocast_runs_ops_in_its_dtype(mm, half):
    x = torch.randn(30, 20, requires_grad=True)
    w = torch.randn(20, 10, requires_grad=True)
    with torch.autocast("cpu", dtype=half):
        y = mm(x, w)
        r = x @ w
    assert y.dtype == half == r.dtype
    torch.testing.assert_close(y.float(), r.float(), **HALF_TOL[half])
    g = torch.randn(30, 10)
    gx, gw = torch.autograd.grad(y, (x, w), g.to(half))
    rx, rw = torch.autograd.grad(r, (x, w), g.to(half))
    assert gx.dtype == gw.dtype == torch.float32  # through the casts back to the float32 leaves
    torch.testing.assert_close(gx, rx, **HALF_TOL[half])
    torch.testing.assert_close(gw, rw, **HALF_TOL[half])


def test_autocast_under_torch_compile(mm):
    x, w = torch.randn(8, 4, requires_grad=True), torch.randn(4, 3, requires_grad=True)
    f = torch.compile(lambda a, b: mm(a, b), fullgraph=True, backend="aot_eager")
    with torch.autocast("cpu", dtype=torch.bfloat16):
        y = f(x, w)
        r = x @ w
    assert y.dtype == torch.bfloat16
    torch.testing.assert_close(y.float(), r.float(), **HALF_TOL[torch.bfloat16])
    y.float().sum().backward()
    assert x.grad.dtype == torch.float32 and w.grad is not None


def test_autocast_off_and_integers_untouched(mm):
    x, w = torch.randn(4, 3), torch.randn(3, 2)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        with torch.autocast("cpu", enabled=False):
            assert mm(x, w).dtype == torch.float32
        assert mm(x.double(), w.double()).dtype == torch.float64  # float64 is not eligible, as in PyTorch
        bag = neoflow.op("O[b, d] += LUT[I[b, k], d]", inputs=["LUT", "I"])
        out = bag(torch.randn(10, 4), torch.randint(0, 10, (3, 2)))
        assert out.dtype == torch.bfloat16
    assert mm(x, w).dtype == torch.float32


def test_half_c_source_and_cuda_source_render(mm):
    a, b = torch.ones(4, 3, dtype=torch.bfloat16), torch.ones(3, 5, dtype=torch.bfloat16)
    src = mm.c_source(a, b)
    assert "typedef unsigned short nf_bf16;" in src and "const nf_bf16 *restrict t_A" in src and "nf_st(" in src
    assert "mma.sync" in mm.cuda_source(a, b)  # needs no GPU
    torch.testing.assert_close(mm(a, b).float(), torch.full((4, 5), 3.0))
