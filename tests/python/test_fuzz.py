"""Property tests over generated programs (fuzz_programs.py): the forward
against a plain-PyTorch evaluation, gradients with gradcheck in float64,
tangents (forward mode) against PyTorch's forward mode,
outputs and inputs in permuted orders; and malformed input of every kind
gets a neoflow.Error, ValueError or TypeError, never another exception.

CI runs a bounded number of examples; NEOFLOW_FUZZ_EXAMPLES=N runs N per
property. Failures found are kept below as regression cases."""

from __future__ import annotations

import os
import string

import neoflow
import pytest
import torch
from fuzz_programs import programs
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

EXAMPLES = int(os.environ.get("NEOFLOW_FUZZ_EXAMPLES", "0") or 0)
FUZZ = settings(
    max_examples=EXAMPLES or 30,
    deadline=None,
    derandomize=not EXAMPLES,  # CI: the same programs every run; long runs explore
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
    database=None,
)
OK_ERRORS = (neoflow.Error, ValueError, TypeError)


def _define(prog):
    return neoflow.op(prog.source, inputs=prog.inputs, outputs=prog.outputs, M=prog.shapes["M"], N=prog.shapes["N"])


def _as_tuple(r):
    return r if isinstance(r, tuple) else (r,)


def check_program(prog, seed: int = 0, grad: bool = True) -> None:
    op = _define(prog)
    assert list(op.outputs) == prog.outputs and list(op.inputs) == prog.inputs
    gen = torch.Generator().manual_seed(seed)
    xs = prog.tensors(gen)
    got = _as_tuple(op(*xs))
    want = prog.reference(*xs)
    assert len(got) == len(want)
    for name, g, w in zip(prog.outputs, got, want):
        torch.testing.assert_close(g, w, rtol=1e-9, atol=1e-9, msg=lambda m, n=name: f"output {n}: {m}\n{prog.source}")
    x32 = [x.float() for x in xs]
    for name, g, w in zip(prog.outputs, _as_tuple(op(*x32)), want):
        torch.testing.assert_close(g, w.float(), rtol=1e-4, atol=1e-4, msg=lambda m, n=name: f"{n} float32: {m}")
    if grad:
        leaves = [x.clone().requires_grad_(True) for x in xs]
        assert torch.autograd.gradcheck(lambda *t: op(*t), leaves, atol=1e-6, rtol=1e-5), prog.source
        check_jvp(op, prog, xs, gen)


def check_jvp(op, prog, xs, gen) -> None:
    """Forward mode (the derived tangent op) against PyTorch's forward mode on the plain-PyTorch evaluation."""
    ts = tuple(torch.randn(x.shape, generator=gen, dtype=x.dtype) for x in xs)
    _, got = torch.func.jvp(lambda *t: _as_tuple(op(*t)), tuple(xs), ts)
    _, want = torch.func.jvp(lambda *t: tuple(prog.reference(*t)), tuple(xs), ts)
    for name, g, w in zip(prog.outputs, got, want):
        torch.testing.assert_close(
            g, w, rtol=1e-7, atol=1e-7, msg=lambda m, n=name: f"tangent of {n}: {m}\n{prog.source}"
        )


@pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:FutureWarning")  # inside torch.func.jvp
@FUZZ
@given(prog=programs(), seed=st.integers(0, 2**16))
def test_generated_programs(prog, seed):
    assume(prog.inputs)
    check_program(prog, seed)


# Programs the property test found wrong once, kept as they were shrunk:
# (source, inputs, outputs, M and N); inputs X[M, N], V[M], W[N].
REGRESSIONS: list[tuple[str, list, list, dict]] = [
    # An index in a guard only, over a scalar read: "index i is used only in guards".
    ("T0[] += V[i] * 2.0\nT1[j] += where(i > 0, T0[], 0.5) + W[j] + V[i]", ["V", "W"], ["T1"], {"M": 3, "N": 4}),
    ("T0[] += V[i] * 2.0\nT1[] += where(i > 0, T0[], 0.5) + V[i]", ["V"], ["T1"], {"M": 3, "N": 4}),
    # Lost its bounds facts under the vectorizing default schedule (issue 30, item 3).
    ("T0[i] = V[where(i > 0, i - 1, 0)] + V[i]", ["V"], ["T0"], {"M": 20, "N": 4}),
    ("T0[i] += V[i - i + 0] + V[i]", ["V"], ["T0"], {"M": 20, "N": 4}),
    # The gradient's where(-i.l + 1 > 0, -i.l, 0) after lane splitting: a condition on a
    # shifted, negated or scaled index now bounds the index itself.
    ("T0[i] = exp(tanh(V[M - 1 - i] + V[where(i > 0, i - 1, 0)])) + V[i]", ["V"], ["T0"], {"M": 2, "N": 3}),
    ("T0[i, j] = sigmoid(W[abs(j - 3)]) * j * pow(W[i - i + 3], 2.0) + V[i]", ["V", "W"], ["T0"], {"M": 3, "N": 20}),
    # GCC 12.2's loop vectorizer: wrong sums and a wrong gradient of a max
    # (the long run; the C kernels now keep it off the loops the schedule
    # leaves scalar).
    ("T0[] += X[i, N - 1 - j] + W[j]", ["X", "W"], ["T0"], {"M": 4, "N": 2}),
    ("T0[i] = V[i]\nT1[i, j] = T0[i] + W[j]\nT2[] += T1[i, N - 1 - j] + W[j]", ["V", "W"], ["T2"], {"M": 4, "N": 2}),
    ("T0[i] = max((i * 0.5) * (V[0] / (0.5 * 0.5 + 1.0)), 0.5) + V[i]", ["V"], ["T0"], {"M": 3, "N": 5}),
    # GCC 12.2 with AVX-512: a lane loop over max and min written with ||.
    ("T0[j] += 0.5 + max(min(i * 0.5, 0.5), i * 0.5) + V[i] + W[j]", ["V", "W"], ["T0"], {"M": 4, "N": 2}),
]


@pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:FutureWarning")
@pytest.mark.parametrize("source, inputs, outputs, shapes", REGRESSIONS)
def test_regressions(source, inputs, outputs, shapes):
    op = neoflow.op(source, inputs=inputs, outputs=outputs, **shapes)
    m, n = shapes["M"], shapes["N"]
    dims = {"X": (m, n), "V": (m,), "W": (n,)}
    xs = [torch.rand(dims[name], dtype=torch.float64, requires_grad=True) for name in inputs]
    assert torch.autograd.gradcheck(lambda *t: op(*t), xs)
    check_duality(op, [x.detach() for x in xs])


def check_duality(op, xs) -> None:
    """Forward and reverse mode agree: Σ t_Y·u (tangents) equals Σ t_X·vjp(u) (gradients) for random t and u."""
    f = lambda *t: _as_tuple(op(*t))  # noqa: E731
    ts = tuple(torch.randn_like(x) for x in xs)
    ys, tys = torch.func.jvp(f, tuple(xs), ts)
    us = tuple(torch.randn_like(y) for y in ys)
    gs = torch.func.vjp(f, *xs)[1](us)
    forward = sum((a * b).sum() for a, b in zip(tys, us))
    reverse = sum((a * b).sum() for a, b in zip(ts, gs))
    torch.testing.assert_close(forward, reverse, rtol=1e-10, atol=1e-10)


def test_reversed_sum_is_not_miscompiled():
    # GCC 12.2 at -O3 vectorized this sum's outer loop wrongly (X[0, 0] added
    # twice) until the default flags limited its own vectorization.
    op = neoflow.op("T0[i] max= X[i, j] * 1.5\nT1[] += X[i, N - 1 - j] + W[j]", outputs=["T0", "T1"], M=3, N=5)
    x, w = torch.rand(3, 5, dtype=torch.float64), torch.rand(5, dtype=torch.float64)
    t0, t1 = op(x, w)
    torch.testing.assert_close(t0, (x * 1.5).amax(1))
    torch.testing.assert_close(t1, x.sum() + 3 * w.sum())


def test_loop_vectorizer_cases_are_right():
    # GCC 12.2's loop vectorizer gave these wrong values (the long run of
    # the property suite) until the C kernels kept it off the loops the
    # schedule leaves scalar (NF_SCALAR in kernels/cgen).
    x, w, v = (
        torch.rand(4, 2, dtype=torch.float64),
        torch.rand(2, dtype=torch.float64),
        torch.rand(4, dtype=torch.float64),
    )
    op = neoflow.op("T0[] += X[i, N - 1 - j] + W[j]", inputs=["X", "W"], M=4, N=2)
    torch.testing.assert_close(op(x, w), x.sum() + 4 * w.sum())
    op = neoflow.op("T0[i] = V[i]\nT1[i, j] = T0[i] + W[j]\nT2[] += T1[i, N - 1 - j] + W[j]", outputs=["T2"], M=4, N=2)
    torch.testing.assert_close(op(v, w), (v.view(4, 1) + w.flip(0)).sum() + 4 * w.sum())
    op = neoflow.op("T0[i] = max((i * 0.5) * (V[0] / (0.5 * 0.5 + 1.0)), 0.5) + V[i]", M=3)
    v3 = torch.rand(3, dtype=torch.float64, requires_grad=True)
    (g,) = torch.autograd.grad(op(v3).sum(), v3)
    i = torch.arange(3, dtype=torch.float64)
    slope = torch.where(i * 0.5 * v3.detach()[0] / 1.25 > 0.5, i * 0.5 / 1.25, torch.zeros(3, dtype=torch.float64))
    want = torch.ones(3, dtype=torch.float64)
    want[0] += slope.sum()
    torch.testing.assert_close(g, want)


def test_max_min_lane_loop_is_right():
    # GCC 12.2 with AVX-512 summed only the first i of this lane loop while
    # nf_max and nf_min combined their conditions with || (the long run).
    op = neoflow.op("T0[j] += 0.5 + max(min(i * 0.5, 0.5), i * 0.5) + V[i] + W[j]", inputs=["V", "W"], M=4, N=2)
    v, w = torch.rand(4, dtype=torch.float64), torch.rand(2, dtype=torch.float64)
    i = torch.arange(4, dtype=torch.float64)
    want = (0.5 + torch.maximum(torch.clamp(i * 0.5, max=0.5), i * 0.5) + v).sum() + 4 * w
    torch.testing.assert_close(op(v, w), want)


def test_short_local_array_does_not_crash():
    # GCC 12.2 stored to a 3-element local accumulator with aligned vector
    # stores without aligning it: the process crashed (SIGSEGV) at this call.
    src = (
        "T0[i, j] += X[0, (j + 1) % N] + V[i] + W[j]\nT1[j, i] += T0[(i + 1) % M, where(j > 0, j - 1, 0)] + V[i] + W[j]"
    )
    op = neoflow.op(src, inputs=["X", "W", "V"], M=3, N=5)
    x, w, v = (
        torch.rand(3, 5, dtype=torch.float64),
        torch.rand(5, dtype=torch.float64),
        torch.rand(3, dtype=torch.float64),
    )
    t0 = x[0, (torch.arange(5) + 1) % 5].view(1, 5) + v.view(3, 1) + w.view(1, 5)
    want = t0[(torch.arange(3) + 1) % 3][:, (torch.arange(5) - 1).clamp(min=0)] + v.view(3, 1) + w.view(1, 5)
    torch.testing.assert_close(op(x, w, v), want.t())


# -- malformed input -----------------------------------------------------------


@st.composite
def _mutated(draw):
    """A generated program's text with characters deleted, replaced or added."""
    prog = draw(programs(max_stmts=2))
    text = prog.source
    for _ in range(draw(st.integers(1, 4))):
        pos = draw(st.integers(0, len(text)))
        kind = draw(st.sampled_from(["delete", "insert", "replace"]))
        ch = draw(st.sampled_from(list("[](),;=+-*/%<>!&|. \n0123456789ijXWTMN_") + ["\x00", "é", "\t", "max="]))
        if kind == "delete":
            text = text[:pos] + text[pos + 1 :]
        elif kind == "insert":
            text = text[:pos] + ch + text[pos:]
        else:
            text = text[:pos] + ch + text[pos + 1 :]
    return text, prog


@FUZZ
@given(case=_mutated())
def test_malformed_text_gets_a_clear_error(case):
    text, prog = case
    try:
        op = neoflow.op(text, M=prog.shapes["M"], N=prog.shapes["N"])
    except OK_ERRORS as e:
        assert "internal error" not in str(e), str(e)
        return
    # Accepted: it must then run, or refuse its inputs clearly.
    gen = torch.Generator().manual_seed(0)
    shapes = {"X": (prog.shapes["M"], prog.shapes["N"]), "V": (prog.shapes["M"],), "W": (prog.shapes["N"],)}
    xs = [torch.rand(shapes.get(n, (3,)), generator=gen, dtype=torch.float64) for n in op.inputs]
    try:
        op(*xs)
    except OK_ERRORS as e:
        assert "internal error" not in str(e), f"{text!r}: {e}"


_NAMES = st.text(alphabet=string.printable + "\x00\x01é\ud800", max_size=12)


@FUZZ
@given(
    name=st.one_of(st.none(), _NAMES, st.integers()),
    inputs=st.one_of(st.none(), st.lists(_NAMES, max_size=3), _NAMES),
    sizes=st.one_of(st.none(), st.dictionaries(_NAMES, st.one_of(st.integers(-3, 2**62), st.floats()), max_size=2)),
    consts=st.dictionaries(st.sampled_from(["M", "S", "x y"]), st.one_of(st.integers(), st.floats(), _NAMES)),
)
def test_bad_arguments_get_a_clear_error(name, inputs, sizes, consts):
    try:
        op = neoflow.op("Y[i] = X[i] * 2.0", name=name, inputs=inputs, sizes=sizes, consts=consts)
        op(torch.rand(4))
    except OK_ERRORS as e:
        assert "internal error" not in str(e), str(e)


DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int32, torch.int64, torch.bool]


@FUZZ
@given(
    shape=st.lists(st.integers(0, 4), min_size=0, max_size=3),
    dtype=st.sampled_from(DTYPES),
    device=st.sampled_from(["cpu", "meta"]),
    other=st.one_of(st.none(), st.integers(), st.text(max_size=3)),
)
def test_bad_tensors_get_a_clear_error(shape, dtype, device, other):
    op = neoflow.op("Y[i, j] += A[i, k] * B[k, j]")
    a = torch.zeros(shape, dtype=dtype, device=device)
    b = torch.ones(3, 2)
    for args in ((a, b), (b, a), (a,), (a, b, b), (other, b)):
        try:
            op(*args)
        except (*OK_ERRORS, NotImplementedError) as e:
            assert "internal error" not in str(e), str(e)
