"""Forward-mode derivatives of neoflow ops, from the tangent op the Go core derives: torch.func.jvp,
jacfwd, hessian (forward over reverse) and torch.autograd.forward_ad, each against PyTorch's own forward mode
on the op's plain-PyTorch reference, for every op of the op table (float64 and float32, fusion on and off),
on the CPU and on CUDA."""

import pickle

import neoflow
import pytest
import torch
import torch.autograd.forward_ad as fwAD
from conftest import tol
from ops_table import CASES, as_tuple

# torch.func.jacfwd and hessian call torch.jit.script internally.
pytestmark = pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:FutureWarning")


def _split(case, tensors):
    """The floating-point inputs (differentiated) and a function of them that closes over the integer ones."""
    floats = [k for k, t in enumerate(tensors) if t.is_floating_point()]

    def bind(f):
        def call(*xs):
            args = list(tensors)
            for k, x in zip(floats, xs):
                args[k] = x
            return as_tuple(f(*args))

        return call

    return [tensors[k] for k in floats], bind


def _reference_jvp(case, tensors, primals, tangents, bind):
    """PyTorch's forward mode on the reference; central differences where the reference's ops have none."""
    try:
        return torch.func.jvp(bind(case.reference), tuple(primals), tuple(tangents))
    except (NotImplementedError, RuntimeError) as e:
        if "forward" not in str(e).lower() and "jvp" not in str(e).lower():
            raise
    h = 1e-6
    f = bind(case.reference)
    plus = f(*[p + h * t for p, t in zip(primals, tangents)])
    minus = f(*[p - h * t for p, t in zip(primals, tangents)])
    return f(*primals), tuple((a - b) / (2 * h) for a, b in zip(plus, minus))


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_jvp_matches_pytorch(case, dtype, fusion):
    torch.manual_seed(0)
    tensors = case.inputs("test", dtype)
    op = case.op(tensors)
    sizes = case.sizes(*tensors) if case.sizes else None
    primals, bind = _split(case, tensors)
    tangents = [torch.randn_like(p) for p in primals]
    got_y, got_t = torch.func.jvp(bind(lambda *t: op(*t, sizes=sizes)), tuple(primals), tuple(tangents))
    want_y, want_t = _reference_jvp(case, tensors, primals, tangents, bind)
    assert len(got_t) == len(want_t)
    loose = {"rtol": 1e-6, "atol": 1e-6} if dtype == torch.float64 and case.positive else tol(dtype)
    for g, w in zip(got_y, want_y):
        torch.testing.assert_close(g, w, **tol(dtype))
    for k, (g, w) in enumerate(zip(got_t, want_t)):
        assert g.dtype == dtype and g.shape == w.shape
        torch.testing.assert_close(g, w.to(dtype), **loose, msg=lambda m, k=k: f"tangent of output {k}: {m}")


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_forward_ad_matches_jvp(case):
    """torch.autograd.forward_ad on dual tensors gives what torch.func.jvp gives, one input's tangent at a time."""
    torch.manual_seed(1)
    tensors = case.inputs("test", torch.float64)
    op = case.op(tensors)
    sizes = case.sizes(*tensors) if case.sizes else None
    primals, bind = _split(case, tensors)
    for j in range(len(primals)):
        tangents = [torch.randn_like(p) if k == j else torch.zeros_like(p) for k, p in enumerate(primals)]
        _, want = torch.func.jvp(bind(lambda *t: op(*t, sizes=sizes)), tuple(primals), tuple(tangents))
        with fwAD.dual_level():
            duals = [fwAD.make_dual(p, t) if k == j else p for k, (p, t) in enumerate(zip(primals, tangents))]
            outs = bind(lambda *t: op(*t, sizes=sizes))(*duals)
            got = [fwAD.unpack_dual(o).tangent for o in outs]
        for g, w in zip(got, want):
            torch.testing.assert_close(g, w, rtol=1e-12, atol=1e-12)


@pytest.fixture(scope="module")
def cell():
    # two outputs in a permuted order, one read by a later statement; a size
    return neoflow.op(
        "G[b,g] += W[g,k] * X[b,k]\nCn[b,u] = C[b,u] + tanh(G[b,u]) * sigmoid(G[b,N+u])\nHn[b,u] = tanh(Cn[b,u])",
        name="fwd_cell",
        inputs=["W", "X", "C"],
        outputs=["Hn", "Cn"],
        sizes={"u": 3},
        N=3,
    )


def cell_ref(w, x, c):
    g = x @ w.T
    cn = c + torch.tanh(g[:, :3]) * torch.sigmoid(g[:, 3:])
    return torch.tanh(cn), cn


def test_jacfwd_and_hessian_of_a_two_output_op(cell, device):
    f64 = dict(dtype=torch.float64, device=device)
    w, x, c = torch.randn(6, 4, **f64), torch.randn(2, 4, **f64), torch.randn(2, 3, **f64)
    got = torch.func.jacfwd(cell, argnums=(0, 1, 2))(w, x, c)
    want = torch.func.jacfwd(cell_ref, argnums=(0, 1, 2))(w, x, c)
    for go, ro in zip(got, want):
        for g, r in zip(go, ro):
            torch.testing.assert_close(g, r)

    def loss(f):
        return lambda w: sum((o**2).sum() for o in f(w, x, c))

    torch.testing.assert_close(torch.func.hessian(loss(cell))(w), torch.func.hessian(loss(cell_ref))(w))


def test_hessian_vector_product_and_jvp_of_jvp(device):
    f64 = dict(dtype=torch.float64, device=device)
    op = neoflow.op("Y[i] += exp(X[i, k]) * W[k] * X[i, k]", name="fwd_hvp")
    x, w, v = torch.randn(3, 4, **f64), torch.randn(4, **f64), torch.randn(3, 4, **f64)

    def hvp(f):
        return torch.func.jvp(torch.func.grad(lambda x: f(x, w).sum()), (x,), (v,))[1]

    ref = lambda x, w: (torch.exp(x) * w * x).sum(1)  # noqa: E731
    torch.testing.assert_close(hvp(op), hvp(ref))
    # forward over forward: the second directional derivative
    d2 = lambda f: torch.func.jvp(lambda x: torch.func.jvp(lambda y: f(y, w), (x,), (v,))[1], (x,), (v,))[1]  # noqa: E731
    torch.testing.assert_close(d2(op), d2(ref))


def test_forward_ad_with_backward_and_integer_outputs():
    """A dual input that also requires grad, and an integer input (no tangent)."""
    op = neoflow.op("Y[i] += X[I[i], k] * W[k]", name="fwd_gather", inputs=["X", "W", "I"])
    x, w = torch.randn(5, 3, dtype=torch.float64, requires_grad=True), torch.randn(3, dtype=torch.float64)
    i = torch.tensor([4, 0, 2, 2])
    tx = torch.randn_like(x)
    with fwAD.dual_level():
        y = op(fwAD.make_dual(x, tx), w, i)
        p, t = fwAD.unpack_dual(y)
    torch.testing.assert_close(t, tx[i] @ w)
    p.sum().backward()
    torch.testing.assert_close(x.grad, torch.zeros_like(x).index_add_(0, i, w.expand(4, 3)))


def test_explain_jvp():
    op = neoflow.op("Y[i] max= X[i, k] * W[k]", name="fwd_explain")
    x, w = torch.randn(3, 4), torch.randn(4)
    text = op.explain_jvp(x, w)
    assert "# inputs: X, W, t_X, t_W" in text and "# outputs: t_Y" in text
    assert "arg_Y[i] min=" in text and "t_Y[i] += where(" in text and "tangent of statement 1" in text
    top, sizes = op.tangent_op(x, w, wrt=[True, False])
    assert list(top.inputs) == ["X", "W", "t_X"] and list(top.outputs) == ["t_Y"]
    tx = torch.randn(3, 4)
    got = top(x, w, tx, sizes=sizes)
    k = (x * w).argmax(1)
    torch.testing.assert_close(got, (tx * w)[torch.arange(3), k])


def test_tangent_op_bad_input():
    op = neoflow.op("Y[i] = X[i] * 2.0", name="fwd_bad")
    with pytest.raises(neoflow.Error, match="selects no input"):
        op.tangent_op(torch.randn(3), wrt=[False])
    with pytest.raises(ValueError, match="input X must have 1 dimensions"):
        op.tangent_op(torch.randn(3, 2))
    top, sizes = op.tangent_op(torch.randn(3))
    with pytest.raises(TypeError, match=r"takes 2 inputs \(X, t_X\), got 1"):  # the tangent left out
        top(torch.randn(3), sizes=sizes)


def test_forward_ad_through_a_backward_without_a_graph():
    """The gradient of a dual input, taken without create_graph: the saving gradient op would read kept temporaries
    whose tangents are zeros, so the recomputing one runs (the tangent of the gradient is a Hessian-vector product)."""
    op = neoflow.op("T[i] += X[i, k] * W[k]\nY[i] = tanh(T[i]) * T[i]", name="fwd_kept")
    x, w, v = (torch.randn(3, 4, dtype=torch.float64), torch.randn(4, dtype=torch.float64), torch.randn(3, 4))

    def hvp(f):
        with fwAD.dual_level():
            xd = fwAD.make_dual(x.clone().requires_grad_(), v.double())
            (g,) = torch.autograd.grad(f(xd, w).sum(), xd)
            return fwAD.unpack_dual(g).tangent

    def ref(x, w):
        t = x @ w
        return torch.tanh(t) * t

    torch.testing.assert_close(hvp(op), hvp(ref))


def test_explain_jvp_lists_outputs_that_later_statements_read(cell):
    w, x, c = torch.randn(6, 4), torch.randn(2, 4), torch.randn(2, 3)
    assert "# outputs: t_Hn, t_Cn" in cell.explain_jvp(w, x, c)
    top, _ = cell.tangent_op(w, x, c)
    again = pickle.loads(pickle.dumps(top))
    assert again.name == top.name == "jvp_fwd_cell" and list(again.outputs) == ["t_Hn", "t_Cn"]
