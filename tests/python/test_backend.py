"""torch.compile(model, backend="neoflow"): lowered graphs against eager,
forward and backward, the fallback and its report."""

import importlib.metadata
import logging
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import neoflow  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from backend_models import (  # noqa: E402
    MLP,
    TOL,
    Block,
    ConvNet,
    check_training,
    check_value_and_grad,
    fresh_dynamo,  # noqa: F401 - a fixture, used through pytestmark
    record_subgraphs,
)
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from workloads import train  # noqa: E402

pytestmark = pytest.mark.usefixtures("fresh_dynamo")  # Dynamo's caches and the reports emptied around each test


def test_mlp_with_gelu_and_layer_norm_is_lowered_whole():
    torch.manual_seed(0)
    reps = check_training(MLP(), torch.randn(4, 16), contractions="neoflow")
    assert [r["graph"] for r in reps] == ["forward", "backward"]
    for r in reps:
        assert r["lowered"] + r["eager_views"] == r["nodes"] > 0 and r["subgraphs"] == 1 and r["fallback"] == {}


def test_contractions_run_in_pytorch_by_default():
    torch.manual_seed(0)
    fw, bw = check_training(MLP(), torch.randn(4, 16))
    assert fw["fallback"] == {
        "aten.addmm.default": "a contraction, left to PyTorch's BLAS and oneDNN (contractions='eager')"
    }
    assert 0 < fw["lowered"] < fw["nodes"] and set(bw["fallback"]) == {"aten.mm.default"}
    with pytest.raises(ValueError, match="contractions='blas'"):
        neoflow.compile(MLP(), contractions="blas")


def test_options_through_torch_compile():
    torch.manual_seed(0)
    x = torch.randn(4, 16)
    m = MLP()
    y = torch.compile(m, backend="neoflow", options={"contractions": "neoflow", "measure": False})(x)
    torch.testing.assert_close(y, m(x), **TOL)
    assert neoflow.compile_report()[0]["fallback"] == {}  # the products were lowered too
    with pytest.raises(Exception, match="unknown options \\['fast'\\]"):
        torch.compile(MLP(), backend="neoflow", options={"fast": True})(x)
    with pytest.raises(Exception, match="has no mode 'max-autotune'"):
        torch.compile(MLP(), backend="neoflow", mode="max-autotune")(x)


def test_transformer_block_lowers_all_but_the_attention():
    torch.manual_seed(0)
    reps = check_training(Block(), torch.randn(2, 5, 32), contractions="neoflow")
    fw, bw = reps
    assert fw["lowered"] > fw["nodes"] // 2 and bw["lowered"] > bw["nodes"] // 2
    assert "aten._scaled_dot_product_flash_attention_for_cpu.default" in fw["fallback"]


def test_conv_net_falls_back_where_it_must():
    torch.manual_seed(0)
    fw, bw = check_training(ConvNet(), torch.randn(2, 3, 8, 8), contractions="neoflow")
    assert fw["fallback"]["aten.max_pool2d_with_indices.default"] == "no lowering for this operator"
    assert "aten.convolution.default" not in fw["fallback"]
    assert fw["lowered"] > 0 and bw["lowered"] > 0


def _workload_twins(name, use_torch, **opts):
    """One training step of a workload under the backend against its eager twin (same seed): the loss and
    every parameter's gradient; returns the compile reports."""
    eager, loss_eager, _, _ = train.build(name, use_torch=use_torch, seed=0)
    model, loss, _, _ = train.build(name, use_torch=use_torch, seed=0)
    a = neoflow.compile(loss, **opts)()
    a.backward()
    b = loss_eager()
    b.backward()
    torch.testing.assert_close(a, b, **TOL)
    for (pname, p), q in zip(eager.named_parameters(), model.parameters()):
        torch.testing.assert_close(q.grad, p.grad, rtol=1e-3, atol=1e-5, msg=lambda m, n=pname: f"{n}: {m}")
    return neoflow.compile_report()


@pytest.mark.parametrize("contractions", ["eager", "neoflow"])
@pytest.mark.parametrize("name", list(train.WORKLOADS))
def test_workload_baselines_train_as_in_eager(name, contractions):
    reps = _workload_twins(name, use_torch=True, contractions=contractions)
    assert {r["graph"] for r in reps} == {"forward", "backward"}
    assert all(0 < r["lowered"] <= r["nodes"] for r in reps)


def test_neoflow_op_in_a_model_is_inlined_as_statements():
    """The op's forward and gradient custom ops become statements of the subgraphs around them: a transposed
    input (a view, stored first), a scaling and a sum fuse with them."""
    torch.manual_seed(0)
    op = neoflow.op("H[b, j] = tanh(X[b, j]) * W[j]; G[b, j] = H[b, j] * H[b, j]", outputs=["G"])
    w = torch.randn(4, requires_grad=True)

    def f(x):
        return op(x.t() * 2.0, w).sum(1)

    x = torch.randn(4, 3, requires_grad=True)
    y = neoflow.compile(f)(x)
    grads = torch.autograd.grad(y.sum(), [x, w])
    y0 = f(x)
    grads0 = torch.autograd.grad(y0.sum(), [x, w])
    torch.testing.assert_close(y, y0, **TOL)
    for g, g0 in zip(grads, grads0):
        torch.testing.assert_close(g, g0, **TOL)
    fw, bw = neoflow.compile_report()
    for r in (fw, bw):
        assert r["fallback"] == {} and r["subgraphs"] == 1 and r["lowered"] + r["eager_views"] == r["nodes"], r


@pytest.mark.parametrize("name", list(train.WORKLOADS))
def test_neoflow_workloads_train_with_their_ops_inlined(name):
    for r in _workload_twins(name, use_torch=False):
        left = [k for k, why in r["fallback"].items() if k.startswith("neoflow.") or "not lowered" in why]
        assert all("constants only" in r["fallback"][k] for k in left), r["fallback"]


def test_only_unsupported_operators_run_exactly_as_eager():
    torch.manual_seed(0)
    w = torch.randn(3, 4, 3, 3, requires_grad=True)
    x = torch.randn(2, 3, 8, 8)

    def f(x, w):
        return torch.nn.functional.conv_transpose2d(x, w)

    y = neoflow.compile(f, contractions="neoflow")(x, w)
    (g,) = torch.autograd.grad(y.sum(), w)
    y0 = f(x, w)
    (g0,) = torch.autograd.grad(y0.sum(), w)
    assert torch.equal(y, y0) and torch.equal(g, g0)
    fw = neoflow.compile_report()[0]
    assert fw["lowered"] == 0 and fw["subgraphs"] == 0
    assert fw["fallback"]["aten.convolution.default"] == "a transposed convolution"


def test_explain_prints_what_was_lowered_and_what_fell_back(capfd):
    def f(x):
        return torch.tanh(torch.nn.functional.max_pool2d(x, 2)) * 2.0

    neoflow.compile(f, explain=True)(torch.randn(1, 2, 6, 6))
    err = capfd.readouterr().err
    assert "neoflow: inference graph: 2 of 4 operator calls lowered into 1 neoflow op(s)" in err
    assert "eager: aten.max_pool2d_with_indices.default: no lowering for this operator" in err


def test_lowered_operators_match_eager():
    """Broadcasts, reductions with and without keepdim, views that regroup
    dimensions, permutes, expands, matmuls, clamps, where and the activations."""
    torch.manual_seed(0)

    def f(a, b, c, m):
        x = a * b[0] + b.sum(0, keepdim=True) - a.amax(1, keepdim=True)  # (6, 4)
        y = x.reshape(3, 8).t().reshape(2, 12)  # regrouping views
        z = torch.addmm(c, y, torch.sigmoid(y).t().contiguous())  # (2, 2)
        w = torch.bmm(x.view(2, 3, 4), x.view(2, 3, 4).transpose(1, 2)).amin(-1)
        v = torch.where(m, torch.clamp(x, -0.5, 0.5), torch.relu(x).exp())
        u = torch.nn.functional.gelu(x, approximate="tanh") + x.unsqueeze(0).expand(2, 6, 4).sum(0)
        return z.sum() + w.sum() + (v * u).sum(1).mean() + torch.rsqrt(x.abs() + 1).sum()

    args = (torch.randn(6, 4), torch.randn(3, 4), torch.randn(2, 2), torch.rand(6, 4) > 0.5)
    ref = f(*args)
    got = neoflow.compile(f, contractions="neoflow")(*args)
    torch.testing.assert_close(got, ref, **TOL)
    assert neoflow.compile_report()[0]["lowered"] > 10


def test_lowered_softmax_cat_split_slices_comparisons_and_constants():
    torch.manual_seed(0)

    def f(x, y):
        a, b = x.split([1, 3], dim=1)
        c = torch.cat([b, a * 2.0, y[:, 1:3]], dim=1)  # (5, 6)
        s = torch.softmax(c, dim=1) + torch.log_softmax(c, dim=0)
        m = (c > 0.1) & (c <= 1.5)
        t = torch.where(m, s, torch.full_like(s, -1.0)) + torch.nn.functional.elu(c, alpha=0.7)
        u = t.mean(1, keepdim=True) * t.mean() + x[2] - (1.0 - x[:, 0:1]) / 4.0
        return u + torch.ones_like(u) * (c == c.amax()).float().sum()

    check_value_and_grad(f, torch.randn(5, 4), torch.randn(5, 4))
    fw = neoflow.compile_report()[0]
    lowered = {"aten._softmax.default", "aten._log_softmax.default", "aten.cat.default", "aten.gt.Scalar"}
    assert fw["lowered"] >= 20 and not lowered & set(fw["fallback"]), fw


@pytest.mark.parametrize(
    "shape, view",
    [((2, 6, 3, 5), (2, 3, 2, 3, 5)), ((4, 6), (6, 4)), ((2, 1, 6), (3, 1, 4)), ((3, 4, 5), (60,)), ((1, 7), (7, 1))],
)
def test_reshapes_read_through_runs_of_dimensions(shape, view):
    """A reshape maps runs of dimensions of equal size onto each other; its
    reads split or merge indices within a run only (a channel shuffle reads
    X[n, (c % 3) * 2 + c / 3, h, w]), forward and backward as eager."""
    from neoflow import dsl
    from neoflow.backend.lowering import _reshape_parts

    def parts(xs, out, names):
        return [str(p) for p in _reshape_parts(xs, out, [dsl.Expr(n) for n in names])]

    assert parts((16, 60, 28, 28), (16, 3, 20, 28, 28), "abcde") == ["a", "b * 20 + c", "d", "e"]
    assert parts((16, 3, 20, 28, 28), (16, 60, 28, 28), "abcd") == ["a", "b / 20", "b % 20", "c", "d"]

    def shuffle(x):
        y = (x * 2.0).reshape(view)
        return (y.transpose(0, -1).contiguous().reshape(shape) * 3.0).tanh()

    check_value_and_grad(shuffle, torch.randn(shape))
    for rep in neoflow.compile_report():
        assert rep["lowered"] > 0 and not [k for k in rep["fallback"] if "view" in k or "clone" in k], rep


@pytest.mark.parametrize("shape", [(4, 3, 5, 5), (6, 3), (2, 4, 7)])
def test_batch_norm_in_training_is_lowered(shape):
    """Training batch norm (decomposed: var_mean, then the affine map) is
    lowered with its neighbours: outputs, running statistics and the input's
    gradient as eager's."""
    torch.manual_seed(0)
    c = shape[1]
    w, b = torch.randn(c), torch.randn(c)
    stats = [torch.randn(c), torch.rand(c) + 0.5]
    eager_stats = [t.clone() for t in stats]

    def f(x, rm, rv):
        return torch.nn.functional.batch_norm(x, rm, rv, w, b, training=True, momentum=0.3).relu()

    x = torch.randn(shape, requires_grad=True)
    x0 = x.detach().clone().requires_grad_()
    y, y0 = neoflow.compile(f)(x, *stats), f(x0, *eager_stats)
    torch.testing.assert_close(y, y0, **TOL)
    for s1, s0 in zip(stats, eager_stats):
        torch.testing.assert_close(s1, s0, **TOL)
    (g,), (g0,) = torch.autograd.grad((y * y0.detach()).sum(), x), torch.autograd.grad((y0 * y0.detach()).sum(), x0)
    torch.testing.assert_close(g, g0, **TOL)
    fw = neoflow.compile_report()[0]
    assert not [k for k in fw["fallback"] if "norm" in k or "var" in k], fw


def test_strided_inputs_are_read_in_place(monkeypatch):
    """A subgraph input that comes as a view with other strides (an
    unfold's overlapping windows, made in eager) is read through its strides
    from the memory it spans, by an op variant for those strides, not
    copied; the same subgraph called with a contiguous input uses its plain
    op, with the same values."""

    made = record_subgraphs(monkeypatch)

    def f(x):
        return ((x.unfold(1, 3, 1) * 2.0).tanh() * x[:, :1, None]).sum(-1)

    check_value_and_grad(f, torch.randn(4, 10))
    strided = [sub for sub in made if len(sub.variants) > 1]
    assert strided, [sub.source for sub in made]
    sub = strided[0]
    (sig,) = [k for k in sub.variants if k]
    (pos, strides), *_ = sig
    assert sub.variants[sig] is not None and strides != (3, 1)
    placeholders = sub.eager.graph.find_nodes(op="placeholder")
    k = sub.used[pos]
    args = [torch.randn(n.meta["val"].shape) for n in placeholders]
    args[k] = torch.randn(4, 10).unfold(1, 3, 1)
    assert args[k].stride() == strides
    copied = list(args)
    copied[k] = args[k].contiguous()
    want = sub.eager(*args)
    for got in (sub(*args), sub(*copied)):
        for a, b in zip(*(x if isinstance(x, tuple) else (x,) for x in (want, got))):
            torch.testing.assert_close(a, b, **TOL)


def test_strided_inputs_are_copied_where_no_variant_builds(monkeypatch):
    """Where the variant for an input's strides cannot be lowered or built,
    the view is copied (Kernel.run) and the subgraph's op runs on it."""
    from neoflow import Error
    from neoflow.backend import lowering
    from neoflow.op import Op

    plain = lowering.Lowering.__init__

    def refuse(self, gm, strided=None):
        if strided:
            raise ValueError("no strided variant (test)")
        plain(self, gm)

    monkeypatch.setattr(lowering.Lowering, "__init__", refuse)

    def f(x):
        return ((x.unfold(1, 3, 1) * 2.0).tanh() * x[:, :1, None]).sum(-1)

    check_value_and_grad(f, torch.randn(4, 10))
    monkeypatch.setattr(lowering.Lowering, "__init__", plain)
    built, failed = Op.specialize, []

    def fail_strided(self, *tensors, **kw):
        if any(t.dim() == 1 and t.numel() > 30 for t in tensors):  # a strided variant's flat input
            failed.append(self.name)
            raise Error("no kernel (test)")
        return built(self, *tensors, **kw)

    torch._dynamo.reset()
    monkeypatch.setattr(Op, "specialize", fail_strided)
    x = torch.randn(4, 10)
    g = neoflow.compile(f)
    torch.testing.assert_close(g(x), f(x), **TOL)
    torch.testing.assert_close(g(x), f(x), **TOL)
    assert len(failed) == 1, failed  # built once; the second call copied the views


@pytest.mark.parametrize(
    "dim, correction, keepdim", [((0, 2), 1, False), (1, 0, True), (None, 1, False), (-1, 2, True)]
)
def test_var_mean_is_lowered(dim, correction, keepdim):
    def f(x):
        v, m = torch.var_mean(x * 1.5, dim=dim, correction=correction, keepdim=keepdim)
        return v * 2.0 + m

    check_value_and_grad(f, torch.randn(3, 5, 4))
    fw = neoflow.compile_report()[0]
    assert fw["lowered"] > 0 and "aten.var_mean.correction" not in fw["fallback"], fw


def test_a_graph_with_more_inputs_than_a_schema_takes():
    """A subgraph reading 70 tensors is one op with 70 inputs, past the 64
    arguments of a PyTorch schema: the custom op takes its inputs as one
    Tensor[] argument (test_arity.py)."""
    xs = [torch.randn(3) for _ in range(70)]

    def f(*xs):
        return sum(torch.tanh(x) for x in xs)

    torch.testing.assert_close(neoflow.compile(f)(*xs), f(*xs), **TOL)
    assert neoflow.compile_report()[0]["lowered"] == 140  # 70 tanh, 70 additions (sum starts from 0)


@pytest.mark.parametrize(
    "kw",
    [
        dict(stride=1, padding=0, dilation=1, groups=1),
        dict(stride=2, padding=1, dilation=1, groups=1),
        dict(stride=1, padding=2, dilation=2, groups=2),
        dict(stride=2, padding=1, dilation=1, groups=4),
    ],
    ids=["plain", "strided", "dilated-grouped", "depthwise"],
)
@pytest.mark.parametrize("bias", [True, False], ids=["bias", "nobias"])
def test_convolutions_and_their_gradients_are_lowered(kw, bias):
    torch.manual_seed(0)
    x = torch.randn(2, 4, 7, 6, requires_grad=True)
    w = torch.randn(8 if kw["groups"] == 4 else 6, 4 // kw["groups"], 3, 3, requires_grad=True)
    b = torch.randn(w.shape[0], requires_grad=True) if bias else None
    leaves = [x, w] + ([b] if bias else [])

    def f(x, w, b):
        return torch.nn.functional.conv2d(x, w, b, **kw).tanh()

    y = neoflow.compile(f, contractions="neoflow")(x, w, b)
    grads = torch.autograd.grad(y.square().sum(), leaves)
    y0 = f(x, w, b)
    grads0 = torch.autograd.grad(y0.square().sum(), leaves)
    torch.testing.assert_close(y, y0, rtol=1e-4, atol=1e-4)
    for g, g0 in zip(grads, grads0):
        torch.testing.assert_close(g, g0, rtol=1e-4, atol=1e-4)
    for r in neoflow.compile_report():
        assert r["lowered"] + r["eager_views"] == r["nodes"] and r["fallback"] == {}, r


def test_conv1d_gradcheck_in_float64():
    x = torch.randn(2, 3, 9, dtype=torch.float64, requires_grad=True)
    w = torch.randn(5, 3, 2, dtype=torch.float64, requires_grad=True)

    def f(x, w):
        return torch.nn.functional.conv1d(x, w, stride=2, padding=1)

    assert torch.autograd.gradcheck(neoflow.compile(f, contractions="neoflow"), (x, w))


def test_a_subgraph_neoflow_refuses_runs_in_eager(monkeypatch, caplog):
    """A lowering the Go core refuses (here: a statement made unprovable on
    purpose) leaves its subgraph in eager with a warning; the graph runs."""
    from neoflow import dsl
    from neoflow.backend import lowering

    monkeypatch.setitem(lowering.UNARY, torch.ops.aten.tanh.default, lambda x: dsl.tanh(x) + dsl.Tensor("Q")[0])

    def f(x):
        return torch.tanh(x) * 2.0

    x = torch.randn(3)
    with caplog.at_level("WARNING", logger="neoflow.compile"):
        torch.testing.assert_close(neoflow.compile(f)(x), f(x))
    fw = neoflow.compile_report()[0]
    assert fw["lowered"] == 0 and any(k.startswith("a subgraph of 2") for k in fw["fallback"]), fw
    assert "runs in eager" in caplog.text


def test_subgraphs_are_forward_only_and_launch_their_kernels_directly(monkeypatch):
    """AOT Autograd traced the backward, so a subgraph's op keeps no
    temporaries for a gradient of its own, and a call launches the kernel
    of its shapes without the op's user-facing call (autocast, autograd and
    argument checks that the graph is past)."""
    from neoflow.op import Op

    made = record_subgraphs(monkeypatch)
    torch.manual_seed(0)
    model, x = MLP(), torch.randn(4, 16)
    f = neoflow.compile(model)
    f(x).sum().backward()
    assert len(made) >= 2
    for sub in made:
        assert sub.op._definition.forward_only is True and len(sub.kernels) == 1
    want = model(x)
    monkeypatch.setattr(Op, "__call__", lambda *a, **k: pytest.fail("a subgraph called its op"))
    torch.testing.assert_close(f(x), want, **TOL)


def test_float64_gradients_through_the_backend():
    torch.manual_seed(0)
    lin = torch.nn.Linear(5, 3).double()
    ln = torch.nn.LayerNorm(3).double()

    def f(x):
        return torch.tanh(ln(lin(x))) * x[:, :3]

    x = torch.randn(4, 5, dtype=torch.float64, requires_grad=True)
    # gradcheck wants the same bits from every call: with measure=True the first calls alternate between the
    # kernels and eager's operators, which round differently
    compiled = neoflow.compile(f, measure=False)
    assert torch.autograd.gradcheck(compiled, (x,))


UNARY = [torch.tanh, torch.sigmoid, torch.relu, lambda t: t * 0.5 + 1.0, lambda t: torch.exp(-t.abs())]


@settings(max_examples=12, deadline=None)
@given(
    shape=st.lists(st.integers(1, 4), min_size=1, max_size=3),
    ops=st.lists(st.tuples(st.integers(0, 4), st.integers(0, 3)), min_size=1, max_size=5),
)
def test_generated_chains_match_eager(shape, ops):
    """Random chains of elementwise functions, broadcasts against a row,
    reductions with keepdim, permutes and flattening views."""
    torch._dynamo.reset()

    def f(x, row):
        for fn, kind in ops:
            x = UNARY[fn](x)
            if kind == 1:
                x = x + row
            elif kind == 2 and x.dim() > 1:
                x = x.sum(0, keepdim=True) * x
            elif kind == 3 and x.dim() > 1:
                x = x.transpose(0, -1).reshape(-1).reshape(x.shape[::-1]).transpose(0, -1) - x
        return x

    check_value_and_grad(f, torch.randn(*shape), torch.randn(shape[-1]))


def test_logic_and_constant_padding_are_lowered():
    """and, or, xor (logical, and bitwise on bools: a hardsigmoid's gradient decomposes into a bitwise and)
    and constant_pad_nd (padding before and after, cropping, a bool mask padded) lower; the gradient flows
    through the padding."""
    import torch.nn.functional as F

    def f(x, y):
        m = (x > 0.1) & (y < 0.5)
        n = torch.logical_or(x > 0.3, y > 0.2) ^ (x < -0.5)
        z = F.pad(x * 2.0, (1, 2, 0, 1), value=-1.5).tanh()
        c = F.pad(x, (-1, 1)) * 2.0
        return torch.where(m, x, y) * 3.0 + n.float(), z, c, F.pad(m, (1, 1))

    torch.manual_seed(0)
    x, y = torch.randn(4, 5, requires_grad=True), torch.randn(4, 5)
    got, want = neoflow.compile(f, measure=False)(x, y), f(x, y)
    for a, b in zip(got, want):
        assert a.dtype == b.dtype
        torch.testing.assert_close(a, b, **TOL)
    g = torch.autograd.grad(sum(o.sum() for o in got[:3]), x)[0]
    g0 = torch.autograd.grad(sum(o.sum() for o in want[:3]), x)[0]
    torch.testing.assert_close(g, g0, **TOL)
    for r in neoflow.compile_report():
        assert not [k for k in r["fallback"] if "pad" in k or "logical" in k or "bitwise" in k], r
    fw = neoflow.compile_report()[0]
    assert fw["lowered"] + fw["eager_views"] == fw["nodes"], fw


def test_select_and_slice_gradients_are_lowered():
    """select_backward and slice_backward (a ViT's class token, strided and offset slices, a negative
    index) are gathers of the gradient, with zeros elsewhere."""

    def f(x):
        cls, rest = x[:, 0] * 2.0, (x[:, 1:7:2] ** 2).sum()
        return cls.sum() + rest + (x[1:3, :, 2:] * 3.0).tanh().sum() + x[:, -1].exp().sum()

    torch.manual_seed(0)
    check_value_and_grad(f, torch.randn(4, 9, 5))
    bw = neoflow.compile_report()[1]
    assert not [k for k in bw["fallback"] if "select" in k or "slice" in k], bw


def test_embeddings_and_gathers_are_lowered():
    """embedding and gather read through their int64 index tensors inside the subgraph (a token and a
    position embedding, added and normalized, as one op), the embedding's gradient adds the gradient's rows
    into the rows they came from (a scatter; padding_idx's row stays 0); an index out of range raises eager's own
    IndexError (the kernel's range check sends the call to the eager operators)."""
    torch.manual_seed(0)
    emb, pos, ln = torch.nn.Embedding(20, 8, padding_idx=0), torch.nn.Embedding(16, 8), torch.nn.LayerNorm(8)

    def f(ids, x):
        p = torch.arange(ids.shape[1]).expand(ids.shape[0], -1)
        return ln(emb(ids) + pos(p)) * 2.0, torch.gather(x, 1, ids[:, :3] // 4).exp()

    ids, x = torch.randint(0, 20, (2, 7)), torch.randn(2, 5, requires_grad=True)
    g = neoflow.compile(f, measure=False)
    got, want = g(ids, x), f(ids, x)
    grads = [torch.autograd.grad(sum(o.sum() for o in out), [emb.weight, x]) for out in (got, want)]
    for a, b in zip([*got, *grads[0]], [*want, *grads[1]]):
        torch.testing.assert_close(a, b, **TOL)
    fw, bw = neoflow.compile_report()
    assert not [k for k in fw["fallback"] if "embedding" in k or "gather" in k], fw
    assert "aten.embedding_dense_backward.default" not in bw["fallback"], bw  # a scatter, padding row kept 0
    with pytest.raises(IndexError, match="index out of range"):  # eager's own error
        g(torch.tensor([[25, 1, 2, 3, 4, 5, 6], [0, 1, 2, 3, 4, 5, 6]]), x)


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_cross_entropy_loss_is_lowered(weighted, reduction):
    """nll_loss's forward and backward (after log_softmax: cross entropy) lower, with class weights and
    either reduction; a target equal to ignore_index (-100) fails the launch's range check, and that call
    runs the subgraph's eager operators, with eager's values."""
    import torch.nn.functional as F

    torch.manual_seed(0)
    weight = torch.rand(5) + 0.5 if weighted else None

    def f(x, t):
        return F.cross_entropy(x * 2.0, t, weight=weight, reduction=reduction) * 3.0

    x, t = torch.randn(6, 5), torch.randint(0, 5, (6,))
    ignored = t.clone()
    ignored[1] = -100
    g = neoflow.compile(f, measure=False)
    for target in (t, ignored):
        xs = [x.clone().requires_grad_() for _ in range(2)]
        y, y0 = g(xs[0], target), f(xs[1], target)
        torch.testing.assert_close(y, y0, **TOL)
        torch.testing.assert_close(torch.autograd.grad(y, xs[0])[0], torch.autograd.grad(y0, xs[1])[0], **TOL)
    for r in neoflow.compile_report():
        assert not [k for k in r["fallback"] if "nll" in k], r


def test_hardsigmoid_gradient_is_lowered():
    """MobileNetV3's hardsigmoid: its gradient's decomposition (a bitwise and of two comparisons) lowers."""
    torch.manual_seed(0)
    check_value_and_grad(lambda x: torch.nn.functional.hardsigmoid(x * 2.0) * x, torch.randn(3, 8) * 3)
    bw = neoflow.compile_report()[1]
    assert "aten.hardsigmoid_backward.default" not in bw["fallback"], bw


def test_dynamic_shapes_are_lowered_once():
    """dynamic=True: the graph with symbolic sizes lowered once for every shape (backend/shapes.py; more in
    test_shapes.py)."""

    def f(x):
        return torch.tanh(x) + 1.0

    compiled = neoflow.compile(f, dynamic=True)
    for n in (3, 5):
        x = torch.randn(n, 4)
        torch.testing.assert_close(compiled(x), f(x))
    reps = neoflow.compile_report()
    assert len(reps) == 1 and all(r["lowered"] > 0 and not r["fallback"] for r in reps), reps


def test_mixed_float_dtypes_are_separate_subgraphs(caplog):
    """float32 work beside float64 work (a size's square root in a graph of symbolic sizes, GPT-2's attention
    scale): an op computes in one dtype, so the two are lowered as separate subgraphs, not one that fails."""

    def f(x, s):
        return torch.nn.functional.layer_norm(x, (8,)) * 2.0, torch.sqrt(2.0 / s)

    compiled = neoflow.compile(f)
    x, s = torch.randn(4, 8), torch.tensor([3.0], dtype=torch.float64)
    with caplog.at_level(logging.WARNING, logger="neoflow"):
        for got, want in zip(compiled(x, s), f(x, s)):
            torch.testing.assert_close(got, want)
    assert "failed to compile" not in caplog.text
    (rep,) = neoflow.compile_report()
    assert rep["subgraphs"] == 2 and rep["lowered"] == rep["nodes"], rep


def test_compiled_model_in_a_fresh_process(tmp_path):
    """A new process compiles and trains a step with nothing cached in memory (the kernel cache on disk is
    the test session's)."""
    script = tmp_path / "step.py"
    script.write_text(
        "import torch, neoflow\n"
        "torch.manual_seed(0)\n"
        "m = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 2))\n"
        "x = torch.randn(5, 8)\n"
        "y = neoflow.compile(m, contractions='neoflow')(x)\n"
        "y.sum().backward()\n"
        "g = m[0].weight.grad.clone()\n"
        "m.zero_grad()\n"
        "m(x).sum().backward()\n"
        "torch.testing.assert_close(g, m[0].weight.grad, rtol=1e-4, atol=1e-5)\n"
        "print([r['lowered'] + r['eager_views'] == r['nodes'] for r in neoflow.compile_report()])\n"
    )
    import subprocess

    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip().endswith("[True, True]"), proc.stdout


def test_compiled_function_from_several_threads():
    """One compiled graph called from four threads at once: each gets its own result."""
    from concurrent.futures import ThreadPoolExecutor

    def f(x):
        return torch.softmax(x * 2.0, dim=-1) + x.mean(0)

    compiled = neoflow.compile(f)
    xs = [torch.randn(6, 5) for _ in range(8)]
    compiled(xs[0])  # compiled once, before the threads
    with ThreadPoolExecutor(4) as pool:
        outs = list(pool.map(compiled, xs))
    for x, y in zip(xs, outs):
        torch.testing.assert_close(y, f(x), **TOL)


def test_bad_options_are_clear_errors():
    with pytest.raises(TypeError, match="chooses the backend"):
        neoflow.compile(torch.nn.Linear(2, 2), backend="inductor")
    from neoflow import backend

    with pytest.raises(TypeError, match="unknown options"):
        backend.backend(None, [], colour="blue")


def test_registered_as_a_dynamo_backend():
    """After pip install, backend="neoflow" is found through the entry point."""
    try:
        dist = importlib.metadata.distribution("neoflow")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("neoflow is not installed here (the wheel's tests run this)")
    eps = [e for e in dist.entry_points if e.group == "torch_dynamo_backends"]
    assert [(e.name, e.value) for e in eps] == [("neoflow", "neoflow.backend:backend")]
    y = torch.compile(lambda x: torch.tanh(x) * 3.0, backend="neoflow")(torch.ones(3))
    torch.testing.assert_close(y, torch.tanh(torch.ones(3)) * 3.0)
    assert neoflow.compile_report()[-1]["lowered"] == 2


@pytest.mark.parametrize(
    "shape, unfolds",
    [
        ((2, 3, 9), [(2, 3, 2)]),  # windows overlap
        ((2, 3, 10), [(2, 3, 3)]),  # step equals size; the tail (position 9) is in no window
        ((2, 3, 11), [(2, 2, 4)]),  # gaps between windows
        ((2, 7, 7, 3), [(1, 3, 2), (2, 3, 2)]),  # both spatial dimensions, as CapsNet's capsule convolution
        ((5,), [(0, 5, 1)]),  # one window, the whole dimension
    ],
)
def test_unfold_gradient_is_lowered(shape, unfolds):
    """unfold's gradient is gathered over the windows in neoflow (not decomposed into an index_put)."""
    w = torch.randn(shape)

    def f(x, w):
        u = x * w
        for dim, size, step in unfolds:
            u = u.unfold(dim, size, step)
        return torch.tanh(u) * 2.0

    check_value_and_grad(f, torch.randn(shape), w)
    backward = [r for r in neoflow.compile_report() if r["graph"] == "backward"]
    assert backward and "aten.unfold_backward.default" not in backward[0]["fallback"], backward
    assert not any("index_put" in k or k.startswith("a subgraph") for r in backward for k in r["fallback"]), backward


def test_unfold_gradient_gradcheck_in_float64():
    def f(x):
        return x.unfold(1, 3, 2).unfold(2, 2, 1).sin().sum((-1, -2))

    x = torch.randn(2, 7, 6, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(neoflow.compile(f, measure=False), (x,))


class _ShuffleUnit(torch.nn.Module):
    """A grouped 1x1 convolution, a depthwise 3x3 and a dense 3x3, as in ShuffleNet (and a plain CNN)."""

    def __init__(self):
        super().__init__()
        self.g = torch.nn.Conv2d(6, 9, 1, groups=3)
        self.dw = torch.nn.Conv2d(9, 9, 3, padding=1, groups=9, bias=False)
        self.dense = torch.nn.Conv2d(9, 4, 3, padding=1)

    def forward(self, x):
        return self.dense(torch.relu(self.dw(torch.relu(self.g(x)))))


def test_grouped_convolutions_are_lowered_by_default_on_the_cpu():
    """With contractions="eager", grouped 1x1 and depthwise convolutions are lowered all the same (oneDNN
    runs them slowly on NCHW tensors); the dense one stays in eager, forward and backward."""
    torch.manual_seed(0)
    fw, bw = check_training(_ShuffleUnit(), torch.randn(2, 6, 5, 5))
    for rep in (fw, bw):
        assert not any(k.startswith("a subgraph") for k in rep["fallback"]), rep
    # only the dense convolution falls back (and its backward, with the getitems of its three gradients)
    assert "aten.convolution.default" in fw["fallback"] and "aten.convolution_backward.default" in bw["fallback"]
    assert fw["lowered"] == fw["nodes"] - 1 - fw["eager_views"], fw
    assert bw["nodes"] - bw["lowered"] - bw["eager_views"] <= 4, bw
    # which ones the policy takes, on traced ATen nodes:
    from neoflow.backend import convlowering
    from torch.fx.experimental.proxy_tensor import make_fx

    unit = _ShuffleUnit()
    names = [k for k, _ in unit.named_parameters()]

    def f(x, *ws):
        return torch.func.functional_call(unit, dict(zip(names, ws)), (x,))

    traced = make_fx(f, tracing_mode="fake")(torch.randn(2, 6, 5, 5), *[p.detach() for p in unit.parameters()])
    convs = [n for n in traced.graph.nodes if n.target is torch.ops.aten.convolution.default]
    assert [convlowering.grouped_on_cpu(n) for n in convs] == [True, True, False]


def test_grouped_convolution_gradcheck_in_float64():
    torch.manual_seed(0)
    unit = _ShuffleUnit().double()
    x = torch.randn(1, 6, 4, 4, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(neoflow.compile(lambda x: unit.dw(unit.g(x))), (x,))


def test_cat_skips_its_empty_parts():
    """cat with empty parts (a cache of no past keys; PyTorch's legacy 1-d empty tensors of any rank) lowers:
    the empty parts add nothing."""
    torch.manual_seed(0)

    def f(x, y):
        past = torch.zeros(x.shape[0], 0, x.shape[2])
        legacy = torch.empty(0)
        z = torch.cat([past, torch.tanh(x), y * 2.0], dim=1)
        return torch.cat([legacy, z.reshape(-1)]) * 3.0

    check_value_and_grad(f, torch.randn(2, 3, 4), torch.randn(2, 5, 4))
    fw = neoflow.compile_report()[0]
    assert "aten.cat.default" not in fw["fallback"], fw


def test_eval_mode_batch_norm_is_lowered():
    """Batch norm in eval mode (the running statistics) lowers as its affine map, fused with its neighbours,
    in inference and in a graph that still differentiates the input."""
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.BatchNorm2d(8), torch.nn.ReLU())
    net[1].running_mean.uniform_(-1.0, 1.0)
    net[1].running_var.uniform_(0.5, 2.0)
    net.eval()
    x = torch.randn(2, 3, 8, 8)
    with torch.no_grad():
        want = net(x)
        got = neoflow.compile(net)(x)
    torch.testing.assert_close(got, want, **TOL)
    (rep,) = neoflow.compile_report()
    assert not any("batch_norm" in k for k in rep["fallback"]), rep
    torch._dynamo.reset()
    neoflow.compile_report(clear=True)
    check_value_and_grad(net, x.requires_grad_())
    assert not any("batch_norm" in k for r in neoflow.compile_report() for k in r["fallback"])
