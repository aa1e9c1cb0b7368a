"""An MI-LSTM written with a neoflow op trains for 50 steps on synthetic
sequences, in lockstep with the same model in plain PyTorch."""

import neoflow
import torch

D = torch.float64
B, T, IN, HID = 8, 6, 5, 7

# One MI-LSTM step (Wu et al.): the gates are phi(Wx ⊙ Uh + b), in the order
# input, forget, output, candidate.
MILSTM_CELL = neoflow.op(
    "WX[b,g] += W[g,k] * X[b,k]\n"
    "UH[b,g] += U[g,k] * H[b,k]\n"
    "P[b,g] = WX[b,g] * UH[b,g] + Bias[g]\n"
    "Cn[b,u] = sigmoid(P[b,N+u]) * C[b,u] + sigmoid(P[b,u+0]) * tanh(P[b,3*N+u])\n"
    "Hn[b,u] = sigmoid(P[b,2*N+u]) * tanh(sigmoid(P[b,N+u]) * C[b,u] + sigmoid(P[b,u+0]) * tanh(P[b,3*N+u]))",
    name="milstm_cell",
    inputs=["W", "X", "U", "H", "Bias", "C"],
    N=HID,
)


def torch_cell(w, x, u, h, bias, c):
    p = (x @ w.T) * (h @ u.T) + bias
    i, f, o, g = p.chunk(4, 1)
    cn = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
    return cn, torch.sigmoid(o) * torch.tanh(cn)


class MILSTM(torch.nn.Module):
    def __init__(self, cell):
        super().__init__()
        g = torch.Generator().manual_seed(1)
        self.w = torch.nn.Parameter(torch.randn(4 * HID, IN, dtype=D, generator=g) * 0.4)
        self.u = torch.nn.Parameter(torch.randn(4 * HID, HID, dtype=D, generator=g) * 0.4)
        self.bias = torch.nn.Parameter(torch.zeros(4 * HID, dtype=D))
        self.head = torch.nn.Parameter(torch.randn(HID, 1, dtype=D, generator=g) * 0.4)
        self.cell = cell

    def forward(self, xs):
        h = torch.full((B, HID), 0.1, dtype=D)
        c = torch.zeros(B, HID, dtype=D)
        for t in range(T):
            c, h = self.cell(self.w, xs[:, t], self.u, h, self.bias, c)
        return h @ self.head


def test_milstm_trains_in_lockstep_with_pytorch():
    g = torch.Generator().manual_seed(0)
    xs = torch.randn(B, T, IN, dtype=D, generator=g)
    target = xs.sum((1, 2)).unsqueeze(1).tanh()
    nf, pt = MILSTM(MILSTM_CELL), MILSTM(torch_cell)
    pt.load_state_dict(nf.state_dict())
    opt_nf = torch.optim.Adam(nf.parameters(), lr=0.03)
    opt_pt = torch.optim.Adam(pt.parameters(), lr=0.03)
    losses = []
    for step in range(50):
        outs, grads = [], []
        for model, opt in ((nf, opt_nf), (pt, opt_pt)):
            opt.zero_grad()
            out = model(xs)
            loss = torch.nn.functional.mse_loss(out, target)
            loss.backward()
            outs.append((out.detach(), loss.item()))
            grads.append([p.grad.clone() for p in model.parameters()])
            opt.step()
        if step % 5 == 0 or step == 49:
            torch.testing.assert_close(outs[0][0], outs[1][0], msg=f"outputs differ at step {step}")
            for a, b in zip(*grads):
                torch.testing.assert_close(a, b, msg=f"gradients differ at step {step}")
        losses.append(outs[0][1])
    assert losses[-1] < 0.5 * losses[0], losses
