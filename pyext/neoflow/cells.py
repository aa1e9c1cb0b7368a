"""The recurrent cells of the NeoFlow paper's workloads as neoflow ops: MI-LSTM, SC-RNN, subLSTM and LLTM,
each cell step one op of several statements. ``neoflow.nn`` wraps them in modules; the workloads
(``workloads/rnn.py``) train them beside plain-PyTorch twins. A cell's new hidden state reads its new cell
state (an output a later statement reads, named in ``outputs=``) instead of computing it again.
"""

from __future__ import annotations

import functools

from .op import Op

# MI-LSTM (Wu et al. 2016): gates phi(Wx ⊙ Uh + b), in the order input, forget, output, candidate.
MILSTM_CELL = (
    "WX[b,g] += W[g,k] * X[b,k]\n"
    "UH[b,g] += U[g,j] * H[b,j]\n"
    "P[b,g] = WX[b,g] * UH[b,g] + Bias[g]\n"
    "Cn[b,u] = sigmoid(P[b,N+u]) * C[b,u] + sigmoid(P[b,u]) * tanh(P[b,3*N+u])\n"
    "Hn[b,u] = sigmoid(P[b,2*N+u]) * tanh(Cn[b,u])"
)

# SC-RNN (Mikolov et al. 2014): s' = (1-a) B x + a s;  h' = sigmoid(P s' + A x + R h).
SCRNN_CELL = (
    "BX[b,c] += Bw[c,k] * X[b,k]\n"
    "Sn[b,c] = (1.0 - AL) * BX[b,c] + AL * S[b,c]\n"
    "PS[b,u] += P[u,c] * Sn[b,c]\n"
    "AX[b,u] += A[u,k] * X[b,k]\n"
    "RH[b,u] += R[u,j] * H[b,j]\n"
    "Hn[b,u] = sigmoid(PS[b,u] + AX[b,u] + RH[b,u])"
)

# subLSTM (Costa et al. 2017): gates sigmoid(Wx + Rh + b) = i, f, z, o;  c' = f c + z - i;  h' = sigmoid(c') - o.
SUBLSTM_CELL = (
    "G[b,g] += W[g,k] * X[b,k]\n"
    "RH[b,g] += R[g,j] * H[b,j]\n"
    "S[b,g] = sigmoid(G[b,g] + RH[b,g] + Bias[g])\n"
    "Cn[b,u] = S[b,N+u] * C[b,u] + S[b,2*N+u] - S[b,u]\n"
    "Hn[b,u] = sigmoid(Cn[b,u]) - S[b,3*N+u]"
)

# LLTM (PyTorch C++ extension tutorial): gates = W [h, x] + b = input, output, candidate;
# c' = c + elu(candidate) sigmoid(input);  h' = tanh(c') sigmoid(output).
LLTM_CELL = (
    "GH[b,g] += W[g,j] * H[b,j]\n"
    "GX[b,g] += W[g,N+k] * X[b,k]\n"
    "G[b,g] = GH[b,g] + GX[b,g] + Bias[g]\n"
    "E[b,u] = where(G[b,2*N+u] > 0.0, G[b,2*N+u], exp(G[b,2*N+u]) - 1.0)\n"
    "Cn[b,u] = C[b,u] + E[b,u] * sigmoid(G[b,u])\n"
    "Hn[b,u] = tanh(Cn[b,u]) * sigmoid(G[b,N+u])"
)


def _four_gate_op(source: str, name: str, recurrent: str, hidden: int) -> Op:
    """A cell of four gates over W x and a recurrent weight times h (MI-LSTM, subLSTM)."""
    return Op(
        source,
        name=name,
        inputs=["W", "X", recurrent, "H", "Bias", "C"],
        outputs=["Cn", "Hn"],
        sizes={"u": hidden},
        N=hidden,
    )


@functools.cache
def milstm_op(hidden: int) -> Op:
    return _four_gate_op(MILSTM_CELL, "milstm_cell", "U", hidden)


@functools.cache
def scrnn_op(alpha: float) -> Op:
    return Op(
        SCRNN_CELL,
        name="scrnn_cell",
        inputs=["Bw", "X", "S", "P", "A", "R", "H"],
        outputs=["Hn", "Sn"],
        AL=float(alpha),
    )


@functools.cache
def sublstm_op(hidden: int) -> Op:
    return _four_gate_op(SUBLSTM_CELL, "sublstm_cell", "R", hidden)


@functools.cache
def lltm_op(hidden: int) -> Op:
    return Op(
        LLTM_CELL,
        name="lltm_cell",
        inputs=["W", "H", "X", "Bias", "C"],
        outputs=["Cn", "Hn"],
        sizes={"u": hidden, "j": hidden},
        N=hidden,
    )
