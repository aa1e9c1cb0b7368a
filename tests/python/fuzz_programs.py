"""Random well-typed programs in neoflow's language, for property tests,
each with a plain-PyTorch evaluation of the same semantics.

A program reads inputs X[M, N], V[M] and W[N] with index variables i (over
M) and j (over N). Every expression is evaluated in PyTorch on the grid of
(i, j) by broadcasting: index expressions are integer tensors, values are
float tensors, and a statement reduces its grid over the variables that are
not on its left-hand side. Generated programs stay where the language's
semantics and PyTorch's agree exactly: index arithmetic keeps accesses in
bounds (or is guarded by a where that the PyTorch side clamps), divisions
have positive denominators, and max=/min= reduce over values that do not
tie.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import torch
from hypothesis import strategies as st

EXTENTS = {"i": "M", "j": "N"}
INPUTS = {"X": ("i", "j"), "V": ("i",), "W": ("j",)}
LITERALS = ["0.5", "1.5", "-2.0", "3.0", "0.25"]


@dataclass
class Expr:
    """Neoflow text, the index variables it uses, and its PyTorch value on
    the grid (a function of the environment)."""

    text: str
    vars: frozenset  # every index variable it mentions
    fn: object  # env -> tensor
    bound: frozenset = frozenset()  # the variables some read indexes plainly (X[i]): their extents are inferred


@dataclass
class Program:
    source: str
    inputs: list  # input names, in call order
    outputs: list  # output names, in the returned order
    shapes: dict  # M, N
    stmts: list = field(default_factory=list)  # (name, lhs vars, reduce, Expr)

    def tensors(self, gen: torch.Generator, dtype=torch.float64) -> list[torch.Tensor]:
        m, n = self.shapes["M"], self.shapes["N"]
        shape = {"X": (m, n), "V": (m,), "W": (n,)}
        return [torch.rand(shape[name], generator=gen, dtype=dtype) * 2 - 1 for name in self.inputs]

    def reference(self, *tensors) -> tuple:
        """The outputs, computed with PyTorch."""
        m, n = self.shapes["M"], self.shapes["N"]
        env = {"i": torch.arange(m).view(m, 1), "j": torch.arange(n).view(1, n), "M": m, "N": n}
        env.update(zip(self.inputs, tensors))
        for name, lhs, reduce, expr in self.stmts:
            value = expr.fn(env)
            if not torch.is_tensor(value) or value.dtype != tensors[0].dtype:
                value = torch.as_tensor(value, dtype=tensors[0].dtype)
            value = value.expand(m, n)
            used = expr.vars | expr.bound
            for a, v in enumerate("ij"):  # constant along a variable the statement does not use
                if v not in used and v not in lhs:
                    value = value.narrow(a, 0, 1)
            axes = [a for a, v in enumerate("ij") if v not in lhs and v in used]
            if axes and reduce == "+=":
                value = value.sum(dim=axes, keepdim=True)
            elif axes and reduce == "max=":
                value = value.amax(dim=axes, keepdim=True)
            elif axes and reduce == "min=":
                value = value.amin(dim=axes, keepdim=True)
            env[name] = _stored(value, lhs)
        return tuple(env[name] for name in self.outputs)


def _stored(value: torch.Tensor, lhs: tuple) -> torch.Tensor:
    """A grid value [M or 1, N or 1] as the tensor its left-hand side writes."""
    v = value
    if "j" not in lhs:
        v = v.squeeze(1)
    if "i" not in lhs:
        v = v.squeeze(0)
    if lhs == ("j", "i"):
        v = v.t()
    return v.contiguous()


def _read(name: str, lhs: tuple):
    """Reading a tensor written with left-hand side lhs at the grid point."""

    def fn(env):
        t = env[name]
        index = [env[v] for v in lhs]
        return t[tuple(index)] if index else t

    return fn


# -- index expressions: (text, fn) over one variable, always in [0, extent) --


def _index_choices(var: str):
    ext = EXTENTS[var]
    return [
        (var, lambda env: env[var]),
        (f"{ext} - 1 - {var}", lambda env: env[ext] - 1 - env[var]),
        (f"({var} + 1) % {ext}", lambda env: (env[var] + 1) % env[ext]),
        (f"where({var} > 0, {var} - 1, 0)", lambda env: torch.where(env[var] > 0, env[var] - 1, 0)),
        (f"min({var}, 1)", lambda env: torch.clamp(env[var], max=1)),
        (f"{var} / 2", lambda env: env[var] // 2),
        ("0", lambda env: torch.zeros_like(env[var])),
    ]


@st.composite
def _access(draw, names: dict):
    """A read of an input or an earlier tensor; names maps tensor -> lhs vars."""
    name = draw(st.sampled_from(sorted(names)))
    lhs = names[name]
    texts, fns, used, bound = [], [], set(), set()
    for var in lhs:
        text, fn = draw(st.sampled_from(_index_choices(var)))
        texts.append(text)
        fns.append(fn)
        if text != "0":
            used.add(var)
        if text == var:
            bound.add(var)
    guarded = draw(st.booleans()) and len(lhs) > 0 and texts[0] == lhs[0]
    if guarded:  # a read that would be out of bounds where the guard is false
        var = lhs[0]
        bound.discard(var)
        texts[0] = f"{var} - 1"
        fns[0] = lambda env, var=var: torch.clamp(env[var] - 1, min=0)
    text = f"{name}[{', '.join(texts)}]"

    def fn(env, name=name, fns=tuple(fns)):
        t = env[name]
        return t[tuple(f(env) for f in fns)] if fns else t

    e = Expr(text, frozenset(used), fn, frozenset(bound))
    if guarded:
        var = lhs[0]
        inner = e
        e = Expr(
            f"where({var} >= 1, {inner.text}, 0.5)",
            inner.vars | {var},
            lambda env, var=var, inner=inner: torch.where(env[var] >= 1, inner.fn(env), 0.5),
            frozenset(),  # a read under a where infers no extent
        )
    return e


def _unary(name: str, e: Expr) -> Expr:
    table = {
        "exp": ("exp(tanh({}))", lambda x: torch.exp(torch.tanh(x))),
        "sigmoid": ("sigmoid({})", torch.sigmoid),
        "tanh": ("tanh({})", torch.tanh),
        "sqrt": ("sqrt(({0}) * ({0}) + 1.0)", lambda x: torch.sqrt(x * x + 1.0)),
        "log": ("log(({0}) * ({0}) + 1.0)", lambda x: torch.log(x * x + 1.0)),
        "neg": ("-({})", torch.neg),
        "pow": ("pow({}, 2.0)", lambda x: x * x),  # an argument needs no brackets
        "relu": ("relu({})", torch.relu),
        "abs": ("abs({})", torch.abs),
        "sin": ("sin({})", torch.sin),
        "cos": ("cos({})", torch.cos),
        "atan": ("atan({})", torch.atan),
        "softplus": ("softplus({})", torch.nn.functional.softplus),
        "log1p": ("log1p(({0}) * ({0}))", lambda x: torch.log1p(x * x)),
        "expm1": ("expm1(tanh({}))", lambda x: torch.expm1(torch.tanh(x))),
        "atan2": ("atan2({0}, ({0}) * ({0}) + 1.0)", lambda x: torch.atan2(x, x * x + 1.0)),
    }
    text, f = table[name]
    return Expr(text.format(e.text), e.vars, lambda env: f(e.fn(env)), e.bound)


_UNARY_NAMES = ("exp", "sigmoid", "tanh", "sqrt", "log", "neg", "pow", "relu", "abs")
_UNARY_NAMES += ("sin", "cos", "atan", "softplus", "log1p", "expm1", "atan2")


def _binary(op: str, a: Expr, b: Expr) -> Expr:
    vars_, bound = a.vars | b.vars, a.bound | b.bound
    if op == "/":
        text = f"({a.text}) / (({b.text}) * ({b.text}) + 1.0)"
        return Expr(text, vars_, lambda env: a.fn(env) / (b.fn(env) ** 2 + 1.0), bound)
    if op in ("max", "min"):
        f = torch.maximum if op == "max" else torch.minimum
        fn = lambda env: f(*torch.broadcast_tensors(torch.as_tensor(a.fn(env)), torch.as_tensor(b.fn(env))))  # noqa: E731
        return Expr(f"{op}({a.text}, {b.text})", vars_, fn, bound)
    ops = {"+": torch.add, "-": torch.sub, "*": torch.mul}
    return Expr(f"({a.text}) {op} ({b.text})", vars_, lambda env: ops[op](a.fn(env), b.fn(env)), bound)


@st.composite
def _value(draw, names: dict, depth: int):
    kinds = ["access", "access", "literal", "index"]
    if depth > 0:
        kinds += ["unary", "binary", "binary", "where"]
    kind = draw(st.sampled_from(kinds))
    if kind == "access":
        return draw(_access(names))
    if kind == "literal":
        text = draw(st.sampled_from(LITERALS))
        return Expr(text, frozenset(), lambda env, v=float(text): torch.tensor(v, dtype=torch.float64))
    if kind == "index":
        var = draw(st.sampled_from("ij"))
        return Expr(f"{var} * 0.5", frozenset({var}), lambda env, var=var: env[var].double() * 0.5)
    if kind == "unary":
        name = draw(st.sampled_from(list(_UNARY_NAMES)))
        return _unary(name, draw(_value(names, depth - 1)))
    if kind == "binary":
        op = draw(st.sampled_from(["+", "-", "*", "/", "max", "min"]))
        return _binary(op, draw(_value(names, depth - 1)), draw(_value(names, depth - 1)))
    return draw(_where(names, depth))


@st.composite
def _where(draw, names: dict, depth: int):
    a, b = draw(_value(names, depth - 1)), draw(_value(names, depth - 1))
    var = draw(st.sampled_from("ij"))
    c = draw(st.integers(0, 2))
    cond, cfn = draw(
        st.sampled_from(
            [
                (f"{var} > {c}", lambda env: env[var] > c),
                (f"{var} % 2 == 0", lambda env: env[var] % 2 == 0),
                (f"{var} <= {c} || {var} == 3", lambda env: (env[var] <= c) | (env[var] == 3)),
            ]
        )
    )
    return Expr(
        f"where({cond}, {a.text}, {b.text})",
        a.vars | b.vars | {var},
        lambda env: torch.where(cfn(env), a.fn(env), b.fn(env)),
        frozenset(),  # reads under a where infer no extent
    )


def _cover(e: Expr, lhs: tuple) -> Expr:
    """Makes some read index every variable of the statement plainly (the
    extents are inferred from such reads), adding reads of V[i] or W[j]."""
    read = {"i": ("V[i]", lambda env: env["V"][env["i"]]), "j": ("W[j]", lambda env: env["W"][env["j"]])}
    for var in sorted(e.vars | set(lhs)):
        if var not in e.bound:
            text, fn = read[var]
            e = _binary("+", e, Expr(text, frozenset({var}), fn, frozenset({var})))
    return e


@st.composite
def _extremum_rhs(draw, names: dict, lhs: tuple, axes: list):
    """A max=/min= right-hand side whose values over the reduced axes do not
    tie: an input read that moves with each reduced variable, plus a part
    that depends only on the left-hand variables."""
    x = Expr("X[i, j]", frozenset("ij"), lambda env: env["X"][env["i"], env["j"]], frozenset("ij"))
    v = Expr("V[i]", frozenset("i"), lambda env: env["V"][env["i"]], frozenset("i"))
    w = Expr("W[j]", frozenset("j"), lambda env: env["W"][env["j"]], frozenset("j"))
    if len(axes) == 2:
        base = x
    elif axes == ["i"]:
        base = x if "j" in lhs else v
    else:
        base = x if "i" in lhs else w
    scale = draw(st.sampled_from(["1.5", "-2.0"]))
    base = _binary("*", base, Expr(scale, frozenset(), lambda env, v=float(scale): v))
    if lhs and draw(st.booleans()):
        rest = {n: v for n, v in names.items() if set(v) <= set(lhs)}
        if rest:
            extra = draw(_value(rest, 1))
            if extra.vars <= set(lhs):
                base = _binary("+", base, extra)
    return _cover(base, lhs)


@st.composite
def programs(draw, max_stmts: int = 3) -> Program:
    """A random program of 1 to max_stmts statements."""
    m, n = draw(st.sampled_from([(2, 3), (3, 5), (4, 2), (3, 3)]))
    names = dict(INPUTS)
    stmts = []
    for k in range(draw(st.integers(1, max_stmts))):
        lhs = draw(st.sampled_from([("i",), ("j",), ("i", "j"), ("j", "i"), ()]))
        reduce = draw(st.sampled_from(["=", "+=", "+=", "max=", "min="]))
        name = f"T{k}"
        if reduce in ("max=", "min="):
            axes = [v for v in "ij" if v not in lhs]
            if not axes:
                reduce = "="
        if reduce in ("max=", "min="):
            expr = draw(_extremum_rhs(names, lhs, axes))
        else:
            expr = _cover(draw(_value(names, 3)), lhs)
            if reduce == "=" and not expr.bound <= set(lhs):
                reduce = "+="
        stmts.append((name, lhs, reduce, expr))
        names[name] = lhs
    source = "\n".join(f"{n}[{', '.join(lhs)}] {r} {e.text}" for n, lhs, r, e in stmts)
    read = set()
    for _, _, _, e in stmts:
        read |= {t for t in names if f"{t}[" in e.text}
    inputs = [t for t in INPUTS if t in read]
    written = [s[0] for s in stmts]
    outputs = [t for k, t in enumerate(written) if not any(f"{t}[" in s[3].text for s in stmts[k + 1 :])]
    order = draw(st.sampled_from(list(itertools.permutations(outputs))[:6]))
    inputs = draw(st.permutations(inputs))
    return Program(source, list(inputs), list(order), {"M": m, "N": n}, stmts)
