"""The decorated form: build an op's statements with Python operators.

    @neoflow.op
    def conv(X, W):
        n, k, p, q, c, r, s = neoflow.indices("n k p q c r s")
        Y = neoflow.tensor("Y")
        Y[n, k, p, q] += X[n, c, p * 2 + r, q * 2 + s] * W[k, c, r, s]
        return Y

Positional parameters name the inputs; keyword-only parameters are named
constants bound by the decorator (``@neoflow.op(S=2)``). Running the body on
symbolic tensors records statements, which are rendered to the expression
language and parsed by the Go core, so both forms yield the same IR.
"""

from __future__ import annotations

import inspect
import math

_trace: list[list[str]] = []

# Binding strength of the expression language's operators (as the Go
# printer uses them), so the rendered text has only the parentheses it needs.
_PREC = {"||": 1, "&&": 2, "==": 3, "!=": 3, "<": 4, "<=": 4, ">": 4, ">=": 4, "+": 5, "-": 5, "*": 6, "/": 6, "%": 6}
_UNARY = 7
_ATOM = 8


def _wrap(x) -> Expr:
    if isinstance(x, Expr):
        return x
    if isinstance(x, bool):
        raise TypeError("booleans are not values in neoflow expressions; use a comparison")
    if isinstance(x, int):
        return Expr(str(x) if x >= 0 else f"({x})")
    if isinstance(x, float):
        if math.isnan(x):
            return Expr("nan", True)
        text = "inf" if x == math.inf else "-inf" if x == -math.inf else repr(x)
        return Expr(text if x >= 0 else f"({text})", True)
    raise TypeError(f"cannot use {type(x).__name__} in a neoflow expression")


class Expr:
    """A symbolic expression; Python operators build larger ones."""

    __slots__ = ("text", "is_value", "prec")
    __hash__ = None  # == builds an expression, so Exprs are not hashable

    def __init__(self, text: str, is_value: bool = False, prec: int = _ATOM):
        self.text = text
        self.is_value = is_value  # a floating-point value, not an integer index
        self.prec = prec  # binding strength of the text's outermost operator

    def _at(self, prec: int) -> str:
        return self.text if self.prec >= prec else f"({self.text})"

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return f"neoflow.Expr({self.text!r})"

    def __bool__(self):
        raise TypeError(
            "a neoflow expression has no truth value while the op is traced; "
            "use neoflow.where(cond, a, b) instead of if/else, and & | ~ instead of and/or/not"
        )

    def _bin(self, op: str, other, swap=False) -> Expr:
        a, b = (_wrap(other), self) if swap else (self, _wrap(other))
        p = _PREC[op]
        # all operators are left associative: a right operand of equal strength keeps its parentheses
        return Expr(f"{a._at(p)} {op} {b._at(p + 1)}", a.is_value or b.is_value, p)

    def __add__(self, o):
        return self._bin("+", o)

    def __radd__(self, o):
        return self._bin("+", o, swap=True)

    def __sub__(self, o):
        return self._bin("-", o)

    def __rsub__(self, o):
        return self._bin("-", o, swap=True)

    def __mul__(self, o):
        return self._bin("*", o)

    def __rmul__(self, o):
        return self._bin("*", o, swap=True)

    def __truediv__(self, o):
        return self._bin("/", o)

    def __rtruediv__(self, o):
        return self._bin("/", o, swap=True)

    def __floordiv__(self, o):
        return self._floordiv(o, swap=False)

    def __rfloordiv__(self, o):
        return self._floordiv(o, swap=True)

    def _floordiv(self, o, swap):
        if self.is_value or _wrap(o).is_value:
            raise TypeError("// is integer division on indices; on values use / (true division)")
        return self._bin("/", o, swap)  # on indices, '/' is floor division

    def __mod__(self, o):
        return self._bin("%", o)

    def __rmod__(self, o):
        return self._bin("%", o, swap=True)

    def __pow__(self, o):
        return Expr(f"pow({self.text}, {_wrap(o).text})", True)

    def __neg__(self):
        return Expr(f"-{self._at(_UNARY + 1)}", self.is_value, _UNARY)

    def __pos__(self):
        return self

    def __lt__(self, o):
        return self._bin("<", o)

    def __le__(self, o):
        return self._bin("<=", o)

    def __gt__(self, o):
        return self._bin(">", o)

    def __ge__(self, o):
        return self._bin(">=", o)

    def __eq__(self, o):
        return self._bin("==", o)

    def __ne__(self, o):
        return self._bin("!=", o)

    def __and__(self, o):
        return self._bin("&&", o)

    def __rand__(self, o):
        return self._bin("&&", o, swap=True)

    def __or__(self, o):
        return self._bin("||", o)

    def __ror__(self, o):
        return self._bin("||", o, swap=True)

    def __invert__(self):
        return Expr(f"!{self._at(_UNARY + 1)}", False, _UNARY)


class _Access(Expr):
    __slots__ = ("tensor", "key")

    def __init__(self, tensor: Tensor, key: str):
        super().__init__(f"{tensor.name}[{key}]", True)
        self.tensor = tensor
        self.key = key

    def __iadd__(self, rhs):
        return _Reduction("+=", _wrap(rhs), self)

    def __imul__(self, rhs):
        return _Reduction("*=", _wrap(rhs), self)


class _Reduction:
    __slots__ = ("op", "rhs", "target")

    def __init__(self, op: str, rhs: Expr, target: _Access | None = None):
        self.op, self.rhs, self.target = op, rhs, target


def _key(idx) -> str:
    if not isinstance(idx, tuple):
        idx = (idx,)
    return ", ".join(_wrap(i).text for i in idx)


class Tensor:
    """A symbolic tensor: an input parameter or one made by neoflow.tensor."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        if not name.isidentifier():
            raise ValueError(f"tensor name {name!r} is not an identifier")
        self.name = name

    def __repr__(self) -> str:
        return f"neoflow.tensor({self.name!r})"

    def __getitem__(self, idx) -> _Access:
        return _Access(self, _key(idx))

    def __setitem__(self, idx, value) -> None:
        if not _trace:
            raise RuntimeError("statements can only be written inside a function decorated with @neoflow.op")
        key = _key(idx)
        if isinstance(value, _Reduction):
            if value.target is not None and (value.target.tensor is not self or value.target.key != key):
                raise ValueError(f"{value.op} must update the same element it reads: {self.name}[{key}]")
            _trace[-1].append(f"{self.name}[{key}] {value.op} {value.rhs.text}")
        else:
            _trace[-1].append(f"{self.name}[{key}] = {_wrap(value).text}")


_ASSIGN = ("=", "+=", "*=", "max=", "min=")


def statement(target: _Access, op: str, rhs) -> str:
    """The text of the statement ``target op rhs``: target an element of a tensor (``Tensor("T")[i, j]``), op
    one of ``=``, ``+=``, ``*=``, ``max=``, ``min=``. For code that writes an op's statements from expressions
    without tracing a function (the torch.compile backend's lowering)."""
    if not isinstance(target, _Access):
        raise TypeError(f"a statement's target is an element of a tensor, got {type(target).__name__}")
    if op not in _ASSIGN:
        raise ValueError(f"a statement's operator is one of {', '.join(_ASSIGN)}, got {op!r}")
    return f"{target.text} {op} {_wrap(rhs).text}"


def value(x) -> Expr:
    """x (a Python number) as a floating-point literal: ``2`` is ``2.0``, infinities ``inf``, NaN ``nan``."""
    if type(x).__name__.startswith("Sym"):  # a symbolic size (torch.SymInt, SymFloat): float() would fix its value
        raise TypeError(f"cannot use {type(x).__name__} in a neoflow expression")
    return _wrap(float(x))


def tensor(name: str) -> Tensor:
    """A tensor written by a statement of the op being traced."""
    return Tensor(name)


def indices(names: str):
    """Index variables: ``i, j = neoflow.indices("i j")``; one name gives one."""
    parts = names.replace(",", " ").split()
    for p in parts:
        if not p.isidentifier():
            raise ValueError(f"index name {p!r} is not an identifier")
    out = tuple(Expr(p) for p in parts)
    return out[0] if len(out) == 1 else out


def _call(fn: str, *args) -> Expr:
    wrapped = [_wrap(a) for a in args]
    keeps_kind = fn in ("min", "max", "abs", "where", "clamp")
    is_value = any(a.is_value for a in wrapped) if keeps_kind else True
    return Expr(f"{fn}({', '.join(a.text for a in wrapped)})", is_value)


def where(cond, a, b) -> Expr:
    """a where cond holds, else b; only the chosen branch is read."""
    return _call("where", cond, a, b)


def exp(x):
    """``exp(x)``: e to the x."""
    return _call("exp", x)


def log(x):
    """``log(x)``: the natural logarithm."""
    return _call("log", x)


def sqrt(x):
    """``sqrt(x)``: the square root."""
    return _call("sqrt", x)


def rsqrt(x):
    """``rsqrt(x)``: 1 / sqrt(x), as torch.rsqrt."""
    return _call("rsqrt", x)


def tanh(x):
    """``tanh(x)``: the hyperbolic tangent."""
    return _call("tanh", x)


def sigmoid(x):
    """``sigmoid(x)``: 1 / (1 + exp(-x)), as torch.sigmoid."""
    return _call("sigmoid", x)


def relu(x):
    """``relu(x)``: max(x, 0), as torch.relu (its gradient at 0 is 0)."""
    return _call("relu", x)


def abs(x):  # noqa: A001 - mirrors the expression language
    """``abs(x)``: the absolute value."""
    return _call("abs", x)


def erf(x):
    """``erf(x)``: the error function, as torch.erf."""
    return _call("erf", x)


def pow(x, y):  # noqa: A001
    """``pow(x, y)``: x to the y, as torch.pow."""
    return _call("pow", x, y)


def _unary(name: str):
    def fn(x):
        return _call(name, x)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"``{name}(x)`` of the expression language."
    return fn


sin, cos, tan = _unary("sin"), _unary("cos"), _unary("tan")
asin, acos, atan = _unary("asin"), _unary("acos"), _unary("atan")
sinh, cosh = _unary("sinh"), _unary("cosh")
log1p, expm1, log2, exp2 = _unary("log1p"), _unary("expm1"), _unary("log2"), _unary("exp2")
softplus = _unary("softplus")
floor, ceil, trunc, sign = _unary("floor"), _unary("ceil"), _unary("trunc"), _unary("sign")
round = _unary("round")  # noqa: A001 - mirrors the expression language: half to even, as torch.round


int32, int64 = _unary("int32"), _unary("int64")  # casts: a statement's whole right-hand side, with =
int32.__doc__ = "``int32(x)``: the value cast to a 32-bit integer (a statement's whole right-hand side, with =)."
int64.__doc__ = "``int64(x)``: the value cast to a 64-bit integer (a statement's whole right-hand side, with =)."


def to_float(x):
    """``float(x)`` of the expression language: an index expression as a value."""
    return _call("float", x)


def atan2(y, x):
    """``atan2(y, x)``: the angle of the point (x, y), as torch.atan2."""
    return _call("atan2", y, x)


def clamp(x, lo, hi):
    """``min(max(x, lo), hi)``, as torch.clamp (NaN stays NaN)."""
    return _call("clamp", x, lo, hi)


def min(x, y):  # noqa: A001
    """``min(x, y)``: the smaller of two values or indices (NaN propagates, as torch.minimum)."""
    return _call("min", x, y)


def max(x, y):  # noqa: A001
    """``max(x, y)``: the larger of two values or indices (NaN propagates, as torch.maximum)."""
    return _call("max", x, y)


def reduce_sum(x) -> _Reduction:
    """``Y[i] = reduce_sum(X[i, j])`` is ``Y[i] += X[i, j]``."""
    return _Reduction("+=", _wrap(x))


def reduce_prod(x) -> _Reduction:
    """``Y[i] = reduce_prod(X[i, j])`` is ``Y[i] *= X[i, j]``."""
    return _Reduction("*=", _wrap(x))


def reduce_max(x) -> _Reduction:
    """``Y[i] = reduce_max(X[i, j])`` is ``Y[i] max= X[i, j]``."""
    return _Reduction("max=", _wrap(x))


def reduce_min(x) -> _Reduction:
    """``Y[i] = reduce_min(X[i, j])`` is ``Y[i] min= X[i, j]``."""
    return _Reduction("min=", _wrap(x))


def trace(fn, consts: dict):
    """Runs fn on symbolic tensors; returns (source, inputs, output names)."""
    sig = inspect.signature(fn)
    inputs, kwonly = [], {}
    for p in sig.parameters.values():
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            inputs.append(p.name)
        elif p.kind == p.KEYWORD_ONLY:
            if p.name not in consts:
                raise TypeError(f"constant {p.name} of {fn.__name__} needs a value: @neoflow.op({p.name}=...)")
            kwonly[p.name] = Expr(p.name, isinstance(consts[p.name], float))
        else:
            raise TypeError(f"{fn.__name__}: *args and **kwargs are not allowed in an op")
    extra = set(consts) - set(kwonly)
    if extra:
        raise TypeError(f"{fn.__name__} has no keyword-only parameter for constant(s) {', '.join(sorted(extra))}")
    _trace.append([])
    try:
        result = fn(*[Tensor(n) for n in inputs], **kwonly)
    finally:
        stmts = _trace.pop()
    if not stmts:
        raise ValueError(f"{fn.__name__} wrote no statements")
    if result is None:
        returned = None
    else:
        seq = result if isinstance(result, (tuple, list)) else (result,)
        if not all(isinstance(t, Tensor) for t in seq):
            raise TypeError(f"{fn.__name__} must return the output tensor(s) it wrote")
        returned = [t.name for t in seq]
    return "\n".join(stmts), inputs, returned
