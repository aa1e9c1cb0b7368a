"""torch.func over neoflow ops, on the CPU and on CUDA: grad, jacrev, vmap(grad) and second derivatives
by jacrev(jacrev) against PyTorch's own ops in float64 (forward mode: test_forward_mode.py)."""

import neoflow
import pytest
import torch


@pytest.fixture
def f64(device):
    return dict(dtype=torch.float64, device=device)


@pytest.fixture(scope="module")
def ops():
    return {
        "gate": neoflow.op("Y[i] = tanh(X[i]) * W[i]", name="func_gate"),
        "mm": neoflow.op("C[i,j] += A[i,k] * B[k,j]", name="func_mm"),
        # two outputs, a temporary kept for the gradient, a size
        "cell": neoflow.op(
            "G[b,g] += W[g,k] * X[b,k]\nCn[b,u] = C[b,u] + tanh(G[b,u]) * sigmoid(G[b,N+u])\nHn[b,u] = tanh(Cn[b,u])",
            name="func_cell",
            inputs=["W", "X", "C"],
            outputs=["Cn", "Hn"],
            sizes={"u": 3},
            N=3,
        ),
    }


def cell_ref(w, x, c):
    g = x @ w.T
    cn = c + torch.tanh(g[:, :3]) * torch.sigmoid(g[:, 3:])
    return cn, torch.tanh(cn)


def test_grad(ops, f64):
    x, w = torch.randn(6, **f64), torch.randn(6, **f64)
    got = torch.func.grad(lambda x, w: ops["gate"](x, w).sum(), argnums=(0, 1))(x, w)
    want = torch.func.grad(lambda x, w: (torch.tanh(x) * w).sum(), argnums=(0, 1))(x, w)
    for g, r in zip(got, want):
        torch.testing.assert_close(g, r)


def test_jacrev(ops, f64):
    a, b = torch.randn(3, 4, **f64), torch.randn(4, 2, **f64)
    got = torch.func.jacrev(ops["mm"], argnums=(0, 1))(a, b)
    want = torch.func.jacrev(torch.mm, argnums=(0, 1))(a, b)
    for g, r in zip(got, want):
        torch.testing.assert_close(g, r)


def test_jacrev_of_a_two_output_op_with_a_kept_temporary(ops, f64):
    w, x, c = torch.randn(6, 4, **f64), torch.randn(2, 4, **f64), torch.randn(2, 3, **f64)
    got = torch.func.jacrev(ops["cell"], argnums=(0, 1, 2))(w, x, c)
    want = torch.func.jacrev(cell_ref, argnums=(0, 1, 2))(w, x, c)
    for go, ro in zip(got, want):  # per output, per input
        for g, r in zip(go, ro):
            torch.testing.assert_close(g, r)


def test_per_sample_gradients_by_vmap_of_grad(ops, f64):
    xs, w = torch.randn(5, 6, **f64), torch.randn(6, **f64)

    def loss(f):
        return lambda x, w: (f(x, w) ** 2).sum()

    got = torch.func.vmap(torch.func.grad(loss(ops["gate"]), argnums=1), in_dims=(0, None))(xs, w)
    want = torch.func.vmap(torch.func.grad(loss(lambda x, w: torch.tanh(x) * w), argnums=1), in_dims=(0, None))(xs, w)
    torch.testing.assert_close(got, want)


def test_second_derivative_by_jacrev_of_jacrev(ops, f64):
    x, w = torch.randn(4, **f64), torch.randn(4, **f64)
    got = torch.func.jacrev(torch.func.jacrev(lambda x: ops["gate"](x, w).sum()))(x)
    want = torch.func.jacrev(torch.func.jacrev(lambda x: (torch.tanh(x) * w).sum()))(x)
    torch.testing.assert_close(got, want)
