"""Bad input gets a clear error that names the problem; nothing crashes."""

import neoflow
import pytest
import torch
from neoflow.op import check_devices


def err(source, **kw):
    with pytest.raises(neoflow.Error) as info:
        neoflow.op(source, **kw)
    return str(info.value)


def call_err(op, *args, exc=neoflow.Error, **kw):
    with pytest.raises(exc) as info:
        op(*args, **kw)
    return str(info.value)


def test_syntax_error_has_line_column_and_caret():
    msg = err("C[i,j] += A[i,k] * B[k,j]\nD[i] = C[i, +]")
    assert msg.startswith("2:13:"), msg
    lines = msg.splitlines()
    assert lines[1].strip() == "D[i] = C[i, +]"
    assert lines[2].index("^") == lines[1].index("+")


def test_unknown_tensor():
    assert "unknown tensor" in err("Y[i] = X[i]", inputs=["X", "Z"]) or "Z" in err("Y[i] = X[i]", inputs=["X", "Z"])
    msg = err("Y[i] = X[i] + T[i]\nT[i] = X[i]")
    assert "T" in msg and "before" in msg


def test_unknown_index():
    msg = err("Y[i] = X[i] * j")
    assert "unknown index j" in msg


def test_rank_mismatch():
    msg = err("Y[i,j] = X[i,j] + X[i]")
    assert "rank mismatch" in msg and "X" in msg


def test_inconsistent_ranges():
    op = neoflow.op("C[i,j] += A[i,k] * B[k,j]")
    msg = call_err(op, torch.randn(2, 3), torch.randn(4, 5))
    assert "inconsistent ranges for index k" in msg


def test_access_not_provably_in_bounds():
    op = neoflow.op("Y[i] = A[i] + A[i+1]")
    msg = call_err(op, torch.randn(5))
    assert "out of bounds" in msg and "A[i + 1]" in msg


def test_range_that_cannot_be_inferred():
    op = neoflow.op("Y[p] += where(p+r-1 >= 0 && p+r-1 < 8, X[p+r-1], 0.0) * W[r]")
    msg = call_err(op, torch.randn(8), torch.randn(3))
    assert "cannot infer the range of index p" in msg


def test_wrong_number_of_inputs():
    op = neoflow.op("C[i,j] += A[i,k] * B[k,j]", name="matmul")
    msg = call_err(op, torch.randn(2, 3), exc=TypeError)
    assert "takes 2 inputs (A, B), got 1" in msg


def test_wrong_rank_at_call():
    op = neoflow.op("C[i,j] += A[i,k] * B[k,j]")
    msg = call_err(op, torch.randn(2, 3, 4), torch.randn(3, 4), exc=ValueError)
    assert "input A must have 2 dimensions" in msg


def test_unsupported_dtype():
    op = neoflow.op("Y[i] = X[i]")
    msg = call_err(op, torch.ones(3, dtype=torch.uint8), exc=TypeError)
    assert "torch.uint8" in msg and "float32" in msg and "torch.int64" in msg


def test_mixed_dtypes():
    op = neoflow.op("Y[i] = A[i] + B[i]")
    with pytest.raises(neoflow.Error, match="share one dtype"):
        op(torch.ones(3), torch.ones(3, dtype=torch.float64))


def test_cuda_tensor_without_a_gpu(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(RuntimeError, match="is_available"):
        check_devices([torch.device("cuda", 0)], ["X"])


def test_cuda_tensor_without_the_cuda_build(monkeypatch):
    from neoflow import config

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(config, "cuda_enabled", lambda: False)
    with pytest.raises(NotImplementedError, match="without its CUDA build"):
        check_devices([torch.device("cuda", 1)], ["X"])


def test_other_devices_are_refused():
    with pytest.raises(NotImplementedError, match="device meta is not supported"):
        check_devices([torch.device("meta")], ["X"])


def test_mixed_devices():
    op = neoflow.op("Y[i] = A[i] + B[i]")
    msg = call_err(op, torch.ones(3), torch.ones(3, device="meta"), exc=ValueError)
    assert "different devices" in msg


def test_non_tensor_input():
    op = neoflow.op("Y[i] = X[i]")
    assert "must be a torch.Tensor" in call_err(op, [1.0, 2.0], exc=TypeError)


def test_bad_constant_type():
    with pytest.raises(TypeError, match="constant S"):
        neoflow.op("Y[i] = X[i*S]", S="2")


def test_bad_sizes():
    op = neoflow.op("Y[p] max= X[p*2+r]")
    with pytest.raises(ValueError, match="positive int"):
        op(torch.ones(4), sizes={"r": 0})


def test_op_without_inputs_is_refused():
    with pytest.raises(ValueError, match="at least one input"):
        neoflow.op("Y[i] = i * 1.0", sizes={"i": 5})
