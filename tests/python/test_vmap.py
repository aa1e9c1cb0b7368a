"""torch.vmap over ops: the batching rule adds a batch index to the op's expression (batched inputs and
every written tensor) and runs the batched op once; results match a loop over the batch, for batch
dimensions anywhere, unbatched inputs, several outputs and statements, and autograd through the vmap;
on the CPU and on CUDA."""

import neoflow
import pytest
import torch

MM = "C[i,j] += A[i,k] * B[k,j]"


@pytest.mark.parametrize("in_dims", [(0, None), (None, 2), (1, 0)], ids=["A0", "B2", "A1-B0"])
def test_vmap_matches_a_loop(in_dims, device):
    op = neoflow.op(MM, name="vmap_mm")
    g = torch.Generator().manual_seed(0)
    per = [(3, 4), (4, 6)]
    args = []
    for shape, d in zip(per, in_dims):
        if d is None:
            args.append(torch.randn(*shape, generator=g, dtype=torch.float64).to(device))
        else:
            full = list(shape)
            full.insert(d, 5)
            args.append(torch.randn(*full, generator=g, dtype=torch.float64).to(device))
    got = torch.vmap(op, in_dims=in_dims)(*args)
    want = torch.stack([op(*[a if d is None else a.select(d, n) for a, d in zip(args, in_dims)]) for n in range(5)])
    torch.testing.assert_close(got, want)


def test_vmap_of_several_statements_and_outputs(device):
    op = neoflow.op(
        "M[b] max= X[b,j]\nE[b,j] = exp(X[b,j] - M[b])\nS[b] += E[b,j]\nY[b,j] = E[b,j] / S[b] * W[j]",
        name="vmap_softmax",
        outputs=["Y", "S"],
    )
    x, w = torch.randn(4, 3, 6, dtype=torch.float64, device=device), torch.randn(6, dtype=torch.float64, device=device)
    y, s = torch.vmap(op, in_dims=(0, None))(x, w)
    for n in range(4):
        yn, sn = op(x[n], w)
        torch.testing.assert_close(y[n], yn)
        torch.testing.assert_close(s[n], sn)


def test_backward_through_vmap(device):
    op = neoflow.op(MM, name="vmap_grad")
    a = torch.randn(5, 3, 4, dtype=torch.float64, device=device, requires_grad=True)
    b = torch.randn(4, 6, dtype=torch.float64, device=device, requires_grad=True)
    torch.vmap(op, in_dims=(0, None))(a, b).sum().backward()
    a2, b2 = a.detach().clone().requires_grad_(), b.detach().clone().requires_grad_()
    (a2 @ b2).sum().backward()
    torch.testing.assert_close(a.grad, a2.grad)
    torch.testing.assert_close(b.grad, b2.grad)


def test_vmap_keeps_named_constants(device):
    op = neoflow.op("Y[i] = X[i * S] * c", name="vmap_consts", S=2, c=1.5)
    x = torch.randn(3, 8, dtype=torch.float64, device=device)
    torch.testing.assert_close(torch.vmap(op)(x), x[:, ::2] * 1.5)
