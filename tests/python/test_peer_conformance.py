"""The peers' operators (peer_table.py: Tensor Comprehensions' docs and tests,
TVM's te autodiff tests) match plain PyTorch forward, in float64 and float32,
and pass gradcheck in float64."""

import neoflow
import pytest
import torch
from conftest import tol
from peer_table import NOT_EXPRESSIBLE, PEERS, resolve

D = torch.float64
IDS = [p.name for p in PEERS]


def _inputs(peer, dtype):
    g = torch.Generator().manual_seed(sum(map(ord, peer.name)))
    return [t.to(dtype) for t in peer.make(g)]


def _build(peer, tensors):
    consts = resolve(peer.consts, tensors)
    sizes = resolve(peer.sizes, tensors)
    op = neoflow.op(peer.text, name=peer.name, consts=consts, inputs=peer.inputs, outputs=peer.outputs)
    return op, sizes


def _as_tuple(x):
    return x if isinstance(x, tuple) else (x,)


@pytest.mark.parametrize("peer", PEERS, ids=IDS)
def test_forward_matches_pytorch(peer, dtype):
    tensors = _inputs(peer, dtype)
    op, sizes = _build(peer, tensors)
    got = _as_tuple(op(*tensors, sizes=sizes))
    want = _as_tuple(peer.ref(*[t.to(D) for t in tensors]))
    assert len(got) == len(want), f"{len(got)} outputs, want {len(want)}"
    t = tol(dtype) if dtype == D or peer.tol32 is None else peer.tol32
    for k, (g, w) in enumerate(zip(got, want)):
        assert g.dtype == dtype
        assert g.shape == w.shape, f"output {k}: shape {tuple(g.shape)}, want {tuple(w.shape)}"
        torch.testing.assert_close(g, w.to(dtype), **t, msg=lambda m, k=k: f"output {k}: {m}")


@pytest.mark.parametrize("peer", PEERS, ids=IDS)
def test_gradient(peer):
    tensors = _inputs(peer, D)
    leaves = [t if i in peer.nograd else t.detach().requires_grad_(True) for i, t in enumerate(tensors)]
    op, sizes = _build(peer, leaves)
    if peer.grad == "check":
        assert torch.autograd.gradcheck(lambda *t: op(*t, sizes=sizes), leaves)
        return
    # a piecewise-constant output (an index, a count, a comparison): its gradient is zero
    assert peer.grad == "zero"
    outs = _as_tuple(op(*leaves, sizes=sizes))
    wrt = [t for t in leaves if t.requires_grad]
    grads = torch.autograd.grad(outs, wrt, [torch.ones_like(o) for o in outs], allow_unused=True)
    for t, gr in zip(wrt, grads):
        assert gr is None or torch.equal(gr, torch.zeros_like(t)), gr


def test_not_expressible_is_listed_once():
    names = [n for n, _, _ in NOT_EXPRESSIBLE]
    assert len(set(names)) == len(names)
    assert not set(names) & set(IDS)
    assert all(source and reason for _, source, reason in NOT_EXPRESSIBLE)


# What NOT_EXPRESSIBLE says neoflow rejects, tried: if one of these starts to
# work, the entry belongs in the table instead.
REJECTED = [
    # A gather needs an integer index tensor; the float inputs this test passes are refused by name.
    ("gather", "A[i] = B[C[i]]", {}, [3, 3], "C is read as an index, so it must be an int32 or int64 tensor"),
    ("nextafter", "O[i] = nextafter(I[i], J[i])", {}, [3, 3], "unknown function nextafter"),
    ("int cast", "O[i] = int(I[i])", {}, [3], "unknown function int"),
    (
        "modulo by an index",
        "O[n,h] += I[n, k % c, h + r] * W[k, r]",
        {"sizes": {"c": 2}},
        [(2, 3, 4), (3, 2)],
        "positive integer constant",
    ),
    ("unread input", "B[i] = A[]", {"inputs": ["A", "C"], "sizes": {"i": 3}}, [(), ()], "never read"),
    ("writes its input", "A[i] = A[i] + 42", {}, [3], "also reads it"),
    ("no range", "O[i,j,k,l,m] = I[j,i,k,i,l]", {}, [(2, 2, 2, 2, 2)], "cannot infer the range of index m"),
]


@pytest.mark.parametrize("what,text,kw,shapes,match", REJECTED, ids=[r[0] for r in REJECTED])
def test_not_expressible_is_rejected(what, text, kw, shapes, match):
    kw = dict(kw)
    sizes = kw.pop("sizes", None)
    with pytest.raises(neoflow.Error, match=match):
        op = neoflow.op(text, **kw)
        op(*[torch.ones(s, dtype=D) for s in shapes], sizes=sizes)


def test_no_inputs_is_rejected():
    with pytest.raises((ValueError, neoflow.Error), match="at least one input"):
        neoflow.op("O[i] = 3.0", sizes={"i": 3})()


def test_double_backward_of_a_gradient_op():
    # An op with tensors A and d_A (TC's hand-written gradient ops): its first
    # gradient takes input d_d_A, so the second names its own d_A's gradient
    # d_d_A_1 (it failed with "the gradient op needs the name d_d_A ...").
    small = neoflow.op("d_A[i] = A[i] * A[i]")
    a = torch.randn(3, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradgradcheck(small, (a,))
    peer = next(p for p in PEERS if p.name == "tc_matmul_grad")
    leaves = [t.requires_grad_(True) for t in _inputs(peer, D)]
    op, sizes = _build(peer, leaves)
    assert torch.autograd.gradgradcheck(lambda *t: op(*t, sizes=sizes), leaves, fast_mode=True)
