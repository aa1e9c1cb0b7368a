"""The paper's RNN workloads: MI-LSTM, SC-RNN, subLSTM and LLTM.

Each workload has a plain-PyTorch baseline and a neoflow version with the same
parameters (names and shapes), so ``neoflow_model.load_state_dict(baseline.state_dict())``
works. Both run a sequence of cell steps and end in a linear head giving one
regression output per example. In the neoflow version the whole cell step is
one neoflow op with several statements; the sequence loop, head and loss stay
plain PyTorch. Inputs are laid out (seq_len, batch, input_size). A cell's
new hidden state reads its new cell state (an output a later statement
reads, named in ``outputs=``) instead of computing it again.
"""

import math

import torch
import torch.nn.functional as F
from neoflow.cells import lltm_op, milstm_op, scrnn_op, sublstm_op  # the cells' ops (neoflow.nn has them as modules)
from torch import nn

from .config import RNNConfig

# ---------------------------------------------------------------- models


def _uniform(gen, dtype, bound, *shape):
    return nn.Parameter((torch.rand(*shape, dtype=dtype, generator=gen) * 2 - 1) * bound)


class _RNN(nn.Module):
    """Shared parameters, sequence loop and head; subclasses give ``cell``."""

    def __init__(self, cfg: RNNConfig, dtype=torch.float64, seed=0):
        super().__init__()
        self.cfg = cfg
        self.dtype = dtype
        gen = torch.Generator().manual_seed(seed)
        self._init_params(gen)
        head_in = cfg.hidden + cfg.context
        self.head_w = _uniform(gen, dtype, 1 / math.sqrt(head_in), head_in)
        self.head_b = nn.Parameter(torch.zeros((), dtype=dtype))

    def init_state(self, batch):
        z = torch.zeros(batch, self.cfg.hidden, dtype=self.dtype, device=self.head_w.device)
        return (z, z.clone())

    def readout(self, state):
        return state[0]

    def forward(self, xs):
        state = self.init_state(xs.shape[1])
        for t in range(xs.shape[0]):
            state = self.cell(xs[t], state)
        return self.readout(state) @ self.head_w + self.head_b


class _MILSTM(_RNN):
    def _init_params(self, gen):
        c, d = self.cfg, self.dtype
        k = 1 / math.sqrt(c.hidden)
        self.w = _uniform(gen, d, k, 4 * c.hidden, c.input_size)
        self.u = _uniform(gen, d, k, 4 * c.hidden, c.hidden)
        self.bias = _uniform(gen, d, k, 4 * c.hidden)

    def init_state(self, batch):
        # h0 = 0 would zero U h and the gates' dependence on x in the first step
        h = torch.full((batch, self.cfg.hidden), 0.1, dtype=self.dtype, device=self.head_w.device)
        return (h, torch.zeros_like(h))


class MILSTMBaseline(_MILSTM):
    def cell(self, x, state):
        h, c = state
        p = (x @ self.w.T) * (h @ self.u.T) + self.bias
        i, f, o, g = p.chunk(4, 1)
        cn = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        return torch.sigmoid(o) * torch.tanh(cn), cn


class MILSTMNeoflow(_MILSTM):
    def cell(self, x, state):
        h, c = state
        cn, hn = milstm_op(self.cfg.hidden)(self.w, x, self.u, h, self.bias, c)
        return hn, cn


class _SCRNN(_RNN):
    def _init_params(self, gen):
        c, d = self.cfg, self.dtype
        k = 1 / math.sqrt(c.hidden)
        self.b_ctx = _uniform(gen, d, 1 / math.sqrt(c.input_size), c.context, c.input_size)
        self.p = _uniform(gen, d, 1 / math.sqrt(c.context), c.hidden, c.context)
        self.a = _uniform(gen, d, k, c.hidden, c.input_size)
        self.r = _uniform(gen, d, k, c.hidden, c.hidden)

    def init_state(self, batch):
        return (
            torch.zeros(batch, self.cfg.hidden, dtype=self.dtype, device=self.head_w.device),
            torch.zeros(batch, self.cfg.context, dtype=self.dtype, device=self.head_w.device),
        )

    def readout(self, state):
        return torch.cat(state, 1)  # the output reads both h and the context s


class SCRNNBaseline(_SCRNN):
    def cell(self, x, state):
        h, s = state
        a = self.cfg.alpha
        sn = (1 - a) * (x @ self.b_ctx.T) + a * s
        return torch.sigmoid(sn @ self.p.T + x @ self.a.T + h @ self.r.T), sn


class SCRNNNeoflow(_SCRNN):
    def cell(self, x, state):
        h, s = state
        hn, sn = scrnn_op(self.cfg.alpha)(self.b_ctx, x, s, self.p, self.a, self.r, h)
        return hn, sn


class _SubLSTM(_RNN):
    def _init_params(self, gen):
        c, d = self.cfg, self.dtype
        k = 1 / math.sqrt(c.hidden)
        self.w = _uniform(gen, d, k, 4 * c.hidden, c.input_size)
        self.r = _uniform(gen, d, k, 4 * c.hidden, c.hidden)
        self.bias = _uniform(gen, d, k, 4 * c.hidden)


class SubLSTMBaseline(_SubLSTM):
    def cell(self, x, state):
        h, c = state
        s = torch.sigmoid(x @ self.w.T + h @ self.r.T + self.bias)
        i, f, z, o = s.chunk(4, 1)
        cn = f * c + z - i
        return torch.sigmoid(cn) - o, cn


class SubLSTMNeoflow(_SubLSTM):
    def cell(self, x, state):
        h, c = state
        cn, hn = sublstm_op(self.cfg.hidden)(self.w, x, self.r, h, self.bias, c)
        return hn, cn


class _LLTM(_RNN):
    def _init_params(self, gen):
        c, d = self.cfg, self.dtype
        k = 1 / math.sqrt(c.hidden)
        # as in the tutorial: one weight over X = [h, x]
        self.weights = _uniform(gen, d, k, 3 * c.hidden, c.hidden + c.input_size)
        self.bias = _uniform(gen, d, k, 3 * c.hidden)


class LLTMBaseline(_LLTM):
    def cell(self, x, state):
        h, c = state
        gates = torch.cat([h, x], 1) @ self.weights.T + self.bias
        i, o, g = gates.chunk(3, 1)
        cn = c + F.elu(g) * torch.sigmoid(i)
        return torch.tanh(cn) * torch.sigmoid(o), cn


class LLTMNeoflow(_LLTM):
    def cell(self, x, state):
        h, c = state
        cn, hn = lltm_op(self.cfg.hidden)(self.weights, h, x, self.bias, c)
        return hn, cn


MODELS = {
    "milstm": (MILSTMBaseline, MILSTMNeoflow),
    "scrnn": (SCRNNBaseline, SCRNNNeoflow),
    "sublstm": (SubLSTMBaseline, SubLSTMNeoflow),
    "lltm": (LLTMBaseline, LLTMNeoflow),
}


def make_models(name: str, cfg: RNNConfig, dtype=torch.float64, seed=0):
    """(baseline, neoflow) models for workload ``name`` with identical parameters."""
    base_cls, nf_cls = MODELS[name]
    base = base_cls(cfg, dtype=dtype, seed=seed)
    nf = nf_cls(cfg, dtype=dtype, seed=seed + 1)
    nf.load_state_dict(base.state_dict())
    return base, nf


def make_data(cfg: RNNConfig, seed=0, dtype=torch.float64):
    """Synthetic sequences (seq_len, batch, input_size) and one regression target per example."""
    gen = torch.Generator().manual_seed(seed)
    xs = torch.randn(cfg.seq_len, cfg.batch, cfg.input_size, dtype=dtype, generator=gen)
    v = torch.randn(cfg.input_size, dtype=dtype, generator=gen) / math.sqrt(cfg.input_size)
    targets = torch.tanh((xs @ v).mean(0) * 2)
    return xs, targets


def op_cases(name: str, cfg: RNNConfig, dtype=torch.float64, seed=0, device="cpu"):
    """The neoflow op this workload uses, for per-operator benchmarks.

    Returns ``[(op_name, neoflow_fn, torch_fn, inputs, params)]``: both functions
    take ``inputs`` (one cell step's x and state, requiring grad) and return the
    same outputs ``(h', second state)``; ``params`` are the cell's weights,
    which also receive gradients. Everything is on ``device``.
    """
    base, nf = (m.to(device) for m in make_models(name, cfg, dtype=dtype, seed=seed))
    xs, _ = make_data(cfg, seed=seed, dtype=dtype)
    xs = xs.to(device)
    inputs = tuple(t.detach().clone().requires_grad_(True) for t in (xs[0], *base.init_state(cfg.batch)))

    def nf_fn(x, *state):
        return nf.cell(x, state)

    def torch_fn(x, *state):
        return base.cell(x, state)

    return [(f"{name}_cell", nf_fn, torch_fn, inputs, list(base.parameters()) + list(nf.parameters()))]
