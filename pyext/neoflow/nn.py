"""neoflow.nn: modules that own a neoflow op and its parameters, and ``swap``, which puts them into an
existing model.

Each module keeps PyTorch's parameter names and shapes, so its ``state_dict`` loads into the PyTorch module
it replaces and back, and ``swap`` carries a model's weights over:

    model = neoflow.nn.swap(model)                    # every nn.Linear and nn.LSTMCell
    model = neoflow.nn.swap(model, names=["rnn.*"])   # only the submodules whose names match
"""

from __future__ import annotations

import fnmatch
import functools
import math

import torch

from . import cells
from .op import Op

__all__ = ["LLTMCell", "LSTMCell", "Linear", "MILSTMCell", "Module", "SCRNNCell", "SubLSTMCell", "swap"]


class Module(torch.nn.Module):
    """A module computed by one neoflow op (``self.op``); ``print(module)`` shows the op's expression."""

    op: Op

    def extra_repr(self) -> str:
        base = super().extra_repr()
        expr = "; ".join(line.strip() for line in str(self.op).strip().splitlines())
        return f"{base}, op: {expr}" if base else f"op: {expr}"

    @classmethod
    def from_torch(cls, module: torch.nn.Module) -> Module:
        """The neoflow module equivalent to ``module``, with its weights (on its device, in its dtype)."""
        raise NotImplementedError(f"{cls.__name__} is not built from a PyTorch module")


@functools.cache
def _linear_op(bias: bool) -> Op:
    src = "T[b, o] += X[b, i] * W[o, i]\nY[b, o] = T[b, o] + Bias[o]" if bias else "Y[b, o] += X[b, i] * W[o, i]"
    return Op(src, name="nn_linear" if bias else "nn_linear_nobias", inputs=["X", "W", "Bias"] if bias else ["X", "W"])


class Linear(Module):
    """``torch.nn.Linear`` as a neoflow op: y = x W^T + b over the last dimension of x, any leading ones."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True, device=None, dtype=None):
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        kw = {"device": device, "dtype": dtype}
        self.weight = torch.nn.Parameter(torch.empty(out_features, in_features, **kw))
        self.bias = torch.nn.Parameter(torch.empty(out_features, **kw)) if bias else None
        self.op = _linear_op(bias)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """PyTorch's initialization (Kaiming uniform weights, uniform bias in ±1/sqrt(fan_in))."""
        torch.nn.init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            bound = 1 / math.sqrt(self.in_features) if self.in_features > 0 else 0
            torch.nn.init.uniform_(self.bias, -bound, bound)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        lead = x.shape[:-1]
        flat = x.reshape(-1, x.shape[-1])
        y = self.op(flat, self.weight, self.bias) if self.bias is not None else self.op(flat, self.weight)
        return y.reshape(*lead, self.out_features)

    def extra_repr(self) -> str:
        sizes = f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"
        return f"{sizes}, {super().extra_repr()}"

    @classmethod
    def from_torch(cls, module: torch.nn.Linear) -> Linear:
        w = module.weight
        new = cls(module.in_features, module.out_features, module.bias is not None, device=w.device, dtype=w.dtype)
        new.load_state_dict(module.state_dict())
        return new


@functools.cache
def _lstm_op(hidden: int, bias: bool) -> Op:
    """One op for a whole LSTM cell step, gates in PyTorch's order (input, forget, cell, output)."""
    gates = "A[b, g] = G1[b, g] + G2[b, g] + Bih[g] + Bhh[g]" if bias else "A[b, g] = G1[b, g] + G2[b, g]"
    src = f"""
        G1[b, g] += X[b, i] * Wih[g, i]
        G2[b, g] += H[b, j] * Whh[g, j]
        {gates}
        Cn[b, u] = sigmoid(A[b, u + N]) * C[b, u] + sigmoid(A[b, u]) * tanh(A[b, u + 2 * N])
        Hn[b, u] = sigmoid(A[b, u + 3 * N]) * tanh(Cn[b, u])
    """
    inputs = ["X", "H", "C", "Wih", "Whh"] + (["Bih", "Bhh"] if bias else [])
    return Op(
        src,
        name="nn_lstm_cell" if bias else "nn_lstm_cell_nobias",
        inputs=inputs,
        outputs=["Hn", "Cn"],
        sizes={"u": hidden},
        N=hidden,
    )


class LSTMCell(Module):
    """``torch.nn.LSTMCell`` as one neoflow op: both matrix products, the gates and the new state fused.
    ``forward(input, hx=None)`` returns ``(h, c)``; ``hx`` is ``(h, c)`` or None for zeros."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None, dtype=None):
        super().__init__()
        self.input_size, self.hidden_size = input_size, hidden_size
        kw = {"device": device, "dtype": dtype}
        self.weight_ih = torch.nn.Parameter(torch.empty(4 * hidden_size, input_size, **kw))
        self.weight_hh = torch.nn.Parameter(torch.empty(4 * hidden_size, hidden_size, **kw))
        if bias:
            self.bias_ih = torch.nn.Parameter(torch.empty(4 * hidden_size, **kw))
            self.bias_hh = torch.nn.Parameter(torch.empty(4 * hidden_size, **kw))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.op = _lstm_op(hidden_size, bias)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """PyTorch's initialization: every parameter uniform in ±1/sqrt(hidden_size)."""
        bound = 1 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for p in self.parameters():
            torch.nn.init.uniform_(p, -bound, bound)

    def forward(self, input: torch.Tensor, hx=None) -> tuple[torch.Tensor, torch.Tensor]:  # noqa: A002
        batched = input.dim() == 2
        x = input if batched else input.unsqueeze(0)
        if hx is None:
            h = c = x.new_zeros(x.shape[0], self.hidden_size)
        else:
            h, c = hx if batched else (hx[0].unsqueeze(0), hx[1].unsqueeze(0))
        args = [x, h, c, self.weight_ih, self.weight_hh]
        if self.bias_ih is not None:
            args += [self.bias_ih, self.bias_hh]
        hn, cn = self.op(*args)
        return (hn, cn) if batched else (hn.squeeze(0), cn.squeeze(0))

    def extra_repr(self) -> str:
        return f"{self.input_size}, {self.hidden_size}, bias={self.bias_ih is not None}, {super().extra_repr()}"

    @classmethod
    def from_torch(cls, module: torch.nn.LSTMCell) -> LSTMCell:
        w = module.weight_ih
        new = cls(module.input_size, module.hidden_size, module.bias, device=w.device, dtype=w.dtype)
        new.load_state_dict(module.state_dict())
        return new


class _Cell(Module):
    """A recurrent cell of the paper's workloads (neoflow.cells): parameters drawn uniform in
    ±1/sqrt(fan) as the workloads draw them, ``forward(input, hx=None)`` on a batch (batch, input_size),
    returning the new state as a tuple; ``hx`` None is zeros."""

    def _param(self, name: str, bound: float, *shape, device=None, dtype=None) -> None:
        self.register_parameter(name, torch.nn.Parameter(torch.empty(*shape, device=device, dtype=dtype)))
        self._bounds = {**getattr(self, "_bounds", {}), name: bound}

    def reset_parameters(self) -> None:
        for name, bound in self._bounds.items():
            torch.nn.init.uniform_(getattr(self, name), -bound, bound)

    def _zeros(self, x: torch.Tensor, n: int) -> torch.Tensor:
        return x.new_zeros(x.shape[0], n)


class _FourGateCell(_Cell):
    """A cell of four gates over W x and R h (MI-LSTM, subLSTM): weights ``w`` (4H, I), the recurrent
    one (4H, H) named ``recurrent``, and ``bias`` (4H). Returns ``(h, c)``."""

    recurrent: str

    def __init__(self, input_size: int, hidden_size: int, device=None, dtype=None):
        super().__init__()
        self.input_size, self.hidden_size = input_size, hidden_size
        k, kw = 1 / math.sqrt(hidden_size), {"device": device, "dtype": dtype}
        self._param("w", k, 4 * hidden_size, input_size, **kw)
        self._param(self.recurrent, k, 4 * hidden_size, hidden_size, **kw)
        self._param("bias", k, 4 * hidden_size, **kw)
        self.op = self._make_op(hidden_size)
        self.reset_parameters()

    def forward(self, input, hx=None):  # noqa: A002
        h, c = hx if hx is not None else (self._zeros(input, self.hidden_size),) * 2
        cn, hn = self.op(self.w, input, getattr(self, self.recurrent), h, self.bias, c)
        return hn, cn


class MILSTMCell(_FourGateCell):
    """The multiplicative-integration LSTM cell (Wu et al. 2016): gates act on (W x) ⊙ (U h) + b, in the
    order input, forget, output, candidate. Returns ``(h, c)``. (An all-zero ``h`` zeroes every gate's
    dependence on ``x``; the workloads start from h = 0.1.)"""

    recurrent = "u"
    _make_op = staticmethod(cells.milstm_op)


class SubLSTMCell(_FourGateCell):
    """The subtractive LSTM cell (Costa et al. 2017): gates sigmoid(W x + R h + b) = i, f, z, o;
    c' = f c + z - i; h' = sigmoid(c') - o. Returns ``(h, c)``."""

    recurrent = "r"
    _make_op = staticmethod(cells.sublstm_op)


class LLTMCell(_Cell):
    """The LLTM cell of PyTorch's C++ extension tutorial: gates = W [h, x] + b = input, output, candidate;
    c' = c + elu(candidate) sigmoid(input); h' = tanh(c') sigmoid(output). Returns ``(h, c)``."""

    def __init__(self, input_size: int, hidden_size: int, device=None, dtype=None):
        super().__init__()
        self.input_size, self.hidden_size = input_size, hidden_size
        k, kw = 1 / math.sqrt(hidden_size), {"device": device, "dtype": dtype}
        self._param("weights", k, 3 * hidden_size, hidden_size + input_size, **kw)
        self._param("bias", k, 3 * hidden_size, **kw)
        self.op = cells.lltm_op(hidden_size)
        self.reset_parameters()

    def forward(self, input, hx=None):  # noqa: A002
        h, c = hx if hx is not None else (self._zeros(input, self.hidden_size),) * 2
        cn, hn = self.op(self.weights, h, input, self.bias, c)
        return hn, cn


class SCRNNCell(_Cell):
    """The structurally constrained recurrent cell (Mikolov et al. 2014): context s' = (1 - alpha) B x +
    alpha s; h' = sigmoid(P s' + A x + R h). Returns ``(h, s)``."""

    def __init__(
        self, input_size: int, hidden_size: int, context_size: int, alpha: float = 0.95, device=None, dtype=None
    ):
        super().__init__()
        self.input_size, self.hidden_size, self.context_size, self.alpha = input_size, hidden_size, context_size, alpha
        kw = {"device": device, "dtype": dtype}
        k = 1 / math.sqrt(hidden_size)
        self._param("b_ctx", 1 / math.sqrt(input_size), context_size, input_size, **kw)
        self._param("p", 1 / math.sqrt(context_size), hidden_size, context_size, **kw)
        self._param("a", k, hidden_size, input_size, **kw)
        self._param("r", k, hidden_size, hidden_size, **kw)
        self.op = cells.scrnn_op(alpha)
        self.reset_parameters()

    def forward(self, input, hx=None):  # noqa: A002
        if hx is None:
            hx = (self._zeros(input, self.hidden_size), self._zeros(input, self.context_size))
        h, s = hx
        hn, sn = self.op(self.b_ctx, input, s, self.p, self.a, self.r, h)
        return hn, sn


DEFAULT_SWAPS = {torch.nn.Linear: Linear, torch.nn.LSTMCell: LSTMCell}


def swap(model: torch.nn.Module, mapping=None, *, names=None) -> torch.nn.Module:
    """Replaces, in place, each submodule of ``model`` whose type ``mapping`` lists (default: nn.Linear and
    nn.LSTMCell) with the neoflow module mapped to it, built by its ``from_torch`` with the submodule's
    weights, so that the model computes the same and trains on as before. ``names`` (glob patterns, such as
    ``"encoder.*"``) limits the swap to submodules whose qualified names match one of them. Returns the model
    (the model itself when it is such a module: then the replacement); ``model.neoflow_swapped`` lists the
    names swapped."""
    mapping = DEFAULT_SWAPS if mapping is None else dict(mapping)
    for kind, target in mapping.items():
        if not (isinstance(kind, type) and issubclass(kind, torch.nn.Module)):
            raise TypeError(f"swap's mapping keys must be torch.nn.Module classes, got {kind!r}")
        if not hasattr(target, "from_torch"):
            raise TypeError(f"{target!r} has no from_torch(module) to build it from a {kind.__name__}")
    if isinstance(names, str):
        names = [names]

    def wanted(name: str, module: torch.nn.Module):
        target = mapping.get(type(module))
        if target is None or (names is not None and not any(fnmatch.fnmatchcase(name, p) for p in names)):
            return None
        return target

    target = wanted("", model)
    if target is not None:
        new = target.from_torch(model)
        new.neoflow_swapped = [""]
        return new
    swapped = []
    for name, module in list(model.named_modules()):
        if not name or any(name.startswith(s + ".") for s in swapped):
            continue
        target = wanted(name, module)
        if target is None:
            continue
        parent_name, _, child = name.rpartition(".")
        parent = model.get_submodule(parent_name) if parent_name else model
        new = target.from_torch(module)
        new.train(module.training)
        setattr(parent, child, new)
        swapped.append(name)
    model.neoflow_swapped = swapped
    return model
