"""ATen to neoflow statements: the lowering behind ``backend="neoflow"``.

Each FX node of a supported core ATen operator becomes one statement over
index variables of its own, named by the node's position (``i3_0``, ``i3_1``
for node 3's output dimensions, ``r3_0`` for a dimension it reduces), every
one given in ``sizes`` so that shapes never have to be inferred:

    add(x, bias)        T3[i3_0, i3_1] = P0[i3_0, i3_1] + P1[0, i3_1]
    mm(a, b)            T4[i4_0, i4_1] += P0[i4_0, r4_0] * P2[r4_0, i4_1]
    sum(x, [1])         T5[i5_0] += T3[i5_0, r5_0]
    permute(x, [1, 0])  T6[i6_0, i6_1] = T5[i6_1, i6_0]
    view(x, [8])        T7[i7_0] = P0[(i7_0 / 4) % 2, i7_0 % 4]

Broadcast dimensions read index 0; a view reads its input through the
row-major position, as ``reshape`` defines it whatever the strides. A
0-dimensional tensor is passed as a tensor of one element.
``aten_support.unsupported`` says why a node cannot be lowered (it then runs in eager PyTorch); the
fusion passes later merge the statements of one subgraph into few loop
nests.
"""

from __future__ import annotations

import functools
import math
import operator

import torch

from .. import dsl
from . import convlowering, indexlowering, inlining, layout, shapes, sizevalues
from .aten_support import (
    BINARY,
    COMPARE,
    CONSTANTS,
    REDUCE,
    UNARY,
    num,
    pad_value,
    shape_of,
    val_of,
)

aten = torch.ops.aten


class Lowering:
    """Statements for the nodes of one subgraph (a GraphModule of supported
    nodes): ``source``, ``inputs`` (the placeholders' tensor names, in
    order), ``outputs`` (the names returned, in the output's order) and
    ``sizes`` (every index variable)."""

    def __init__(self, gm: torch.fx.GraphModule, strided=None):
        self.names: dict = {}  # node -> tensor name, or a tuple of names for a multi-output node
        self.views: dict = {}  # view node -> its index map (index expressions -> a read of the viewed tensor)
        self.shapes: dict = {}  # tensor name -> shape (a 0-d tensor as (1,))
        self.lines: list[str] = []
        self.sizes: dict[str, int] = {}
        self.inputs: list[str] = []
        self.read: set[str] = set()  # the tensors some statement reads
        self.outputs: list[str] = []
        self.out_shapes: list[tuple] = []  # the outputs' true shapes (0-d ones as ())
        self.out_strides: list[tuple] = []  # the strides eager gives them
        # the outputs eager lays out densely in another order than row-major (channels-last ones): the op
        # stores them in that order, as buffers of their dimensions in decreasing stride (physical_order)
        self.out_physical: list[int] = []
        self.out_dtypes: list[torch.dtype] = []
        self.in_shapes: list[tuple] = []
        self.scattered: dict[str, tuple] = {}  # tensors written through index tensors -> their shapes
        self.env = shapes.shape_env(gm)  # of a graph with symbolic shapes, else None
        self.size_nodes: dict = {}  # nodes whose value is a symbolic size -> its sympy expression
        self.counts: dict = {}  # symbolic sizes counted by statements (sizevalues) -> the count's tensor
        # strided: placeholder position -> the strides its tensor comes with (other than row-major: an
        # unfold's overlapping windows, a permutation). The op takes the memory such a view spans as a flat
        # tensor and reads it at the strides' offsets, so that the view is never copied to be contiguous
        strided = strided or {}
        self.order: dict[str, list] = {}  # tensor name -> its dimensions in memory order, where not row-major
        # rank -> the order tensors T<k> of that rank are stored in (layout.preferred); none where user ops
        # are inlined (their statements read the tensors they are given as written)
        inlined = any(inlining.op_of(n) is not None for n in gm.graph.nodes if n.op == "call_function")
        self.prefer = {} if inlined else layout.preferred(gm, strided)
        for k, node in enumerate(gm.graph.nodes):
            if node.op == "placeholder" and sizevalues.is_size(node):  # a size the graph computed, passed as a number
                self.inputs.append(f"P{len(self.inputs)}")
                self.in_shapes.append(())
                self.size_nodes[node] = val_of(node).node.expr
            elif node.op == "placeholder":
                name = f"P{len(self.inputs)}"
                if len(self.inputs) in strided:
                    self._strided(node, name, strided[len(self.inputs)])
                self.inputs.append(name)
                self.in_shapes.append(shape_of(node))
                self.bind(node, name, shape_of(node))
            elif node.op == "call_function":
                with sizevalues.named(node):
                    self._lower(k, node)
            elif node.op == "output":
                outs = node.args[0]
                outs = outs if isinstance(outs, (tuple, list)) else [outs]
                for j, o in enumerate(outs):
                    if not isinstance(val_of(o), torch.Tensor):
                        raise ValueError(f"{o} returns a number, not a tensor")
                    shape, stride = shape_of(o), tuple(val_of(o).stride())
                    want = layout.physical_order(shape, stride)  # None: row-major
                    if want is not None:
                        self.out_physical.append(j)
                    name = None if o.op == "placeholder" and o in self.views else self.names[o]
                    if name is not None and self.order.get(name) == want:
                        self.outputs.append(name)
                    else:  # stored in the order of eager's layout (a strided input returned: row-major)
                        self.outputs.append(self._store(f"O{k}_{j}", o, want or range(len(shape)), k, j))
                    self.out_shapes.append(shape)
                    self.out_strides.append(stride)
                    self.out_dtypes.append(val_of(o).dtype)
        self.source = "\n".join(self.lines)
        # placeholders only a shape was taken from (full_like) are not the op's inputs
        self.used = [k for k, name in enumerate(self.inputs) if name in self.read]
        self.inputs = [self.inputs[k] for k in self.used]

    def shape_of(self, node) -> tuple:
        return shape_of(node)

    def _store(self, name: str, node, order, k: int, j: int) -> str:
        """Stores node into a new tensor name whose dimensions are node's in this order; returns name."""
        shape = shape_of(node)
        phys = self.index_vars(k, [shape[d] for d in order], prefix=f"o{j}_")
        idx = [None] * len(shape)
        for p, d in zip(phys, order):
            idx[d] = p
        self.emit(name, phys, "=", self.at(node, idx))
        return name

    def _strided(self, node, name: str, strides: tuple) -> None:
        """Reads placeholder node, which comes with these strides, as the tensor of its dimensions in memory
        order where its layout is dense (channels-last), else as the flat memory they span."""
        shape = shape_of(node)
        order = layout.physical_order(shape, strides)
        if order is not None:
            self.order[name] = order
            return

        def read(parts, name=name, shape=shape, strides=strides):
            self.read.add(name)
            terms = [p if st == 1 else p * st for p, n, st in zip(parts, shape, strides) if n > 1 and st]
            return _element(name, [_sum(terms)])

        self.views[node] = read

    def bind(self, node, name: str, shape: tuple) -> None:
        self.names[node] = name
        self.shapes[name] = tuple(shape) or (1,)

    def index_vars(self, k: int, shape: tuple, prefix: str = "i") -> list[dsl.Expr]:
        """New index variables, one per dimension of shape (a 0-d shape as (1,)), named for node k and
        prefix, their extents in ``sizes``."""
        shape = tuple(shape) or (1,)
        out = []
        for d, n in enumerate(shape):
            v = f"{prefix}{k}_{d}"
            self.sizes[v] = n
            out.append(dsl.Expr(v))
        return out

    def emit(self, name: str, idx: list, op: str, rhs) -> None:
        """Appends the statement name[idx] op rhs (rhs an expression: neoflow.dsl); a node's tensor T<k>
        of a rank with a preferred order is stored in that order (its dimensions permuted)."""
        order = self.order.get(name)
        if order is None and name.startswith("T") and len(idx) in self.prefer:
            order = self.order[name] = self.prefer[len(idx)]
        if order is not None:
            idx = [idx[d] for d in order]
        self.lines.append(dsl.statement(_element(name, idx), op, rhs))

    def at(self, node, parts: list) -> dsl.Expr:
        """node's element at index expressions parts (none for a 0-d tensor):
        a read of its tensor, or, for a view, of the viewed tensor through the
        view's index map."""
        view = self.views.get(node)
        if view is not None:
            return view(list(parts))
        name = self.names[node]
        self.read.add(name)
        order = self.order.get(name)
        return _element(name, parts if order is None else [parts[d] for d in order])

    def _read(self, arg, idx: list, shape: tuple) -> dsl.Expr:
        """arg (a node or a number) read at output indices idx of an output
        of this shape, broadcasting as PyTorch does."""
        if not isinstance(arg, torch.fx.Node):
            return sizevalues.number(self, arg)
        if arg in self.size_nodes:
            return sizevalues.value(self, self.size_nodes[arg])
        ash = tuple(shape_of(arg))
        off = len(shape) - len(ash)
        return self.at(arg, [0 if n == 1 else idx[d + off] for d, n in enumerate(ash)])

    def emit_node(self, k: int, node, rhs_of) -> None:
        """T<k>[its output's indices] = rhs_of(those indices, the output's shape)."""
        shape = shape_of(node)
        idx = self.index_vars(k, shape)
        self.emit(f"T{k}", idx, "=", rhs_of(idx, shape))
        self.bind(node, f"T{k}", shape)

    def _lower(self, k: int, node) -> None:
        t, a = node.target, node.args
        user_op = inlining.op_of(node)
        if sizevalues.is_size(node):  # sym_numel, a product of sizes: read where used (sizevalues)
            self.size_nodes[node] = val_of(node).node.expr
        elif user_op is not None:
            inlining.inline(self, k, node, user_op)
        elif t is operator.getitem:
            self.bind(node, self.names[a[0]][a[1]], shape_of(node))
        elif t in UNARY:
            self.emit_node(k, node, lambda i, s: UNARY[t](self._read(a[0], i, s)))
        elif t is aten._to_copy.default:
            self.emit_node(k, node, lambda i, s: self._read(a[0], i, s))
        elif t in BINARY or t in COMPARE:
            form = BINARY.get(t) or COMPARE[t]
            self.emit_node(k, node, lambda i, s: form(*(self._read(x, i, s) for x in a[:2])))
        elif t in CONSTANTS:
            value = {aten.zeros_like.default: 0.0, aten.ones_like.default: 1.0}.get(t)
            value = a[0] if t is aten.scalar_tensor.default else a[1] if value is None else value
            self.emit_node(k, node, lambda i, s: num(value))
        elif t is aten.elu.default:
            alpha, scale, in_scale = (list(a[1:]) + [1.0, 1.0, 1.0])[:3]

            def elu(i, s):
                x = self._read(a[0], i, s)
                return dsl.where(x > 0.0, num(scale) * x, num(scale * alpha) * dsl.expm1(x * num(in_scale)))

            self.emit_node(k, node, elu)
        elif t is aten.cat.default:
            self.emit_node(k, node, lambda i, s: self._cat(node, i))
        elif t in (aten.split_with_sizes.default, aten.split.Tensor):
            self._split(k, node)
        elif t in (aten._softmax.default, aten._log_softmax.default):
            self._softmax(k, node, log=t is aten._log_softmax.default)
        elif t is aten.where.self:

            def select(i, s):
                c, x, y = (self._read(v, i, s) for v in a[:3])
                return dsl.where(c != 0.0, x, y)

            self.emit_node(k, node, select)
        elif t is aten.clamp.default:
            lo, hi = (list(a[1:]) + [None, None])[:2]
            lo, hi = node.kwargs.get("min", lo), node.kwargs.get("max", hi)

            def clamp(i, s):
                x = self._read(a[0], i, s)
                x = x if lo is None else dsl.max(x, num(lo))
                return x if hi is None else dsl.min(x, num(hi))

            self.emit_node(k, node, clamp)
        elif t is aten.constant_pad_nd.default:
            self.emit_node(k, node, lambda i, s: self._pad(node, i))
        elif t in indexlowering.LOWER:
            indexlowering.LOWER[t](self, k, node)
        elif t in (aten.select_backward.default, aten.slice_backward.default):
            self.emit_node(k, node, lambda i, s: self._placed(node, i))
        elif t is aten.gelu.default:
            self.emit_node(k, node, lambda i, s: _gelu(self._read(a[0], i, s), node.kwargs.get("approximate")))
        elif t in REDUCE:
            self._reduce(k, node, *REDUCE[t])
        elif t in (aten.mm.default, aten.bmm.default, aten.addmm.default):
            self._matmul(k, node)
        elif t is aten.native_layer_norm.default:
            self._layer_norm(k, node)
        elif t is aten.var_mean.correction:
            self._var_mean(k, node)
        elif t is aten.convolution.default:
            convlowering.convolution(self, k, node)
        elif t is aten.convolution_backward.default:
            convlowering.convolution_backward(self, k, node)
        elif t is aten.unfold_backward.default:
            convlowering.unfold_backward(self, k, node)
        else:  # a view: read through its index map, stored only where the subgraph returns it
            self.views[node] = lambda parts, node=node: self._view(node, parts)
            if any(u.op == "output" for u in node.users):
                self.emit_node(k, node, lambda i, s: self._view(node, i))

    def _pad(self, node, idx: list) -> dsl.Expr:
        """constant_pad_nd's element at output indices idx: its input's, shifted by the padding before each
        padded dimension (the last ones, in pairs from the last), or the value outside it (negative
        padding crops)."""
        x, pad = node.args[0], node.args[1]
        xs = shape_of(x)
        parts, conds = list(idx), []
        for j in range(len(pad) // 2):
            d = len(xs) - 1 - j
            before, after = pad[2 * j], pad[2 * j + 1]
            if before > 0:
                parts[d] = idx[d] - before
            elif before < 0:
                parts[d] = idx[d] + (-before)
            if before > 0:
                conds.append(idx[d] >= before)
            if after > 0:
                conds.append(idx[d] < xs[d] + before)
        read = self.at(x, parts)
        if not conds:
            return read
        return dsl.where(functools.reduce(operator.and_, conds), read, num(float(pad_value(node))))

    def _placed(self, node, idx: list) -> dsl.Expr:
        """select_backward's or slice_backward's element at idx: the gradient's element where the select or
        slice took one from (zeros elsewhere)."""
        g, dim = node.args[0], node.args[2] % len(idx)
        parts = list(idx)
        if node.target is aten.select_backward.default:
            index = node.args[3] % node.args[1][dim]
            del parts[dim]
            return dsl.where(idx[dim] == index, self.at(g, parts), 0.0)
        start, step = node.args[3], node.args[5]
        n = shape_of(g)[dim]
        j = idx[dim] - start if start else idx[dim]
        conds = [idx[dim] >= start] if start else []
        conds.append(idx[dim] < start + (n - 1) * step + 1)
        if step != 1:
            conds.append(j % step == 0)
            j = j / step
        parts[dim] = j
        return dsl.where(functools.reduce(operator.and_, conds), self.at(g, parts), 0.0)

    def _reduce(self, k: int, node, op: str, mean: bool) -> None:
        x = node.args[0]
        xs = shape_of(x)
        dims = node.args[1] if len(node.args) > 1 else node.kwargs.get("dim")
        if node.target in (aten.sum.default, aten.mean.default) or not dims:
            dims = range(len(xs))
        dims = _reduced_dims(xs, dims)
        keep = (node.args[2] if len(node.args) > 2 else node.kwargs.get("keepdim", False)) if xs else True
        out = shape_of(node)
        idx = self.index_vars(k, out)
        red = self.index_vars(k, [xs[d] for d in dims], prefix="r")
        read = self._reduced_read(x, dims, keep, idx, red)
        name = f"T{k}"
        if not mean:
            self.emit(name, idx, op, read)
        else:
            self.emit(f"S{k}", idx, op, read)
            j = self.index_vars(k, out, prefix="j")
            count = math.prod(xs[d] for d in dims)
            scale = num(1.0 / count) if isinstance(count, int) else 1.0 / sizevalues.number(self, count)
            self.emit(name, j, "=", _element(f"S{k}", j) * scale)
        self.bind(node, name, out)

    def _reduced_read(self, x, dims: list, keep: bool, idx: list, red: list) -> dsl.Expr:
        """x's element that a reduction over dims reads at output indices idx (which hold the reduced
        dimensions too, as size 1, when keep) and reduction indices red."""
        rd, parts, o = dict(zip(dims, red)), [], 0
        for d in range(len(shape_of(x))):
            parts.append(rd[d] if d in rd else idx[o])
            o += 1 if d not in rd or keep else 0
        return self.at(x, parts)

    def _var_mean(self, k: int, node) -> None:
        """var_mean(x, dims, correction=, keepdim=): the mean, then the sum of squared deviations from it
        over count - correction (the two-pass form, as eager's batch norm computes it)."""
        x = node.args[0]
        xs = shape_of(x)
        dims = node.args[1] if len(node.args) > 1 else node.kwargs.get("dim")
        dims = _reduced_dims(xs, range(len(xs)) if dims is None else dims)
        keep = node.kwargs.get("keepdim", False) if xs else True
        corr = node.kwargs.get("correction")
        corr = 1 if corr is None else corr
        out = tuple(val_of(node)[0].shape)
        count = math.prod(xs[d] for d in dims)

        def read(idx, red):
            return self._reduced_read(x, dims, keep, idx, red)

        a, ra = self.index_vars(k, out, prefix="a"), self.index_vars(k, [xs[d] for d in dims], prefix="b")
        self.emit(f"S{k}", a, "+=", read(a, ra))
        c = self.index_vars(k, out, prefix="c")
        self.emit(f"Mu{k}", c, "=", _element(f"S{k}", c) / sizevalues.number(self, count))
        d, rd = self.index_vars(k, out, prefix="d"), self.index_vars(k, [xs[d] for d in dims], prefix="e")
        dev = read(d, rd) - _element(f"Mu{k}", d)
        self.emit(f"Q{k}", d, "+=", dev * dev)
        f = self.index_vars(k, out, prefix="f")
        denom = num(float(max(count - corr, 0))) if isinstance(count, int) else sizevalues.number(self, count - corr)
        self.emit(f"V{k}", f, "=", _element(f"Q{k}", f) / denom)
        for name in (f"V{k}", f"Mu{k}"):
            self.shapes[name] = out or (1,)
        self.names[node] = (f"V{k}", f"Mu{k}")

    def _cat(self, node, idx: list) -> dsl.Expr:
        # empty parts add nothing (nor do 1-d empty tensors of any rank: PyTorch's legacy cat skips them)
        parts = [p for p in node.args[0] if 0 not in shape_of(p)]
        out = shape_of(node)
        dim = (node.args[1] if len(node.args) > 1 else node.kwargs.get("dim", 0)) % len(out)
        i = idx[dim]
        expr, starts, off = None, [], 0
        for p in parts:
            starts.append(off)
            off += shape_of(p)[dim]
        for p, start in reversed(list(zip(parts, starts))):
            shifted = list(idx)
            shifted[dim] = i - start if start else i
            read = self.at(p, shifted)
            expr = read if expr is None else dsl.where(i < start + shape_of(p)[dim], read, expr)
        return expr

    def _split(self, k: int, node) -> None:
        x = node.args[0]
        xs = shape_of(x)
        dim = (node.args[2] if len(node.args) > 2 else node.kwargs.get("dim", 0)) % len(xs)
        names, off = [], 0
        for j, v in enumerate(val_of(node)):
            out = tuple(v.shape)
            idx = self.index_vars(k, out, prefix=f"s{j}_")
            read = list(idx)
            read[dim] = idx[dim] + off if off else idx[dim]
            name = f"T{k}_{j}"
            self.emit(name, idx, "=", self.at(x, read))
            self.shapes[name] = out
            names.append(name)
            off += out[dim]
        self.names[node] = tuple(names)

    def _softmax(self, k: int, node, log: bool) -> None:
        x = node.args[0]
        xs = shape_of(x) or (1,)
        dim = node.args[1] % len(xs)
        stat = tuple(1 if d == dim else n for d, n in enumerate(xs))
        scalar = not shape_of(x)

        def X(v):  # x's element at v
            return self.at(x, [] if scalar else v)

        def along(v, r):
            return [r if d == dim else v[d] for d in range(len(xs))]

        m, mr = self.index_vars(k, stat, prefix="a"), self.index_vars(k, [xs[dim]], prefix="b")[0]
        self.emit(f"M{k}", m, "max=", X(along(m, mr)))
        e, er = self.index_vars(k, stat, prefix="c"), self.index_vars(k, [xs[dim]], prefix="d")[0]
        self.emit(f"S{k}", e, "+=", dsl.exp(X(along(e, er)) - _element(f"M{k}", e)))
        o = self.index_vars(k, xs, prefix="g")
        mx, sm = _element(f"M{k}", along(o, 0)), _element(f"S{k}", along(o, 0))
        if log:
            self.emit(f"T{k}", o, "=", X(o) - mx - dsl.log(sm))
        else:
            self.emit(f"T{k}", o, "=", dsl.exp(X(o) - mx) / sm)
        self.bind(node, f"T{k}", shape_of(node))

    def _matmul(self, k: int, node) -> None:
        t = node.target
        a, b = (node.args[1], node.args[2]) if t is aten.addmm.default else (node.args[0], node.args[1])
        out = shape_of(node)
        idx = self.index_vars(k, out)
        (r,) = self.index_vars(k, [shape_of(a)[-1]], prefix="r")
        lead = idx[:-2]
        prod = self.at(a, lead + [idx[-2], r]) * self.at(b, lead + [r, idx[-1]])
        if t is not aten.addmm.default:
            self.emit(f"T{k}", idx, "+=", prod)
            self.bind(node, f"T{k}", out)
            return
        self.emit(f"M{k}", idx, "+=", prod)
        j = self.index_vars(k, out, prefix="j")
        self.emit(f"T{k}", j, "=", self._read(node.args[0], j, out) + _element(f"M{k}", j))
        self.bind(node, f"T{k}", out)

    def _layer_norm(self, k: int, node) -> None:
        x, normalized, w, b, eps = node.args
        xs = shape_of(x)
        m = len(xs) - len(normalized)
        count = math.prod(xs[m:])
        stat = tuple(xs[:m]) + (1,) * len(normalized)

        def X(v):
            return self.at(x, v)

        def vars_(prefix, shape):
            return self.index_vars(k, shape, prefix=prefix)

        s1, r1 = vars_("a", stat), vars_("b", xs[m:])
        self.emit(f"S{k}", s1, "+=", X(s1[:m] + r1))
        s2 = vars_("c", stat)
        self.emit(f"Mu{k}", s2, "=", _element(f"S{k}", s2) / num(count))
        s3, r3 = vars_("d", stat), vars_("e", xs[m:])
        dev = X(s3[:m] + r3) - _element(f"Mu{k}", s3)
        self.emit(f"V{k}", s3, "+=", dev * dev)
        s4 = vars_("f", stat)
        self.emit(f"R{k}", s4, "=", dsl.rsqrt(_element(f"V{k}", s4) / num(count) + num(eps)))
        o = vars_("g", xs)
        st = o[:m] + [0] * len(normalized)
        y = (X(o) - _element(f"Mu{k}", st)) * _element(f"R{k}", st)
        if w is not None:
            y = y * self.at(w, o[m:])
        if b is not None:
            y = y + self.at(b, o[m:])
        self.emit(f"Y{k}", o, "=", y)
        for name, shape in ((f"Y{k}", xs), (f"Mu{k}", stat), (f"R{k}", stat)):
            self.shapes[name] = shape
        self.names[node] = (f"Y{k}", f"Mu{k}", f"R{k}")

    def _view(self, node, idx: list) -> dsl.Expr:
        """The read of view node's input at the view's index expressions idx."""
        t, x = node.target, node.args[0]
        xs, out = shape_of(x), shape_of(node)
        if not out:
            idx = []  # a 0-d view: no index
        if t is aten.permute.default or t is aten.t.default or t is aten.transpose.int:
            n = len(xs)
            if t is aten.t.default:
                perm = list(range(n))[::-1]
            elif t is aten.transpose.int:
                perm = list(range(n))
                d0, d1 = node.args[1] % n, node.args[2] % n
                perm[d0], perm[d1] = perm[d1], perm[d0]
            else:
                perm = [d % n for d in node.args[1]]
            parts = [None] * n
            for d, p in enumerate(perm):
                parts[p] = idx[d]
            return self.at(x, parts)
        if t is aten.expand.default:
            return self._read(x, idx, out)
        if t is aten.select.int:
            dim = node.args[1] % len(xs)
            return self.at(x, list(idx[:dim]) + [node.args[2] % xs[dim]] + list(idx[dim:]))
        if t is aten.slice.Tensor:
            dim = (node.args[1] if len(node.args) > 1 else 0) % len(xs)
            start = node.args[2] if len(node.args) > 2 and node.args[2] is not None else 0
            start = max(0, min(start + xs[dim] if start < 0 else start, xs[dim]))
            step = node.args[4] if len(node.args) > 4 else 1
            parts = list(idx)
            term = idx[dim] if step == 1 else idx[dim] * step
            parts[dim] = term + start if start else term
            return self.at(x, parts)
        return self.at(x, _reshape_parts(xs, out, idx))


def _reduced_dims(xs: tuple, dims) -> list:
    """A reduction's dimensions (an int or several, negative from the end) of a tensor of shape xs, sorted."""
    return sorted({d % len(xs) for d in ([dims] if isinstance(dims, int) else dims)}) if xs else []


def _element(name: str, parts: list) -> dsl.Expr:
    """The element of tensor name at index expressions parts (none: a 0-d tensor, held as one element)."""
    return dsl.Tensor(name)[tuple(parts) or (0,)]


def _sum(terms: list):
    """The sum of the terms, in order; 0 for none."""
    return functools.reduce(operator.add, terms) if terms else 0


def _reshape_parts(xs: tuple, out: tuple, idx: list) -> list:
    """The indices into shape xs of the row-major position of idx in shape out.

    The dimensions (those not of size 1) pair off into the shortest runs of
    equal size, which reshape maps onto each other alone: [16, 60, 28, 28]
    to [16, 3, 20, 28, 28] is 16 to 16, 60 to (3, 20), 28 to 28 twice. Each
    run's indices are its own row-major position, split with / and % only
    where a run merges or splits dimensions, so a channel shuffle reads
    X[n, (c % 3) * 20 + c / 3, h, w] and its lane loop stays contiguous
    (through one linear position, the whole index was divisions that GCC
    could not vectorize)."""
    if not xs:
        return []
    kx = [d for d, n in enumerate(xs) if n != 1]
    ko = [d for d, n in enumerate(out) if n != 1]
    parts = [0] * len(xs)
    a = b = 0
    while a < len(kx):
        gx, gy = [kx[a]], [ko[b]]
        px, py = xs[kx[a]], out[ko[b]]
        a, b = a + 1, b + 1
        while px != py:
            if px < py:
                gx.append(kx[a])
                px *= xs[kx[a]]
                a += 1
            else:
                gy.append(ko[b])
                py *= out[ko[b]]
                b += 1
        terms, stride = [], 1
        for d in reversed(gy):
            terms.append(idx[d] if stride == 1 else idx[d] * stride)
            stride *= out[d]
        lin = _sum(list(reversed(terms)))
        stride = 1
        for k, d in enumerate(reversed(gx)):  # innermost first
            q = lin if stride == 1 else lin // stride
            parts[d] = q if k == len(gx) - 1 else q % xs[d]  # the outermost needs no %: q < xs[d]
            stride *= xs[d]
    return parts


def _gelu(x: dsl.Expr, approximate) -> dsl.Expr:
    if approximate == "tanh":
        return 0.5 * x * (1.0 + dsl.tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))
    return 0.5 * x * (1.0 + dsl.erf(x * 0.7071067811865476))
