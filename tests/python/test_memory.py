"""The cache of freed output blocks (neoflow.memory)."""

from __future__ import annotations

import gc

import neoflow
import pytest
import torch
from neoflow import memory

BIG = (256, 256)  # 256 KiB of float32: cached
SMALL = (8, 8)  # plain torch.empty


@pytest.fixture(autouse=True)
def fresh_cache():
    memory.set_limit(1024)
    memory.empty_cache()
    yield
    memory.set_limit(1024)
    memory.empty_cache()


def test_a_freed_block_is_handed_out_again():
    a = memory.empty(BIG, torch.float32)
    ptr = a.data_ptr()
    assert ptr % 64 == 0
    del a
    stats = memory.memory_stats()
    assert stats["cached_blocks"] == 1 and stats["cached_bytes"] == 256 * 256 * 4
    b = memory.empty(BIG, torch.float32)
    assert b.data_ptr() == ptr
    assert memory.memory_stats()["hits"] >= 1
    # Another dtype of the same byte size reuses it too.
    del b
    c = memory.empty((256, 128), torch.float64)
    assert c.data_ptr() == ptr and c.dtype == torch.float64 and c.shape == (256, 128)


def test_a_block_stays_taken_while_a_view_or_saved_tensor_lives():
    a = memory.empty(BIG, torch.float32)
    ptr = a.data_ptr()
    view = a[1:]
    del a
    b = memory.empty(BIG, torch.float32)
    assert b.data_ptr() != ptr  # the view still holds the first block
    del view
    c = memory.empty(BIG, torch.float32)
    assert c.data_ptr() == ptr
    del b, c


def test_small_tensors_and_a_zero_limit_bypass_the_cache():
    s = memory.empty(SMALL, torch.float32)
    s.resize_(100, 100)  # an ordinary, resizable tensor
    memory.set_limit(0)
    a = memory.empty(BIG, torch.float32)
    a.resize_(512, 512)
    del a
    assert memory.memory_stats()["cached_blocks"] == 0


def test_the_limit_bounds_what_is_kept_and_empty_cache_releases_it():
    memory.set_limit(0.3)  # room for one 256 KiB block, not two
    a, b = memory.empty(BIG, torch.float32), memory.empty(BIG, torch.float32)
    del a, b
    stats = memory.memory_stats()
    assert stats["cached_blocks"] == 1 and stats["released"] >= 1
    neoflow.empty_cache()
    assert neoflow.memory_stats()["cached_bytes"] == 0


def test_bad_limits_are_refused_by_name(monkeypatch):
    for bad in (-1, float("nan"), "10", True):
        with pytest.raises(ValueError, match="cpu_cache_mb"):
            neoflow.configure(cpu_cache_mb=bad)
    monkeypatch.setenv("NEOFLOW_CPU_CACHE_MB", "lots")
    monkeypatch.setitem(memory._state, "limit", None)
    with pytest.raises(ValueError, match="NEOFLOW_CPU_CACHE_MB='lots'"):
        memory.empty(BIG, torch.float32)


def test_outputs_on_reused_blocks_are_right_and_do_not_alias_live_ones():
    op = neoflow.op("Y[i,j] = A[i,j] * 2 + B[j]")
    a, b = torch.randn(BIG), torch.randn(BIG[1])
    first = op(a, b)
    second = op(a + 1, b)  # first is alive: a different block
    assert first.data_ptr() != second.data_ptr()
    torch.testing.assert_close(first, a * 2 + b)
    torch.testing.assert_close(second, (a + 1) * 2 + b)
    ptr = first.data_ptr()
    del first
    gc.collect()
    third = op(a - 1, b)
    assert third.data_ptr() == ptr
    torch.testing.assert_close(third, (a - 1) * 2 + b)
    torch.testing.assert_close(second, (a + 1) * 2 + b)


def test_training_steps_on_cached_blocks_give_the_same_gradients():
    op = neoflow.op("Y[n,c,p,q] += X[n,c,p+r,q+s] * W[c,r,s]")
    x = torch.randn(2, 8, 40, 40, requires_grad=True)
    w = torch.randn(8, 3, 3, requires_grad=True)
    dy = torch.randn(2, 8, 38, 38)
    grads = []
    for _ in range(3):
        x.grad = w.grad = None
        torch.autograd.backward(op(x, w), dy)
        grads.append((x.grad.clone(), w.grad.clone()))
    assert memory.memory_stats()["hits"] > 0
    for gx, gw in grads[1:]:
        torch.testing.assert_close(gx, grads[0][0], rtol=0, atol=0)
        torch.testing.assert_close(gw, grads[0][1], rtol=0, atol=0)
    ref_x, ref_w = x.detach().requires_grad_(True), w.detach().requires_grad_(True)
    ref = torch.nn.functional.conv2d(ref_x, ref_w[:, None], groups=8)
    torch.autograd.backward(ref, dy)
    torch.testing.assert_close(grads[-1][0], ref_x.grad, rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(grads[-1][1], ref_w.grad, rtol=1e-4, atol=1e-4)
