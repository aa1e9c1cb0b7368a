"""neoflow.nn: Linear and LSTMCell against PyTorch's modules (forward, backward, gradcheck in float64, state
dicts both ways), and swap on models whose outputs must not change."""

import neoflow
import neoflow.nn as nnf
import pytest
import torch

D = torch.float64


def test_linear_matches_torch_and_shares_its_state_dict():
    ref = torch.nn.Linear(7, 5, dtype=D)
    lin = nnf.Linear.from_torch(ref)
    x = torch.randn(2, 3, 7, dtype=D, requires_grad=True)
    torch.testing.assert_close(lin(x), ref(x))
    g = torch.randn(2, 3, 5, dtype=D)
    got = torch.autograd.grad(lin(x), [x, lin.weight, lin.bias], g)
    want = torch.autograd.grad(ref(x), [x, ref.weight, ref.bias], g)
    for a, b in zip(got, want):
        torch.testing.assert_close(a, b)
    assert torch.autograd.gradcheck(lin, (torch.randn(4, 7, dtype=D, requires_grad=True),))
    back = torch.nn.Linear(7, 5, dtype=D)
    back.load_state_dict(lin.state_dict())
    torch.testing.assert_close(back(x), ref(x))
    nobias = nnf.Linear(4, 3, bias=False, dtype=D)
    torch.testing.assert_close(nobias(torch.ones(2, 4, dtype=D)), torch.ones(2, 4, dtype=D) @ nobias.weight.T)


@pytest.mark.parametrize("bias", [True, False])
def test_lstm_cell_matches_torch(bias):
    ref = torch.nn.LSTMCell(6, 4, bias=bias, dtype=D)
    cell = nnf.LSTMCell.from_torch(ref)
    x = torch.randn(3, 6, dtype=D, requires_grad=True)
    h, c = torch.randn(3, 4, dtype=D, requires_grad=True), torch.randn(3, 4, dtype=D, requires_grad=True)
    got, want = cell(x, (h, c)), ref(x, (h, c))
    for a, b in zip(got, want):
        torch.testing.assert_close(a, b)
    gs = [torch.randn_like(o) for o in got]
    grads = torch.autograd.grad(got, [x, h, c, *cell.parameters()], gs)
    refs = torch.autograd.grad(want, [x, h, c, *ref.parameters()], gs)
    for a, b in zip(grads, refs):
        torch.testing.assert_close(a, b)
    assert torch.autograd.gradcheck(lambda a, b, d: cell(a, (b, d)), (x, h, c))
    for a, b in zip(cell(x[0]), ref(x[0])):  # unbatched, zero state
        torch.testing.assert_close(a, b)
    assert set(cell.state_dict()) == set(ref.state_dict())


class Seq(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = torch.nn.LSTMCell(5, 8)
        self.head = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3))

    def forward(self, xs):
        h = c = xs.new_zeros(xs.shape[1], 8)
        for x in xs:
            h, c = self.rnn(x, (h, c))
        return self.head(h)


def test_swap_keeps_the_outputs_and_trains():
    torch.manual_seed(1)
    model = Seq().double()
    xs = torch.randn(4, 2, 5, dtype=D)
    before = model(xs)
    model = neoflow.nn.swap(model)
    assert model.neoflow_swapped == ["rnn", "head.0", "head.2"]
    assert isinstance(model.rnn, nnf.LSTMCell) and isinstance(model.head[2], nnf.Linear)
    torch.testing.assert_close(model(xs), before)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loss = model(xs).square().sum()
    loss.backward()
    opt.step()
    assert model(xs).square().sum() < loss


def test_swap_by_name_and_nothing_to_swap():
    model = Seq()
    neoflow.nn.swap(model, names="head.*")
    assert model.neoflow_swapped == ["head.0", "head.2"] and isinstance(model.rnn, torch.nn.LSTMCell)
    plain = torch.nn.Sequential(torch.nn.ReLU())
    assert neoflow.nn.swap(plain).neoflow_swapped == [] and isinstance(plain[0], torch.nn.ReLU)
    assert isinstance(neoflow.nn.swap(torch.nn.Linear(3, 2)), nnf.Linear)
    with pytest.raises(TypeError, match="mapping keys must be torch.nn.Module classes"):
        neoflow.nn.swap(model, {"Linear": nnf.Linear})
    with pytest.raises(TypeError, match="has no from_torch"):
        neoflow.nn.swap(model, {torch.nn.ReLU: torch.nn.GELU})


def test_modules_print_their_expression():
    lin = nnf.Linear(3, 2)
    assert "in_features=3" in repr(lin) and "op: T[b, o] += X[b, i] * W[o, i]; Y[b, o] = T[b, o] + Bias[o]" in repr(lin)
    assert "sigmoid(A[b, u + N])" in repr(nnf.LSTMCell(2, 3))


def _milstm(cell, x, h, c):
    p = (x @ cell.w.T) * (h @ cell.u.T) + cell.bias
    i, f, o, g = p.chunk(4, 1)
    cn = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
    return torch.sigmoid(o) * torch.tanh(cn), cn


def _sublstm(cell, x, h, c):
    i, f, z, o = torch.sigmoid(x @ cell.w.T + h @ cell.r.T + cell.bias).chunk(4, 1)
    cn = f * c + z - i
    return torch.sigmoid(cn) - o, cn


def _lltm(cell, x, h, c):
    i, o, g = (torch.cat([h, x], 1) @ cell.weights.T + cell.bias).chunk(3, 1)
    cn = c + torch.nn.functional.elu(g) * torch.sigmoid(i)
    return torch.tanh(cn) * torch.sigmoid(o), cn


def _scrnn(cell, x, h, s):
    sn = (1 - cell.alpha) * (x @ cell.b_ctx.T) + cell.alpha * s
    return torch.sigmoid(sn @ cell.p.T + x @ cell.a.T + h @ cell.r.T), sn


@pytest.mark.parametrize(
    "make,ref,second",
    [
        (lambda: nnf.MILSTMCell(5, 4, dtype=D), _milstm, 4),
        (lambda: nnf.SubLSTMCell(5, 4, dtype=D), _sublstm, 4),
        (lambda: nnf.LLTMCell(5, 4, dtype=D), _lltm, 4),
        (lambda: nnf.SCRNNCell(5, 4, 3, alpha=0.9, dtype=D), _scrnn, 3),
    ],
    ids=["milstm", "sublstm", "lltm", "scrnn"],
)
def test_workload_cells_match_their_pytorch_formulas(make, ref, second):
    torch.manual_seed(3)
    cell = make()
    x = torch.randn(3, 5, dtype=D, requires_grad=True)
    h = torch.randn(3, 4, dtype=D, requires_grad=True)
    s = torch.randn(3, second, dtype=D, requires_grad=True)
    got, want = cell(x, (h, s)), ref(cell, x, h, s)
    for a, b in zip(got, want):
        torch.testing.assert_close(a, b)
    assert torch.autograd.gradcheck(lambda a, b, d: cell(a, (b, d)), (x, h, s))
    zero = cell(x)  # hx None: zero state
    for a, b in zip(zero, ref(cell, x, torch.zeros(3, 4, dtype=D), torch.zeros(3, second, dtype=D))):
        torch.testing.assert_close(a, b)
    bounds = [p.abs().max().item() for p in cell.parameters()]
    assert all(0 < b <= 1 for b in bounds)
    assert "op: " in repr(cell)
