"""Outputs returned in any order, inputs given in any order: every value and
every gradient must follow the op's own order (issue: a decorated op that
returned its outputs in another order than its statements write them got
the gradients of the wrong outputs)."""

import itertools

import neoflow
import pytest
import torch

D = torch.float64

# Three outputs of different shapes and derivatives, one of them through a
# temporary, so that any mix-up of incoming gradients changes the result.
SOURCE = """
A[i, j] = X[i, j] * W[j] * 2.0
T[i, j] = exp(X[i, j]) * W[j]
B[i] += T[i, j] * 3.0
C[j] = X[0, j] * X[1, j] - W[j]
"""


def reference(x, w):
    return {
        "A": x * w * 2.0,
        "B": (torch.exp(x) * w * 3.0).sum(1),
        "C": x[0] * x[1] - w,
    }


def _inputs():
    g = torch.Generator().manual_seed(7)
    x = torch.randn(3, 4, dtype=D, generator=g).requires_grad_(True)
    w = torch.randn(4, dtype=D, generator=g).requires_grad_(True)
    return {"X": x, "W": w}


ORDERS = list(itertools.permutations("ABC"))
INPUT_ORDERS = [("X", "W"), ("W", "X")]


@pytest.mark.parametrize("inputs", INPUT_ORDERS, ids=lambda o: "".join(o))
@pytest.mark.parametrize("outputs", ORDERS, ids=lambda o: "".join(o))
def test_text_op_any_order(outputs, inputs):
    op = neoflow.op(SOURCE, outputs=list(outputs), inputs=list(inputs))
    assert op.outputs == outputs and op.inputs == inputs
    named = _inputs()
    args = [named[n] for n in inputs]
    got = op(*args)
    want = reference(named["X"], named["W"])
    for name, value in zip(outputs, got):
        torch.testing.assert_close(value, want[name])
    # Each output's gradient alone (the others' incoming gradients are None).
    for k, name in enumerate(outputs):
        out = op(*args)[k]
        g = torch.autograd.grad(out.sum() * (k + 2), args)
        r = torch.autograd.grad(reference(named["X"], named["W"])[name].sum() * (k + 2), args)
        for a, b in zip(g, r):
            torch.testing.assert_close(a, b)
    assert torch.autograd.gradcheck(lambda *t: op(*t), args)


def _decorated(order):
    """The issue's reproduction, generalized: statements write A, B, C and
    the function returns them in ``order``."""

    def fn(X, W):
        i, j = neoflow.indices("i j")
        A, T, B, C = (neoflow.tensor(n) for n in "ATBC")
        A[i, j] = X[i, j] * W[j] * 2.0
        T[i, j] = neoflow.exp(X[i, j]) * W[j]
        B[i] += T[i, j] * 3.0
        C[j] = X[0, j] * X[1, j] - W[j]
        out = {"A": A, "B": B, "C": C}
        return tuple(out[n] for n in order)

    fn.__name__ = "three_" + "".join(order)
    return neoflow.op(fn)


@pytest.mark.parametrize("outputs", ORDERS, ids=lambda o: "".join(o))
def test_decorated_op_any_order(outputs):
    op = _decorated(outputs)
    assert op.outputs == outputs
    named = _inputs()
    args = [named["X"], named["W"]]
    assert torch.autograd.gradcheck(lambda *t: op(*t), args)
    # The custom op (the torch.compile path) returns the same order and
    # takes the incoming gradients in it.
    direct = op.custom_op(list(args), "")[: len(outputs)]
    for a, b in zip(direct, op(*args)):
        torch.testing.assert_close(a, b)
    assert torch.autograd.gradcheck(lambda *t: tuple(op.custom_op(list(t), "")[:3]), args)


def test_issue_reproduction():
    @neoflow.op
    def two(X):
        i = neoflow.indices("i")
        A, B = neoflow.tensor("A"), neoflow.tensor("B")
        A[i] = X[i] * 2.0
        B[i] = X[i] * 3.0
        return B, A

    x = torch.randn(5, dtype=D, requires_grad=True)
    b, a = two(x)
    torch.testing.assert_close(b, 3 * x)
    torch.testing.assert_close(torch.autograd.grad(b.sum(), x, retain_graph=True)[0], torch.full_like(x, 3.0))
    torch.testing.assert_close(torch.autograd.grad(a.sum(), x)[0], torch.full_like(x, 2.0))


@pytest.mark.parametrize("wrt", [(True, False), (False, True), (True, True)], ids=str)
@pytest.mark.parametrize("outputs", [("C", "A", "B"), ("B", "C", "A")], ids=lambda o: "".join(o))
def test_partial_wrt_with_permuted_outputs(outputs, wrt):
    op = neoflow.op(SOURCE, outputs=list(outputs))
    named = _inputs()
    args = [named["X"].detach().requires_grad_(wrt[0]), named["W"].detach().requires_grad_(wrt[1])]
    weights = [1.0, -2.0, 0.5]
    loss = sum(w * o.sum() for w, o in zip(weights, op(*args)))
    ref = reference(*args)
    want = sum(w * ref[n].sum() for w, n in zip(weights, outputs))
    need = [a for a in args if a.requires_grad]
    for g, r in zip(torch.autograd.grad(loss, need), torch.autograd.grad(want, need)):
        torch.testing.assert_close(g, r)


@pytest.mark.parametrize(
    "outputs, message",
    [
        (["A", "B"], "leaves out output C"),
        (["A", "B", "C", "A"], "output A is listed twice"),
        (["A", "B", "C", "X"], "X is not an output"),
    ],
)
def test_bad_output_lists(outputs, message):
    with pytest.raises(neoflow.Error, match=message):
        neoflow.op(SOURCE, outputs=outputs)


def test_decorated_returning_a_tensor_a_later_statement_reads():
    # T is an output that Y reads; its gradient is the caller's plus what Y sends back.
    def fn(X):
        i = neoflow.indices("i")
        T, Y = neoflow.tensor("T"), neoflow.tensor("Y")
        T[i] = X[i] * 2.0
        Y[i] = T[i] * T[i] + 1.0
        return Y, T

    op = neoflow.op(fn)
    assert op.outputs == ("Y", "T")
    x = torch.randn(5, dtype=torch.float64, requires_grad=True)
    y, t = op(x)
    torch.testing.assert_close(t, x * 2)
    torch.testing.assert_close(y, (x * 2) ** 2 + 1)
    assert torch.autograd.gradcheck(lambda x: op(x), [x])
    assert torch.autograd.gradgradcheck(lambda x: op(x), [x])
