"""C kernel launches (nf_launch, capi/launch.c): the kernels the Go core
loaded run without entering Go; every other launch still gets the Go
core's error, naming the problem."""

from __future__ import annotations

import neoflow
import pytest
import torch
from neoflow import _lib


def _kernel():
    op = neoflow.op("Y[i] = X[i] * 2.0 + 1.0", name="launch_scale")
    x = torch.arange(8, dtype=torch.float32)
    return op, op.specialize(x), x


def test_a_launch_runs_the_loaded_kernel():
    op, k, x = _kernel()
    y = torch.empty_like(x)
    _lib.launch(k.kernel_id, k.pack(x.data_ptr(), y.data_ptr()), 2)
    torch.testing.assert_close(y, x * 2 + 1)
    torch.testing.assert_close(op(x), x * 2 + 1)


@pytest.mark.parametrize("kernel_id", [1 << 20, 60000])  # past C's copy of the table, and inside it
def test_an_unknown_kernel_is_refused(kernel_id):
    _, k, x = _kernel()
    with pytest.raises(neoflow.Error, match=f"unknown kernel id {kernel_id}"):
        _lib.launch(kernel_id, k.pack(x.data_ptr(), x.data_ptr()), 1)


def test_a_wrong_buffer_count_is_refused():
    _, k, x = _kernel()
    y = torch.empty_like(x)
    with pytest.raises(neoflow.Error, match=r"takes 2 buffers, got 3"):
        _lib.launch(k.kernel_id, k.pack(x.data_ptr(), y.data_ptr()) + bytes(8), 1)
