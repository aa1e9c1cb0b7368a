"""Ranges inferred from guarded accesses (Tensor Comprehensions' rule): a lower-triangular product, a
concatenation and a padded window get their output shapes without sizes=, and compute what PyTorch does,
forward and backward."""

import neoflow
import pytest
import torch


def test_lower_triangular_matmul():
    op = neoflow.op("Y[i,j] += where(k <= i, L[i,k], 0.0) * B[k,j]", name="tril_mm")
    L = torch.randn(6, 6, dtype=torch.float64, requires_grad=True)
    B = torch.randn(6, 4, dtype=torch.float64, requires_grad=True)
    torch.testing.assert_close(op(L, B), torch.tril(L) @ B)
    assert torch.autograd.gradcheck(op, (L, B))


def test_concatenation_without_sizes():
    op = neoflow.op("Y[i] = where(i < 4, A[i], B[i - 4])", name="concat_inferred")
    a = torch.randn(4, dtype=torch.float64, requires_grad=True)
    b = torch.randn(3, dtype=torch.float64, requires_grad=True)
    torch.testing.assert_close(op(a, b), torch.cat([a, b]))
    assert torch.autograd.gradcheck(op, (a, b))


def test_padded_window_takes_the_largest_output_in_bounds():
    op = neoflow.op("Y[p] += where(p + r >= 1, X[p + r - 1], 0.0) * W[r]", name="pad_inferred")
    x = torch.randn(8, dtype=torch.float64, requires_grad=True)
    w = torch.randn(3, dtype=torch.float64, requires_grad=True)
    y = op(x, w)
    want = torch.nn.functional.conv1d(x.view(1, 1, 8), w.view(1, 1, 3), padding=1).view(-1)[:7]
    assert y.shape == (7,)
    torch.testing.assert_close(y, want)
    assert torch.autograd.gradcheck(op, (x, w))
    # A guard on both ends and sizes= give the "same" padding.
    same = neoflow.op("Y[p] += where(p + r >= 1 && p + r <= 8, X[p + r - 1], 0.0) * W[r]", name="pad_same")
    want = torch.nn.functional.conv1d(x.view(1, 1, 8), w.view(1, 1, 3), padding=1).view(-1)
    torch.testing.assert_close(same(x, w, sizes={"p": 8}), want)


def test_an_index_nothing_bounds_still_asks_for_its_size():
    op = neoflow.op("Y[i] = where(i < 4, A[i % 2], 0.0)", name="unbounded")
    with pytest.raises(neoflow.Error, match="cannot infer the range of index i .*indexes no dimension plainly"):
        op(torch.randn(4))


def test_an_index_its_guards_leave_unbounded_takes_the_dimension_it_reads():
    """Tensor Comprehensions' rule: upper-triangular U[i, k] under k >= i gives i the extent of U's rows."""
    op = neoflow.op("Y[i, j] += where(k >= i, U[i, k], 0.0) * B[k, j]")
    u, b = torch.randn(5, 5, dtype=torch.float64), torch.randn(5, 3, dtype=torch.float64)
    torch.testing.assert_close(op(u, b), u.triu() @ b)
