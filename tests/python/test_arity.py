"""Ops of any arity: PyTorch's operator schemas take at most 64 arguments,
so the custom op takes an op's inputs as one Tensor[] argument. Ops with
63, 64, 65 and 300 inputs, and as many outputs, run forward and backward in
eager, under torch.compile(fullgraph=True), torch.func and vmap."""

import neoflow
import pytest
import torch

TOL = dict(rtol=1e-12, atol=1e-12)


def many_inputs(n: int):
    """Y[i] = X0[i] * 1 + X1[i] * 2 + ...: n inputs, one output."""
    return neoflow.op("Y[i] = " + " + ".join(f"X{k}[i] * {k + 1}.0" for k in range(n)))


def many_outputs(n: int):
    """T{k}[i] = X[i] * X[i] + k: one input, n outputs; the gradient op has n + 1 inputs."""
    return neoflow.op("\n".join(f"T{k}[i] = X[i] * X[i] + {k}.0" for k in range(n)), inputs=["X"])


@pytest.mark.parametrize("n", [63, 64, 65, 300])
def test_many_inputs_forward_and_backward(n):
    op = many_inputs(n)
    xs = [torch.rand(5, dtype=torch.float64, requires_grad=True) for _ in range(n)]
    y = op(*xs)
    torch.testing.assert_close(y, sum(x * (k + 1) for k, x in enumerate(xs)), **TOL)
    y.sum().backward()
    for k, x in enumerate(xs):
        torch.testing.assert_close(x.grad, torch.full_like(x, k + 1.0), **TOL)


@pytest.mark.parametrize("n", [63, 64, 65, 300])
def test_many_outputs_forward_and_backward(n):
    op = many_outputs(n)
    x = torch.rand(5, dtype=torch.float64, requires_grad=True)
    ys = op(x)
    assert len(ys) == n
    torch.testing.assert_close(ys[-1], x * x + (n - 1), **TOL)
    sum(y.sum() for y in ys).backward()
    torch.testing.assert_close(x.grad, 2 * n * x.detach(), **TOL)


@pytest.mark.parametrize("n", [65, 300])
def test_many_inputs_and_outputs_under_compile_fullgraph(n):
    ins, outs = many_inputs(n), many_outputs(n)

    def f(*xs):
        return sum(y.sum() for y in outs(ins(*xs)))

    xs = [torch.rand(4, dtype=torch.float64, requires_grad=True) for _ in range(n)]
    ref = [x.detach().clone().requires_grad_(True) for x in xs]
    torch._dynamo.reset()
    got = torch.compile(f, fullgraph=True)(*xs)
    want = f(*ref)
    torch.testing.assert_close(got, want, **TOL)
    got.backward()
    want.backward()
    for a, b in zip(xs, ref):
        torch.testing.assert_close(a.grad, b.grad, **TOL)


def test_many_inputs_under_torch_func_and_vmap():
    op = many_inputs(70)
    xs = [torch.rand(3, dtype=torch.float64) for _ in range(70)]
    grads = torch.func.grad(lambda *xs: op(*xs).sum(), argnums=tuple(range(70)))(*xs)
    for k, g in enumerate(grads):
        torch.testing.assert_close(g, torch.full_like(g, k + 1.0), **TOL)
    batched = [torch.rand(2, 3, dtype=torch.float64) for _ in range(70)]
    got = torch.vmap(op)(*batched)
    torch.testing.assert_close(got, sum(x * (k + 1) for k, x in enumerate(batched)), **TOL)


def test_many_inputs_gradcheck():
    op = many_inputs(66)
    xs = [torch.rand(2, dtype=torch.float64, requires_grad=True) for _ in range(66)]
    assert torch.autograd.gradcheck(op, tuple(xs))
